"""Perplexity of a pretrained biLM on held-out data, with the full softmax.

    python run_eval.py --dev_data_path 'data/heldout/*' --vocab_file data/vocab-15w.txt \\
        --init_from_ckpt checkpoints/final
    python run_eval.py ... --options_file out/options.json --weight_file out/weights.hdf5

Reports forward and backward perplexity (exp of each direction's mean per-token loss) and their
mean as bilm-tf reports it: exp of the mean of the two losses. Every target token of the data
(each word and each sentence end) counts once; the LSTM state is carried across batches from
zeros, so the result is deterministic.
"""

import args as cli
from dataset import EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS


def main():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('--dev_data_path', required=True, help='held-out files (glob), one sentence per line')
    p.add_argument('--vocab_file', required=True, help='the vocabulary the model was trained with')
    cli.add_model_source(p, vocab_flag=False)
    cli.add_device(p)
    p.add_argument('--batch_size', type=int, default=EVAL_BATCH_SIZE, help='rows per batch (changes which targets '
                   'come first, hence the figure of a --max_tokens evaluation)')
    p.add_argument('--unroll_steps', type=int, default=EVAL_UNROLL_STEPS, help='tokens per row per batch')
    p.add_argument('--max_tokens', type=int, help='stop after this many target tokens (default: all)')
    p.add_argument('--output_json', help='also write the figures here')
    a = p.parse_args()
    from tqdm import tqdm
    from dataset import Vocabulary, count_tokens, iter_eval_batches
    from fileio import write_json_atomic
    from lm import evaluate
    from model_io import load_language_model
    from runtime import use_device
    use_device(a.device, cpu_threads=a.cpu_threads)
    source = cli.model_source(a)
    counts = count_tokens(a.dev_data_path)  # the data first: a bad glob fails before a model loads
    vocab = Vocabulary(a.vocab_file)
    model = load_language_model(vocab.size, **source)
    expected = counts['n_tokens'] + counts['n_sentences']  # every word and every sentence end
    with tqdm(total=min(expected, a.max_tokens or expected), unit='tok', desc='evaluating') as bar:
        result = evaluate(model, iter_eval_batches(a.dev_data_path, vocab, a.batch_size, a.unroll_steps),
                          a.max_tokens, bar)
    print(f'tokens: {result["n_tokens"]:,}')
    print(f'forward perplexity:  {result["forward_perplexity"]:.3f}')
    print(f'backward perplexity: {result["backward_perplexity"]:.3f}')
    print(f'perplexity (exp of the mean of the two losses, as bilm-tf): {result["perplexity"]:.3f}')
    if a.output_json:
        result['args'] = {k: v for k, v in vars(a).items() if not k.startswith('_')}
        write_json_atomic(result, a.output_json)


if __name__ == '__main__':
    cli.run(main)
