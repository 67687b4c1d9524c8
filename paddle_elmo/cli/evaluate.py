"""Perplexity of a pretrained biLM on held-out data, with the full softmax.

    python run_eval.py --dev_data_path 'data/heldout/*' --init_from_ckpt checkpoints/final  # its recorded vocabulary
    python run_eval.py --dev_data_path 'data/heldout/*' --vocab_file data/vocab-15w.txt \\
        --options_file out/options.json --weight_file out/weights.hdf5

Reports forward and backward perplexity (exp of each direction's mean per-token loss) and their
mean as bilm-tf reports it: exp of the mean of the two losses. Every target token of the data
(each word and each sentence end) counts once; the LSTM state is carried across batches from
zeros, so the result is deterministic.

Per-token perplexity depends on how the text was cut into tokens (Chinese word segmentation, a
vocabulary's <UNK>): when the whole data is evaluated, the same losses are also given in bits per
character (characters without the spaces between tokens, plus one per line break), which does
not, with the share of targets that are <UNK>.
"""
import math

from paddle_elmo.cli.arguments import (add_device, count_or_zero, file_or_stdin, file_or_stdout, parser,
                                       positive_int)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.model_flags import add_model_source, model_source, model_vocabulary
from paddle_elmo.cli.runner import results_stream, run, write_json_output
from paddle_elmo.text.batches import EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--dev_data_path', required=True, type=file_or_stdin,
                   help='held-out files (glob), one sentence per line; - reads standard input')
    add_model_source(p, bundled_default=True, vocab_help='default: the one the model records (a checkpoint\'s recipe.json, or the '
                     'vocab.txt beside its options.json)')
    add_device(p)
    p.add_argument(*option_strings('batch_size'), type=positive_int, default=EVAL_BATCH_SIZE, help='rows per batch (changes which targets '
                   'come first, hence the figure of an --eval_max_tokens evaluation)')
    p.add_argument('--unroll_steps', type=positive_int, default=EVAL_UNROLL_STEPS, help='tokens per row per batch')
    p.add_argument('--eval_max_tokens', type=count_or_zero, default=0, help='stop after this many target tokens (0: all)')
    p.add_argument('--output_json', type=file_or_stdout, help='also write the figures here; - writes them to '
                   'standard output (the lines shown then go to stderr)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    from paddle_elmo.fileio import input_path
    with input_path(a.dev_data_path) as dev_data_path:  # standard input: copied, as it is read three times
        evaluate_on(a, dev_data_path)


def evaluate_on(a, dev_data_path):
    """eval's work on the held-out files `dev_data_path` (--dev_data_path, or standard input's copy)."""
    from paddle_elmo.text.corpus import check_corpus, count_tokens
    from paddle_elmo.text.batches import iter_eval_batches, target_statistics
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.logs import progress_bar
    source = model_source(a)  # its options.json only (the weights load below): the tokenizer the data is read for
    check_corpus(dev_data_path, '--dev_data_path', source.config.tokenizer)  # a bad glob fails before a model loads
    counts = count_tokens(dev_data_path)
    vocab = Vocabulary(model_vocabulary(a, source))
    from paddle_elmo.train.lm import evaluate  # Paddle's: after the files are checked
    from paddle_elmo.train.lm_loading import load_language_model
    from paddle_elmo.runtime import use_device
    use_device(a.device, cpu_threads=a.cpu_threads)
    model = load_language_model(vocab.size, source)
    expected = counts['n_tokens'] + counts['n_sentences']  # every word and every sentence end
    with progress_bar(True, __name__, total=min(expected, a.eval_max_tokens or expected), unit='tok',
                      desc='evaluating') as bar:
        batches = iter_eval_batches(dev_data_path, vocab, a.batch_size, a.unroll_steps, model.input_mapper)
        result = evaluate(model, batches, a.eval_max_tokens, bar)
    shown_on = results_stream(a.output_json)
    print(f'tokens: {result["n_tokens"]:,}', file=shown_on)
    print(f'forward perplexity:  {result["forward_perplexity"]:.3f}', file=shown_on)
    print(f'backward perplexity: {result["backward_perplexity"]:.3f}', file=shown_on)
    print(f'perplexity (exp of the mean of the two losses, as bilm-tf): {result["perplexity"]:.3f}', file=shown_on)
    if not a.eval_max_tokens or a.eval_max_tokens >= expected:
        result.update(bits_per_character(result, target_statistics(dev_data_path, vocab)))
        print(f'bits per character: forward {result["forward_bits_per_character"]:.4f}, backward '
              f'{result["backward_bits_per_character"]:.4f}, mean {result["bits_per_character"]:.4f} '
              f'({result["n_characters"]:,} characters)', file=shown_on)
        print(f'<UNK> targets: {result["n_unknown"]:,} ({100 * result["unknown_rate"]:.2f}%)', file=shown_on)
    if a.output_json:
        result['args'] = {k: v for k, v in vars(a).items() if not k.startswith('_')}
        write_json_output(result, a.output_json, '--output_json')


def bits_per_character(result, stats):
    """evaluate()'s mean losses (nats per target) -> bits per character of the text they predict."""
    if stats['n_targets'] != result['n_tokens']:
        raise AssertionError(f'{stats["n_targets"]} targets in the text but {result["n_tokens"]} evaluated')
    per_char = result['n_tokens'] / (stats['n_characters'] * math.log(2))
    return {'n_characters': stats['n_characters'], 'n_unknown': stats['n_unknown'],
            'unknown_rate': stats['n_unknown'] / stats['n_targets'],
            'forward_bits_per_character': result['forward_loss'] * per_char,
            'backward_bits_per_character': result['backward_loss'] * per_char,
            'bits_per_character': 0.5 * (result['forward_loss'] + result['backward_loss']) * per_char}


if __name__ == '__main__':
    run(main)
