"""Time AllenNLP's ELMo embedder, for the table next to ours. Standalone: run it with the python of
the venv that benchmarks/setup_allennlp.sh makes; it imports nothing from this repository.

    ../allennlp-venv/bin/python benchmarks/allennlp_worker.py --options_file O --weight_file W \
        --sentences_file ../shared/data/rt-polarity/rt-polarity.pos --n_sentences 2000 --threads 2
    ../allennlp-venv/bin/python benchmarks/allennlp_worker.py --check_fixture ../shared/fixtures/allennlp-elmo

What is timed is what AllenNLP 0.9's `ElmoEmbedder.embed_sentences` did (allennlp/commands/elmo.py),
rebuilt on AllenNLP 2.10's `_ElmoBiLm` and `batch_to_ids` (the command is gone from 2.x): batches of
--batch_size sentences in file order; per batch, `batch_to_ids`, the biLM under torch.no_grad(),
<S> and </S> removed from every layer (`remove_sentence_boundaries`), the layers stacked, and each
sentence's [3, n_tokens, dim] slice moved to numpy. `_ElmoBiLm`'s LSTM is stateful (a row's final
state starts the same row of the next batch), as it was in ElmoEmbedder; --no-stateful resets the
state before every batch. One two-sentence call warms up first, then the state is reset.

Prints one JSON line on stdout (everything else goes to stderr): tokens (real tokens, <S> and </S>
not counted), sentences, seconds (wall), cpu_seconds (process CPU time), peak_rss_mb (VmHWM of
the whole process: torch, and the spacy/transformers that `import allennlp` loads, included),
model_rss_mb (RSS after loading the model, before the timed run), torch, allennlp, threads
(torch.get_num_threads() after torch.set_num_threads), stateful, batch_size.

--check_fixture DIR runs AllenNLP's own test fixture instead (see DIR/README.md): its sentences in
batches of three through one stateful biLM, top layer against the reference outputs of bilm-tf;
prints the max abs differences as one JSON line.
"""
import argparse
import contextlib
import itertools
import json
import os
import sys
import time

from process_memory import current_rss_mb, peak_rss_mb  # beside this script: standard library only

THREAD_ENV = ('OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS')
WARM_UP = [['A', 'warm-up', 'sentence', '.'], ['Another', 'one']]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--options_file')
    p.add_argument('--weight_file')
    p.add_argument('--sentences_file', help='one sentence per line, whitespace tokens')
    p.add_argument('--n_sentences', type=int, default=None, help='first N lines (default: all)')
    p.add_argument('--batch_size', type=int, default=64)
    p.add_argument('--threads', type=int, default=None, help='torch.set_num_threads (default: torch\'s own)')
    p.add_argument('--stateful', action=argparse.BooleanOptionalAction, default=True,
                   help='keep the LSTM state across batches, as ElmoEmbedder (default: on)')
    p.add_argument('--check_fixture', metavar='DIR',
                   help='instead of timing, check against the reference outputs in DIR')
    a = p.parse_args(argv)
    if a.batch_size < 1:
        p.error('--batch_size must be positive')
    if a.threads is not None and a.threads < 1:
        p.error('--threads must be positive')
    if not a.check_fixture:
        missing = [name for name in ('options_file', 'weight_file', 'sentences_file') if not getattr(a, name)]
        if missing:
            p.error('needed unless --check_fixture: ' + ', '.join('--' + m for m in missing))
    return a


def read_sentences(path, n=None):
    """First n lines (all if None) -> token lists; UTF-8, or latin-1 if the lines are not UTF-8."""
    with open(path, 'rb') as f:
        raw = list(itertools.islice(f, n))
    try:
        text = [line.decode('utf-8') for line in raw]
    except UnicodeDecodeError:
        text = [line.decode('latin-1') for line in raw]
    return [line.split() for line in text]


class Embedder:
    """ElmoEmbedder's embed_batch / embed_sentences on AllenNLP 2.10's _ElmoBiLm."""

    def __init__(self, options_file, weight_file, stateful=True):
        import torch
        from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids
        from allennlp.nn.util import remove_sentence_boundaries
        self.torch, self.batch_to_ids, self.remove_boundaries = torch, batch_to_ids, remove_sentence_boundaries
        self.bilm = _ElmoBiLm(options_file, weight_file)
        self.bilm.eval()
        self.stateful = stateful
        self.n_layers = self.bilm.num_layers
        self.dim = self.bilm.get_output_dim()

    def reset_states(self):
        self.bilm._elmo_lstm.reset_states()

    def layers(self, batch):
        """-> (activations [batch, n_layers, timesteps, dim], mask [batch, timesteps]), no <S> </S>."""
        char_ids = self.batch_to_ids(batch)
        with self.torch.no_grad():
            output = self.bilm(char_ids)
        mask = output['mask']
        stripped = [self.remove_boundaries(layer, mask) for layer in output['activations']]
        return self.torch.stack([layer for layer, _ in stripped], dim=1), stripped[0][1]

    def embed_batch(self, batch):
        """-> one numpy array [n_layers, n_tokens, dim] per sentence (empty sentences: n_tokens 0)."""
        import numpy
        empty = lambda: numpy.zeros((self.n_layers, 0, self.dim), dtype=numpy.float32)
        if not self.stateful:
            self.reset_states()
        if all(len(s) == 0 for s in batch):  # AllenNLP cannot run a batch with no token at all
            return [empty() for _ in batch]
        activations, mask = self.layers(batch)
        lengths = mask.sum(dim=1).tolist()
        return [activations[i, :, :n, :].detach().cpu().numpy() if n else empty() for i, n in enumerate(lengths)]

    def embed_sentences(self, sentences, batch_size):
        for start in range(0, len(sentences), batch_size):
            yield from self.embed_batch(sentences[start:start + batch_size])


def versions():
    import allennlp
    import torch
    return torch.__version__, allennlp.__version__


def time_embedding(a):
    sentences = read_sentences(a.sentences_file, a.n_sentences)
    import torch
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    embedder = Embedder(a.options_file, a.weight_file, stateful=a.stateful)
    embedder.embed_batch(WARM_UP)
    embedder.reset_states()
    model_mb = current_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in embedder.embed_sentences(sentences, a.batch_size):
        pass
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    torch_version, allennlp_version = versions()
    return dict(tokens=sum(len(s) for s in sentences), sentences=len(sentences), seconds=seconds,
                cpu_seconds=cpu, peak_rss_mb=peak_rss_mb(),
                model_rss_mb=model_mb, torch=torch_version, allennlp=allennlp_version,
                threads=torch.get_num_threads(), stateful=a.stateful, batch_size=a.batch_size)


def check_fixture(a):
    """The reference protocol of DIR/README.md: batch i = (sentences[0][i], sentences[1][i],
    sentences[2][i]) for i = 0..9, one stateful biLM; top layer (fwd|bwd) vs lm_embeddings_k[i].
    Also the char-CNN token representation (layer 0, one half) of vocab_test.txt against
    elmo_token_embeddings.hdf5."""
    import h5py
    import numpy
    import torch
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    d = a.check_fixture
    with open(os.path.join(d, 'sentences.json'), encoding='utf-8') as f:
        groups = json.load(f)
    embedder = Embedder(os.path.join(d, 'options.json'), os.path.join(d, 'lm_weights.hdf5'), stateful=True)
    top_diff, n_tokens, allclose, worst = 0.0, 0, True, None
    references = [h5py.File(os.path.join(d, f'lm_embeddings_{k}.hdf5'), 'r') for k in range(len(groups))]
    for i in range(len(groups[0])):
        batch = [group[i].split() for group in groups]
        for k, embedding in enumerate(embedder.embed_batch(batch)):
            expected = references[k][str(i)][...]
            expected = numpy.concatenate([expected[0], expected[1]], axis=-1)
            got = embedding[-1]
            assert got.shape == expected.shape, (i, k, got.shape, expected.shape)
            diff = float(numpy.abs(got - expected).max())
            if diff > top_diff:
                top_diff, worst = diff, dict(batch=i, row=k, value=float(expected.flat[numpy.abs(got - expected).argmax()]))
            # AllenNLP's own test of this fixture: numpy.allclose(..., atol=1e-6) (rtol 1e-5)
            allclose = allclose and bool(numpy.allclose(got, expected, atol=1e-6))
            n_tokens += got.shape[0]
    for f in references:
        f.close()
    with open(os.path.join(d, 'vocab_test.txt'), encoding='utf-8') as f:
        vocab = [line.strip() for line in f if line.strip()]
    with torch.no_grad():
        token_output = embedder.bilm._token_embedder(embedder.batch_to_ids([[w] for w in vocab]))
    got = token_output['token_embedding'][:, 1, :].numpy()  # position 0 is <S>
    with h5py.File(os.path.join(d, 'elmo_token_embeddings.hdf5'), 'r') as f:
        expected = f['embedding'][...]
    token_diff = float(numpy.abs(got - expected).max())
    torch_version, allennlp_version = versions()
    token_allclose = bool(numpy.allclose(got, expected, atol=1e-6))
    return dict(check='allennlp-elmo fixture', top_layer_max_abs_diff=top_diff, top_layer_worst=worst,
                top_layer_tokens=n_tokens, token_embedding_max_abs_diff=token_diff, vocab_tokens=len(vocab),
                allclose_atol_1e6=allclose and token_allclose, ok=allclose and token_allclose,
                torch=torch_version, allennlp=allennlp_version, threads=torch.get_num_threads())


def main(argv=None):
    a = parse_args(argv)
    if a.threads is not None:  # before torch loads: BLAS libraries read these at load time
        os.environ.update({name: str(a.threads) for name in THREAD_ENV})
    # Imports (allennlp logs, torchvision warns) and the work print to stdout only by accident;
    # keep stdout for the one JSON line.
    with contextlib.redirect_stdout(sys.stderr):
        result = check_fixture(a) if a.check_fixture else time_embedding(a)
    print(json.dumps(result), flush=True)
    return 0 if result.get('ok', True) else 1


if __name__ == '__main__':
    sys.exit(main())
