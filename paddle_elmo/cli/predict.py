"""The LM's next word after a prefix (or, backward, the word before a suffix) and sampled continuations.

As lm_1b's `sample` mode: the forward LM predicts the next word, the backward LM the previous one.

    python run_predict.py --vocab_file vocab.txt --init_from_ckpt checkpoints/final --prefix 'the cat'
    python run_predict.py ... --prefix 'on the mat .' --direction backward --top_k 5
    python run_predict.py ... --prefix_file prefixes.txt --sample 3 --temperature 0.8 --output_json out.json

A prefix is split into tokens (--tokenizer; by default the model's, whitespace unless it records
another) and read after `<S>`: the forward LM has read `<S> w1 .. wn` and predicts the next word
(`</S>`: the sentence ends). Backward, the text is a suffix: the LM has read `</S> wn .. w1` and
predicts the word before w1 (`<S>`: the sentence starts). An empty prefix is the sentence boundary
alone. Probabilities are the full softmax's, so -log(prob) is the loss
run_eval.py counts for that word in that context. The model needs its softmax: a checkpoint of
ours, or hdf5 weights exported with it (export_weights.py without --without_softmax).
"""
import os

from paddle_elmo.cli import flags as cli
from paddle_elmo.fileio import InputError, iter_lines


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('--vocab_file', required=True, help='the vocabulary the model was trained with')
    cli.add_model_source(p, vocab_flag=False)
    cli.add_device(p)
    p.add_argument('--prefix', action='append',
                   help='text to continue (repeatable); with --direction backward, the text to precede')
    p.add_argument('--prefix_file', help='more prefixes, one per line (UTF-8; an empty line is the empty prefix)')
    cli.add_tokenizer(p)
    p.add_argument('--direction', default='forward', choices=['forward', 'backward'],
                   help='forward: the next word after the prefix; backward: the word before it')
    p.add_argument('--top_k', type=int, default=10, help='most likely words shown per prefix (0: none)')
    p.add_argument('--no_unk', action='store_true',
                   help='never predict or sample <UNK> (by default it is a word like any other: it stands for '
                   'every word outside the vocabulary, and a sampled one appears as "<UNK>" in the text)')
    p.add_argument('--sample', type=int, default=0, metavar='N', help='also sample N continuations per prefix')
    p.add_argument('--temperature', type=float, default=1.0,
                   help='sampling temperature: below 1 sharper (towards the most likely word), above 1 flatter')
    p.add_argument('--max_words', type=int, default=30,
                   help='a sample stops after this many words unless the sentence boundary comes first')
    p.add_argument('--seed', type=int, default=0, help='the same seed gives the same samples')
    p.add_argument('--output_json', help='also write {"predictions": [...], "samples": [...]} here')
    a = p.parse_args()
    if a.top_k < 0 or a.sample < 0 or not (a.top_k or a.sample):
        raise InputError(f'--top_k and --sample must be >= 0 and not both 0, got {a.top_k} and {a.sample}')
    prefixes = list(a.prefix or [])
    if a.prefix_file:
        if not os.path.isfile(a.prefix_file):
            raise FileNotFoundError(f'--prefix_file {a.prefix_file}: file not found')
        prefixes += [text.rstrip('\r\n') for _, _, text in iter_lines(a.prefix_file)]
    if not prefixes:
        raise InputError('no prefix: give --prefix TEXT (repeatable) or --prefix_file FILE')
    from paddle_elmo.vocabulary import Vocabulary
    from paddle_elmo.fileio import write_json_atomic
    from paddle_elmo.lm_loading import load_language_model
    from paddle_elmo.runtime import use_device
    from paddle_elmo.predict import Predictor
    use_device(a.device, cpu_threads=a.cpu_threads)
    source = cli.model_source(a)
    vocab = Vocabulary(a.vocab_file)
    predictor = Predictor(load_language_model(vocab.size, **source), vocab, a.tokenizer)
    result = {'predictions': [], 'samples': []}
    for prefix in prefixes:
        shown = f'{prefix} ___' if a.direction == 'forward' else f'___ {prefix}'
        if a.top_k:
            top = predictor.top(prefix, a.top_k, a.direction, a.no_unk)
            result['predictions'].append({'prefix': prefix, 'direction': a.direction,
                                          'top': [{'word': w, 'prob': prob} for w, prob in top]})
            print(f'{a.direction}: {shown.strip()}')
            for word, prob in top:
                print(f'  {prob:.4f}  {word}')
        if a.sample:
            samples = predictor.sample(prefix, a.sample, a.temperature, a.max_words, a.seed, a.direction, a.no_unk)
            for i, words in enumerate(samples, 1):
                text = predictor.sample_text(prefix, words, a.direction)
                result['samples'].append({'prefix': prefix, 'direction': a.direction, 'text': text})
                print(f'sample {i}: {text}')
    if a.output_json:
        write_json_atomic(result, a.output_json)


if __name__ == '__main__':
    cli.run(main)
