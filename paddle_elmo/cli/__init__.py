"""`paddle-elmo SUBCOMMAND [flags]` (also `python -m paddle_elmo SUBCOMMAND`): one command for every job.

Each subcommand is a module of this package with a `build_parser()` (its flags) and a
`main(argv=None)` that parses them; the PaddleNLP example's scripts at the top of a checkout
(`run_pretrain.py`, `run_eval.py`, `run_finetune.py`, `word2vec_base.py`) call the same `main()`.
Only the chosen module is imported, so `paddle-elmo --help` does not import Paddle. Every flag's
name is one of glossary.FLAGS (the table of docs/FLAGS.md: `update_flags_doc`).
"""
import importlib
import sys

# subcommand -> (module in paddle_elmo.cli, the checkout's script for it: the PaddleNLP example's four,
# None for the rest (`python -m paddle_elmo SUBCOMMAND` in a checkout), one line of help)
COMMANDS = {
    'pretrain': ('pretrain', 'run_pretrain.py', 'pretrain the biLM with sampled softmax (one device or, with '
                 '--nproc_per_node, several processes under paddle.distributed.launch)'),
    'eval': ('evaluate', 'run_eval.py', 'held-out perplexity with the full softmax'),
    'finetune': ('finetune', 'run_finetune.py', 'ELMo + bag-of-words polarity classifier, frozen or fine-tuned'),
    'word2vec': ('word2vec', 'word2vec_base.py', 'the word2vec + bag-of-words baseline'),
    'embed': ('embed', None, 'embed a text file into hdf5 (as `allennlp elmo`)'),
    'predict': ('predict', None, 'the next (or previous) word, sampled continuations'),
    'dump': ('dump', None, "the vocabulary's softmax / char-CNN embeddings, bilm-tf's token hdf5"),
    'export-weights': ('export_weights', None, 'a checkpoint to bilm-tf / AllenNLP files'),
    'export-inference': ('export_inference', None, 'a Paddle Inference program and model.onnx'),
    'build-vocab': ('build_vocab', None, 'the vocabulary of a corpus, most frequent first'),
    'demo': ('demo', None, 'pretrain a tiny model on the bundled sample corpus, then embed with it'),
}


def usage():
    from paddle_elmo import __version__
    width = max(map(len, COMMANDS))
    lines = ['usage: paddle-elmo SUBCOMMAND [flags]   (paddle-elmo SUBCOMMAND --help for its flags)',
             f'ELMo for PaddlePaddle {__version__}', '', 'subcommands:']
    lines += [f'  {name:<{width}}  {text}' for name, (_, _, text) in COMMANDS.items()]
    return '\n'.join(lines) + '\n'


def command_parsers():
    """{subcommand: its argparse parser}, from every command's build_parser() (nothing runs)."""
    return {name: importlib.import_module(f'{__name__}.{module}').build_parser()
            for name, (module, _, _) in COMMANDS.items()}


def update_flags_doc(path='docs/FLAGS.md'):
    """Rewrite the flag table of docs/FLAGS.md (between its flags markers) from glossary.FLAGS -> True
    when it changed."""
    from paddle_elmo.cli.flag_table import TABLE_END, TABLE_START, flags_markdown
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    new = text[:start] + '\n' + flags_markdown(command_parsers()) + text[end:]
    if new != text:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(new)
    return new != text


def run_command(name):
    """Run subcommand `name` on sys.argv's flags inside runner.run, the one error boundary: importing
    the command's module is inside it too, so that a package it needs and lacks (Paddle, gensim, ...)
    is a one-line error naming what installs it."""
    from paddle_elmo.cli.runner import run
    run(lambda: importlib.import_module(f'{__name__}.{COMMANDS[name][0]}').main())


def main(argv=None):
    """Runs `paddle-elmo ARGV`: the subcommand's main() with the rest of the flags. No subcommand is a
    usage error: the help on stderr, exit code 2 (as argparse does for a missing argument)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        sys.stderr.write(usage())
        sys.stderr.write('error: give a subcommand\n')
        return 2
    if argv[0] in ('-h', '--help'):
        sys.stdout.write(usage())
        return 0
    if argv[0] == '--version':
        from paddle_elmo import __version__
        print(f'paddle-elmo {__version__}')
        return 0
    if argv[0] not in COMMANDS:
        sys.stderr.write(f'error: unknown subcommand {argv[0]!r}; expected one of {", ".join(COMMANDS)} '
                         '(see paddle-elmo --help)\n')
        return 2
    sys.argv = [f'paddle-elmo {argv[0]}'] + argv[1:]  # argparse names the command in usage and errors
    run_command(argv[0])
