"""`ELMoEmbedder`, the Python API: sentences (raw strings or lists of tokens) in, numpy arrays
`[n_layers + 1, n_tokens, 2 * projection_dim]` out; `embed_file`, a one-sentence-per-line file
into hdf5 as AllenNLP's `allennlp elmo` command wrote it; and `token_embeddings` /
`dump_token_embeddings`, the context-free token representation of a vocabulary (bilm-tf's
`dump_token_embeddings`, for char, word and word+char models), which `ELMoEmbedder(...,
embedding_weight_file=...)` reads back so that known words skip the char CNN."""
import json
import logging
import os

import numpy as np

import paddle

from paddle_elmo.runtime import configure_if_on_cpu, inference_mode, keep_freed_memory, set_device
from paddle_elmo.token_ids import BOS_TOKEN, EOS_TOKEN, InputMapper
from paddle_elmo.tokenizers import as_token_lists, model_tokenizer
from paddle_elmo.vocabulary import read_vocabulary_file
from paddle_elmo.downstream import ScalarMix
from paddle_elmo.fileio import InputError, atomic_path, iter_lines
from paddle_elmo.hdf5_weights import HDF5_EMBEDDING
from paddle_elmo.model_io import load_bilm, model_options_file, own_vocabulary_file, resolve_model
from paddle_elmo.run_configs import read_model_config
from paddle_elmo.logs import show_progress

log = logging.getLogger(__name__)


class SentenceEmbedder:
    """What every embedder of ours does with sentences: a sentence is a list of str tokens or a raw
    string (split by the embedder's `tokenizer`, see dataset.get_tokenizer); batches, input order
    and files are handled here. A subclass (ELMoEmbedder; deploy.InferenceEmbedder, which runs an
    exported model) sets `batch_size`, `stateful` and `tokenizer` (a name of dataset.TOKENIZERS) and
    implements `_embed_token_lists(sentences)`: token lists -> list of float32
    [n_layers + 1, n_tokens, 2P], boundaries removed.
    """

    def _embed_token_lists(self, sentences):
        raise NotImplementedError

    def embed_batch(self, sentences):
        """One batch of sentences (strings or token lists) -> list of float32
        [n_layers + 1, n_tokens, 2P], boundaries removed."""
        return self._embed_token_lists(as_token_lists(sentences, self.tokenizer))

    def embed_sentence(self, sentence):
        """One sentence (a string or a list of tokens) -> float32 [n_layers + 1, n_tokens, 2P]."""
        return self.embed_batch([sentence])[0]

    def _batches(self, sentences, batch_size):
        """Index batches: in order when stateful (row state matters), else grouped by length."""
        order = np.arange(len(sentences))
        if not self.stateful:
            order = np.argsort([len(s) for s in sentences], kind='stable')
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]

    def embed_sentences(self, sentences, batch_size=None):
        """AllenNLP's `embed_sentences`: yield each sentence's float32 [n_layers + 1, n_tokens, 2P]
        in input order, one batch at a time (`sentences` may be any iterable, even a generator)."""
        batch = []
        for sentence in sentences:
            batch.append(sentence)
            if len(batch) == (batch_size or self.batch_size):
                yield from self.embed_batch(batch)
                batch = []
        if batch:
            yield from self.embed_batch(batch)

    def iter_embeddings(self, sentences, batch_size=None):
        """Yield (index, float32 [n_layers + 1, n_tokens, 2P]) batch by batch, so that a long input
        never holds all its embeddings at once. Stateless runs group sentences by length, so the
        indices do not come in input order."""
        return self._iter_token_lists(as_token_lists(sentences, self.tokenizer), batch_size)

    def _iter_token_lists(self, sentences, batch_size):
        for idx in self._batches(sentences, batch_size or self.batch_size):
            yield from zip(idx.tolist(), self._embed_token_lists([sentences[i] for i in idx]))

    def encode(self, sentences, batch_size=None):
        """List of sentences (strings or token lists) -> list of float32 [n_layers + 1, n_tokens, 2P],
        input order kept."""
        sentences = as_token_lists(sentences, self.tokenizer)
        results = [None] * len(sentences)
        for i, emb in self._iter_token_lists(sentences, batch_size):
            results[i] = emb
        return results

    def embed_file(self, input_file, output_file, output_format='all', batch_size=None, progress=True,
                   use_sentence_keys=False, forget_sentences=False):
        """Embed a one-sentence-per-line file into hdf5: see `embed_file`; -> number of lines."""
        return embed_file(self, input_file, output_file, output_format, batch_size or self.batch_size,
                          progress, use_sentence_keys=use_sentence_keys, forget_sentences=forget_sentences)



class ELMoEmbedder(SentenceEmbedder):
    """Sentences -> numpy ELMo layers. A sentence is a list of str tokens or a raw string, which is
    split by `tokenizer` (by default the model's: on whitespace, as TF-Hub ELMo's `default`
    signature, for bilm-tf files); '' is an empty sentence ([n_layers + 1, 0, 2P]).

    >>> embedder = ELMoEmbedder()  # the bundled model: paddle_elmo/pretrained/
    >>> [e.shape for e in embedder.encode([['Hello', 'world', '.'], 'Bye now'])]
    [(3, 3, 256), (3, 2, 256)]
    >>> ELMoEmbedder('options.json', 'weights.hdf5')  # AllenNLP's files, as AllenNLP's ElmoEmbedder takes them
    >>> ELMoEmbedder.from_pretrained('checkpoints')   # 'bundled', a directory or a checkpoint prefix

    options_file, weight_file: a model in the bilm-tf / AllenNLP format (positional, as in AllenNLP).
        A first argument that is not a .json file is a model name as `from_pretrained` takes it.
    params_file: a checkpoint prefix of ours ('checkpoints/10000'); or `bilm=`, an in-memory BiLM
        (e.g. one being trained), whose mode and stateful flag are left as they were; or none of
        them: the bundled model (its card: paddle_elmo/pretrained/README.md), which is logged.
    batch_size: sentences per batch in `encode` / `embed_file`.
    device: 'cpu', 'gpu' or 'gpu:N': the constructor calls paddle.set_device(device), which switches
        Paddle's device for the whole process (Paddle has no per-model device for the tensors a
        forward creates); None (the default) changes nothing and runs on the device Paddle uses.
    stateful: carry LSTM state from batch to batch per row, as AllenNLP's ElmoEmbedder and bilm-tf
        do; the default (stateless) makes a sentence's embedding independent of other inputs.
    token_cache_size: char-CNN outputs of up to this many distinct tokens are kept, so a known word
        goes through the char CNN once (0 disables the cache).
    vocab_file: the input vocabulary of a word or word+char model given as bilm-tf files (line i =
        embedding row i); our checkpoints and exports carry theirs (vocab.txt). With
        `embedding_weight_file`, the tokens of that file's rows.
    embedding_weight_file: an hdf5 with dataset `embedding` [len(vocab), projection_dim], as
        `dump_token_embeddings` writes it: the cached path (bilm-tf's `use_character_inputs=False`,
        AllenNLP's `vocab_to_cache`). A word it holds takes its row and skips the char CNN; any other
        word goes through the model's own token representation (the char CNN; for a word model,
        <UNK>'s row). For a word model it is bilm-tf's `embedding_weight_file`: the embedding itself.
    reuse_memory: call `keep_freed_memory()`, a process-wide glibc malloc setting that makes CPU
        embedding 20-35% faster (see there); off by default because it changes the whole process.
    cpu_threads: on CPU, Paddle's threads (process-wide, as torch's default): None for
        $OMP_NUM_THREADS if you set it, else the available cores. On an AMD processor the embedder
        also sets MKL_DEBUG_CPU_TYPE=5 unless you set it (MKL's AVX2 path, ~3x faster products);
        see `runtime.py`.
    tokenizer: how raw strings become tokens, 'whitespace', 'jieba' or 'chars'
        (dataset.get_tokenizer); None: the one the model records (options.json's "tokenizer";
        whitespace when absent, as in bilm-tf files). Another than the model's logs a warning.
    """

    def __init__(self, options_file=None, weight_file=None, *, params_file=None, batch_size=64,
                 device=None, stateful=False, token_cache_size=50000, bilm=None, reuse_memory=False,
                 cpu_threads=None, vocab_file=None, embedding_weight_file=None, tokenizer=None):
        if options_file is not None and weight_file is None and params_file is None and \
                not options_file.endswith('.json'):
            source = resolve_model(options_file)
            params_file, options_file, weight_file = source.params_file, source.options_file, source.weight_file
        if device is not None:
            set_device(device)
        configure_if_on_cpu(cpu_threads)
        if reuse_memory:
            keep_freed_memory()
        own_vocab = own_vocabulary_file(params_file, options_file)
        if embedding_weight_file and not (vocab_file or own_vocab):
            raise InputError(f'embedding_weight_file {embedding_weight_file} needs vocab_file, the tokens of its rows')
        if bilm is None:
            word_model_embedding = None
            if embedding_weight_file:  # the options are read here only for it: load_bilm reports a bad source
                mode = read_model_config(model_options_file(params_file, options_file)).input_mode
                word_model_embedding = embedding_weight_file if mode.embedding_file == 'embedding' else None
            # Beside a char model's own vocab.txt, vocab_file with embedding_weight_file lists that file's
            # rows; a word model's embedding file is its embedding: vocab_file must be its vocabulary.
            model_vocab = None if embedding_weight_file and own_vocab and not word_model_embedding else vocab_file
            bilm = load_bilm(params_file, options_file, weight_file, stateful=stateful, vocab_file=model_vocab,
                             embedding_weight_file=word_model_embedding)
        self.bilm = bilm
        self.tokenizer = model_tokenizer(bilm.config.tokenizer, tokenizer)
        self.batch_size = batch_size
        self.stateful = stateful
        self.token_cache_size = token_cache_size
        # Char ids are only needed for tokens the vector cache misses: a bound like the cache's keeps
        # embed_file's memory flat (the mapper's default bound, 1M tokens, is ~0.5 GB of ids).
        self.mapper = InputMapper.of(self.bilm, max_cache=max(token_cache_size, 10000))
        self._token_cache = {}
        # The cached path: every row of embedding_weight_file, kept whatever token_cache_size says.
        self._token_table = {}
        if embedding_weight_file and bilm.config.input_mode.embedding_file == 'cache':
            tokens = read_vocabulary_file(vocab_file or own_vocab)
            self._token_table = read_token_embeddings(embedding_weight_file, tokens, bilm.projection_dim)

    @classmethod
    def from_pretrained(cls, name='bundled', **kwargs):
        """An embedder of a model by name: 'bundled' (the model that ships with the package), a
        directory (bilm-tf / AllenNLP files, an export, or a checkpoint directory: its final or
        latest step), or a checkpoint prefix 'DIR/N'. kwargs: the constructor's (batch_size, ...)."""
        return cls(**resolve_model(name).kwargs(), **kwargs)

    @property
    def dim(self):
        return 2 * self.bilm.projection_dim

    def reset_states(self):
        self.bilm.reset_states()

    # ---- core -----------------------------------------------------------------------------
    def _token_vectors(self, tokens):
        """Distinct tokens -> numpy [len(tokens), P]; runs the token representation only on the ones
        neither the token table (embedding_weight_file) nor the cache holds."""
        known = lambda t: self._token_table.get(t, self._token_cache.get(t))
        missing = [t for t in tokens if known(t) is None]
        fresh = dict(zip(missing, token_embeddings(self.bilm, missing, mapper=self.mapper))) if missing else {}
        room = self.token_cache_size - len(self._token_cache)
        for token in missing[:max(room, 0)]:
            self._token_cache[token] = fresh[token]
        return np.stack([fresh[t] if t in fresh else known(t) for t in tokens])

    def _run_batch(self, sentences):
        """One batch of token lists through the biLM -> (activations [layers, batch, time, 2P]
        numpy, lengths)."""
        padded = [[BOS_TOKEN, *s, EOS_TOKEN] for s in sentences]
        lengths = np.array([len(s) for s in padded], dtype=np.int64)
        vocab = list(dict.fromkeys(t for s in padded for t in s))
        index = {t: i for i, t in enumerate(vocab)}
        vectors = self._token_vectors(vocab)  # [distinct, P]
        positions = np.zeros((len(padded), lengths.max()), dtype=np.int64)
        for row, s in enumerate(padded):
            positions[row, :len(s)] = [index[t] + 1 for t in s]  # 0 selects the zero (padding) row
        table = np.concatenate([np.zeros((1, vectors.shape[1]), np.float32), vectors])
        with inference_mode(self.bilm, self.stateful) as bilm:
            x = paddle.to_tensor(table[positions])
            out = bilm(None, lengths, token_embeddings=x)
            layers = np.stack([a.numpy() for a in out['activations']])
        return layers, lengths

    def _embed_token_lists(self, sentences):
        if not sentences:
            return []
        layers, lengths = self._run_batch(sentences)
        return [np.ascontiguousarray(layers[:, row, 1:n - 1]) for row, n in enumerate(lengths)]

    def hub_outputs(self, sentences, mix_weights=None, gamma=1.0):
        """TF-Hub-style outputs for a batch, padded to its longest sentence (numpy arrays).

        sentences: raw strings, split by the embedder's tokenizer (whitespace: as the `default`
        signature does), or token lists (the `tokens` signature). word_emb [batch, time, P]
        (char-CNN token representation), lstm_outputs1/2 [batch, time, 2P], elmo [batch, time, 2P]
        = gamma * sum softmax(mix_weights)_k layer_k (equal weights by default), default
        [batch, 2P] = mean of elmo over real tokens only, sequence_len [batch].
        """
        embs = self.encode(sentences)
        n_layers = self.bilm.n_layers + 1
        lengths = np.array([e.shape[1] for e in embs], dtype=np.int64)
        padded = np.zeros((n_layers, len(embs), int(lengths.max(initial=0)), self.dim), np.float32)
        for row, e in enumerate(embs):
            padded[:, row, :e.shape[1]] = e
        mix = ScalarMix(n_layers, initial_weights=mix_weights, initial_gamma=gamma, trainable=False)
        with paddle.no_grad():
            elmo = mix([paddle.to_tensor(layer) for layer in padded]).numpy()
        out = {'word_emb': padded[0, :, :, :self.bilm.projection_dim],
               'elmo': elmo, 'sequence_len': lengths,
               'default': elmo.sum(axis=1) / np.maximum(lengths, 1)[:, None]}
        for k in range(1, n_layers):
            out[f'lstm_outputs{k}'] = padded[k]
        return out

def token_embeddings(bilm, tokens, out=None, batch_size=8192, mapper=None):
    """The context-free representation of each token alone, no LSTM (the first half of layer 0)
    -> float32 [len(tokens), P]: char CNN + highway + projection; a word model's embedding row
    (<UNK>'s for a word outside its vocabulary); word+char: both, projected.

    `<S>` and `</S>` are the sentence boundaries (BOS / EOS chars and ids), as in a sentence. The
    biLM's train/eval mode is restored afterwards. Rows go into `out` when given (anything that
    takes slice assignment: a numpy array, an h5py dataset, a memory-mapped .npy), `batch_size`
    tokens at a time, so dumping a large vocabulary holds one batch, not a second copy of the table.
    mapper: an InputMapper whose char-id cache to use (ELMoEmbedder's).
    """
    out = np.empty((len(tokens), bilm.projection_dim), np.float32) if out is None else out
    mapper = mapper or InputMapper.of(bilm, max_cache=0)
    with inference_mode(bilm, bilm.stateful) as model:
        for start in range(0, len(tokens), batch_size):
            part = tokens[start:start + batch_size]
            char_ids, word_ids = mapper.tokens(part)
            x = model.token_embedding(None if char_ids is None else char_ids[None],
                                      None if word_ids is None else word_ids[None])
            out[start:start + len(part)] = x[0].numpy()
    return out


def read_token_embeddings(path, tokens, dim):
    """An hdf5 of dump_token_embeddings (dataset `embedding` [len(tokens), dim]) -> {token: row}."""
    import h5py
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{path}: embedding_weight_file not found')
    with h5py.File(path, 'r') as f:
        if HDF5_EMBEDDING not in f:
            raise InputError(f'{path}: no dataset "{HDF5_EMBEDDING}" (expected dump_token_embeddings\' output)')
        table = f[HDF5_EMBEDDING][...].astype(np.float32)
    if table.shape != (len(tokens), dim):
        raise InputError(f'{path}: "{HDF5_EMBEDDING}" has shape {table.shape}, expected ({len(tokens)}, {dim}): one '
                         f'row of the model\'s projection_dim per token of the vocabulary')
    return dict(zip(tokens, table))


def dump_token_embeddings(vocab_file, options_file=None, weight_file=None, outfile=None, params_file=None,
                          batch_size=8192):
    """bilm-tf's `dump_token_embeddings(vocab_file, options_file, weight_file, outfile)`: the
    token_embeddings of every line of `vocab_file`, in file order, into hdf5 dataset `embedding`
    float32 [n_lines, projection_dim] (`<S>` / `</S>` lines are the BOS / EOS embeddings).

    The model: options_file + weight_file (bilm-tf / AllenNLP), or `params_file=`, a checkpoint
    prefix of ours ('checkpoints/final'), or none (the bundled model). The file appears atomically.
    -> the number of rows.
    """
    import h5py
    if outfile is None:
        raise InputError('dump_token_embeddings needs outfile, the hdf5 file to write')
    out_dir = os.path.dirname(os.path.abspath(outfile))
    if not os.path.isdir(out_dir):
        raise FileNotFoundError(f'{outfile}: the directory {out_dir} does not exist')
    tokens = read_vocabulary_file(vocab_file)
    # A word model in bilm-tf files has no vocab.txt of its own: the dumped vocabulary is its vocabulary.
    own = own_vocabulary_file(params_file, options_file)
    bilm = load_bilm(params_file, options_file, weight_file, vocab_file=None if own else vocab_file)
    with atomic_path(outfile) as tmp, h5py.File(tmp, 'w') as fout:
        table = fout.create_dataset('embedding', (len(tokens), bilm.projection_dim), dtype='float32')
        token_embeddings(bilm, tokens, out=table, batch_size=batch_size)
    return len(tokens)


# --------------------------------------------------------------------------------------------
# Files in, hdf5 out
# --------------------------------------------------------------------------------------------

OUTPUT_FORMATS = ('all', 'top', 'average')


def _read_chunks(input_file, chunk_size):
    """Yield lists of (line index, stripped line) from a UTF-8 file, `chunk_size` at a time."""
    chunk = []
    for i, _, text in iter_lines(input_file):
        chunk.append((i, text.strip()))
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _select(embedding, output_format):
    if output_format == 'all':
        return embedding
    if output_format == 'top':
        return embedding[-1]
    return embedding.mean(axis=0)


def embed_file(embedder, input_file, output_file, output_format='all', batch_size=64, progress=True,
               chunk_batches=16, use_sentence_keys=False, forget_sentences=False):
    """Stream a one-sentence-per-line file (raw lines, split by the embedder's tokenizer) through
    `embedder` into hdf5.

    Datasets, as `allennlp elmo` wrote them: str(line index) -> [n_layers + 1, n_tokens, 2P]
    ('all'), [n_tokens, 2P] ('top' or 'average'); plus 'sentence_to_index', a JSON string
    {sentence: index}. An empty line is an empty sentence ([n_layers + 1, 0, 2P]), so that the
    datasets keep the file's line numbers. Lines are read in chunks, so memory stays flat however
    long the file is; the output appears atomically. -> the number of lines.

    # Parameters
    use_sentence_keys: the (stripped) sentence is its dataset's key instead of its line index, and
        there is no 'sentence_to_index' (allennlp elmo's --use-sentence-keys). An empty, a repeated
        sentence or one with '/' (an hdf5 path) is an InputError naming the line.
    forget_sentences: no 'sentence_to_index' dataset (allennlp elmo's --forget-sentences).
    """
    import h5py
    from tqdm import tqdm
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f'output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}')
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f'{input_file}: input file not found')
    out_dir = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(out_dir):
        raise FileNotFoundError(f'{output_file}: the directory {out_dir} does not exist')
    with open(input_file, 'rb') as f:
        n_lines = sum(1 for _ in f)
    sentence_to_index = {}
    with atomic_path(output_file) as tmp, h5py.File(tmp, 'w') as fout, \
            tqdm(total=n_lines, unit='sent', disable=not show_progress(progress, log),
                 desc='embedding') as bar:
        for chunk in _read_chunks(input_file, batch_size * chunk_batches):
            embeddings = embedder.encode([line for _, line in chunk], batch_size)  # split by its tokenizer
            for (i, line), emb in zip(chunk, embeddings):
                key = _sentence_key(input_file, i, line, sentence_to_index) if use_sentence_keys else str(i)
                fout.create_dataset(key, data=_select(emb, output_format).astype(np.float32))
                sentence_to_index[line] = str(i)
            bar.update(len(chunk))
        if not (use_sentence_keys or forget_sentences):
            index = fout.create_dataset('sentence_to_index', (1,), dtype=h5py.string_dtype())
            index[0] = json.dumps(sentence_to_index)
    return n_lines


def _sentence_key(input_file, i, sentence, seen):
    """Line i's sentence as its hdf5 key (--use-sentence-keys); InputError naming the line when it
    cannot be one. `seen`: {sentence: str(line index)} of the lines before."""
    where = f'{input_file}:{i + 1}: --use-sentence-keys'
    if sentence in seen:
        raise InputError(f'{where}: the same sentence as line {int(seen[sentence]) + 1}; a key is unique '
                         '(leave out --use-sentence-keys to key by line number)')
    if not sentence or sentence == '.' or '/' in sentence:
        raise InputError(f'{where}: an empty sentence, "." or one with "/" cannot be an hdf5 key '
                         '(leave out --use-sentence-keys to key by line number)')
    return sentence
