"""The LM's next word after a prefix (or, backward, the word before a suffix) and sampled continuations.

As lm_1b's `sample` mode: the forward LM predicts the next word, the backward LM the previous one.

    paddle-elmo predict --init_from_ckpt checkpoints/final --prefix 'the cat'   # the vocabulary it records
    paddle-elmo predict ... --prefix 'on the mat .' --direction backward --top_k 5
    paddle-elmo predict ... --prefix_file prefixes.txt --sample 3 --temperature 0.8 --output_json out.json

A prefix is split into tokens (--tokenizer; by default the one the model records: moses for
English text such as the bundled model's, whitespace when it records none) and read after `<S>`:
the forward LM has read `<S> w1 .. wn` and predicts the next word
(`</S>`: the sentence ends). Backward, the text is a suffix: the LM has read `</S> wn .. w1` and
predicts the word before w1 (`<S>`: the sentence starts). An empty prefix is the sentence boundary
alone. Probabilities are the full softmax's, so -log(prob) is the loss
`paddle-elmo eval` counts for that word in that context. The model needs its softmax: a checkpoint of
ours, or hdf5 weights exported with it (`paddle-elmo export-weights` without --no_softmax). The vocabulary is
--vocab_file, or the one the model records (a checkpoint's recipe.json, or the vocab.txt beside
its options.json).
"""
import logging
import os

from paddle_elmo.cli.arguments import (Switch, add_device, add_tokenizer, count_or_zero, file_or_stdin, file_or_stdout,
                                       parser, positive_float, positive_int, seed_number)
from paddle_elmo.cli.model_flags import add_model_source, model_source, model_vocabulary
from paddle_elmo.cli.runner import results_stream, run, write_json_output
from paddle_elmo.fileio import STDIN_NAME, STDIO, InputError, input_path
from paddle_elmo.text.encodings import iter_text_lines

log = logging.getLogger(__name__)


def build_parser():
    p = parser(__doc__.split('\n')[0])
    add_model_source(p, bundled_default=True, vocab_help='default: the one the model records (a checkpoint\'s recipe.json, or the '
                     'vocab.txt beside its options.json)')
    add_device(p)
    p.add_argument('--prefix', action='append',
                   help='text to continue (repeatable); with --direction backward, the text to precede')
    p.add_argument('--prefix_file', type=file_or_stdin,
                   help='more prefixes, one per line (UTF-8; else Latin-1 for moses or whitespace; an empty line is '
                   'the empty prefix); - reads standard input')
    add_tokenizer(p)
    p.add_argument('--direction', default='forward', choices=['forward', 'backward'],
                   help='forward: the next word after the prefix; backward: the word before it')
    p.add_argument('--top_k', type=count_or_zero, default=10, help='most likely words shown per prefix (0: none)')
    p.add_argument('--unk', action=Switch, default=True,
                   help='predict and sample <UNK> like any other word: it stands for every word outside the '
                   'vocabulary, and a sampled one appears as "<UNK>" in the text (off: never)')
    p.add_argument('--sample', type=count_or_zero, default=0, metavar='N', help='also sample N continuations per prefix')
    p.add_argument('--temperature', type=positive_float, default=1.0,
                   help='sampling temperature: below 1 sharper (towards the most likely word), above 1 flatter')
    p.add_argument('--sample_max_tokens', type=positive_int, default=30,
                   help='a sample stops after this many tokens unless the sentence boundary comes first')
    p.add_argument('--seed', type=seed_number, default=0, help='the same seed gives the same samples')
    p.add_argument('--output_json', type=file_or_stdout,
                   help='also write {"predictions": [...], "samples": [...]} here; - writes it to standard output '
                   '(the lines shown then go to stderr)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    if not (a.top_k or a.sample):
        raise InputError('--top_k 0 with --sample 0: nothing to show; give one of them > 0')
    if not (a.prefix or a.prefix_file):
        raise InputError('no prefix: give --prefix TEXT (repeatable) or --prefix_file FILE')
    prefixes = list(a.prefix or [])
    source = model_source(a)  # its options.json, which records the tokenizer the prefixes are read for
    if a.prefix_file:
        name = STDIN_NAME if a.prefix_file == STDIO else a.prefix_file
        with input_path(a.prefix_file) as path:
            if not os.path.isfile(path):
                raise FileNotFoundError(f'--prefix_file {name}: file not found')
            from_file = [text.rstrip('\r\n') for _, _, text in
                         iter_text_lines(path, a.tokenizer or source.config.tokenizer)]
        if not from_file:  # a blank line is the empty prefix; a file without a line holds none
            if not prefixes:
                raise InputError(f'--prefix_file {name}: an empty file; expected a prefix per line')
            log.warning('--prefix_file %s: an empty file, no prefix from it', name)
        prefixes += from_file
    from paddle_elmo.text.vocabulary import Vocabulary
    vocab = Vocabulary(model_vocabulary(a, source))
    from paddle_elmo.train.lm_loading import load_language_model  # Paddle's: after the files are checked
    from paddle_elmo.runtime import use_device
    from paddle_elmo.use.predict import Predictor
    use_device(a.device, cpu_threads=a.cpu_threads)
    predictor = Predictor(load_language_model(vocab.size, source), vocab, a.tokenizer)
    result = {'predictions': [], 'samples': []}
    shown_on = results_stream(a.output_json)
    for prefix in prefixes:
        shown = f'{prefix} ___' if a.direction == 'forward' else f'___ {prefix}'
        if a.top_k:
            top = predictor.top(prefix, a.top_k, a.direction, not a.unk)
            result['predictions'].append({'prefix': prefix, 'direction': a.direction,
                                          'top': [{'word': w, 'prob': prob} for w, prob in top]})
            print(f'{a.direction}: {shown.strip()}', file=shown_on)
            for word, prob in top:
                print(f'  {prob:.4f}  {word}', file=shown_on)
        if a.sample:
            samples = predictor.sample(prefix, a.sample, a.temperature, a.sample_max_tokens, a.seed, a.direction,
                                       not a.unk)
            for i, words in enumerate(samples, 1):
                text = predictor.sample_text(prefix, words, a.direction)
                result['samples'].append({'prefix': prefix, 'direction': a.direction, 'text': text})
                print(f'sample {i}: {text}', file=shown_on)
    if a.output_json:
        write_json_output(result, a.output_json, '--output_json')


if __name__ == '__main__':
    run(main)
