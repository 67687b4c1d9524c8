"""`ELMoEmbedder`, the Python API: sentences (raw strings or lists of tokens) in, numpy arrays
`[n_layers + 1, n_tokens, 2 * projection_dim]` out, with the batching and the files of
sentence_embedder.SentenceEmbedder (`embed_file` into hdf5 as `allennlp elmo`); and `token_embeddings` /
`dump_token_embeddings`, the context-free token representation of a vocabulary (bilm-tf's
`dump_token_embeddings`, for char, word and word+char models), which `ELMoEmbedder(...,
embedding_weight_file=...)` reads back so that known words skip the char CNN."""
import logging
import os

import numpy as np

import paddle

from paddle_elmo.runtime import configure_if_on_cpu, inference_mode, keep_freed_memory, set_device
from paddle_elmo.token_ids import BOS_TOKEN, EOS_TOKEN, InputMapper
from paddle_elmo.tokenizers import model_tokenizer
from paddle_elmo.vocabulary import read_vocabulary_file
from paddle_elmo.downstream import ScalarMix
from paddle_elmo.fileio import InputError, atomic_path, check_output_file
from paddle_elmo.hdf5_weights import HDF5_EMBEDDING
from paddle_elmo.model_io import ModelSource, load_bilm, model_options_file, own_vocabulary_file, resolve_model
from paddle_elmo.run_configs import read_model_config
from paddle_elmo.sentence_embedder import SentenceEmbedder

log = logging.getLogger(__name__)


class ELMoEmbedder(SentenceEmbedder):
    """Sentences -> numpy ELMo layers. A sentence is a list of str tokens or a raw string, which is
    split by `tokenizer` (by default the model's: on whitespace, as TF-Hub ELMo's `default`
    signature, for bilm-tf files); '' is an empty sentence ([n_layers + 1, 0, 2P]).

    >>> embedder = ELMoEmbedder()  # the bundled model: paddle_elmo/pretrained/
    >>> [e.shape for e in embedder.encode([['Hello', 'world', '.'], 'Bye now'])]
    [(3, 3, 256), (3, 2, 256)]
    >>> ELMoEmbedder('options.json', 'weights.hdf5')  # AllenNLP's files, as AllenNLP's ElmoEmbedder takes them
    >>> ELMoEmbedder('original')                      # a model name: downloaded once into the cache
    >>> ELMoEmbedder.from_pretrained('checkpoints')   # a name, a directory or a checkpoint prefix

    options_file, weight_file: a model in the bilm-tf / AllenNLP format (positional, as in AllenNLP).
        A first argument that is not a .json file is a model as `from_pretrained` takes it (a name
        of model_names.MODELS, a directory or a checkpoint prefix), or a model_io.ModelSource.
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
    tokenizer: how raw strings become tokens, 'whitespace', 'moses', 'jieba' or 'chars'
        (tokenizers.get_tokenizer); None: the one the model records (options.json's "tokenizer":
        moses for the bundled model; for a named AllenNLP release, the table's; whitespace when
        absent, as in bilm-tf files). Another than the model's logs a warning. A word model warns
        once when a call's tokens are mostly unknown. `tokenize(sentences)` gives the tokens that
        are embedded (one row each); text already in the model's tokens comes back unchanged.
    """

    def __init__(self, options_file=None, weight_file=None, *, params_file=None, batch_size=64,
                 device=None, stateful=False, token_cache_size=50000, bilm=None, reuse_memory=False,
                 cpu_threads=None, vocab_file=None, embedding_weight_file=None, tokenizer=None):
        recorded_tokenizer = None  # the table's, for a named model whose files record none
        if isinstance(options_file, ModelSource) or options_file is not None and weight_file is None and \
                params_file is None and not options_file.endswith('.json'):
            source = options_file if isinstance(options_file, ModelSource) else resolve_model(options_file)
            params_file, options_file, weight_file = source.params_file, source.options_file, source.weight_file
            vocab_file = vocab_file or source.vocab_file
            embedding_weight_file = embedding_weight_file or source.embedding_weight_file
            recorded_tokenizer = source.tokenizer
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
        self.tokenizer = model_tokenizer(recorded_tokenizer or bilm.config.tokenizer, tokenizer)
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
        """An embedder of a model by name: a name of model_names.MODELS ('bundled', 'bundled-zh',
        AllenNLP's 'small', 'medium', 'original', 'original-5.5b'), a directory (bilm-tf / AllenNLP
        files, an export, or a checkpoint directory: its final or latest step), or a checkpoint
        prefix 'DIR/N'. kwargs: the constructor's (batch_size, ...)."""
        return cls(resolve_model(name), **kwargs)

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
    check_output_file(outfile, None)  # before any work (its missing directories are made when written)
    tokens = read_vocabulary_file(vocab_file)
    # A word model in bilm-tf files has no vocab.txt of its own: the dumped vocabulary is its vocabulary.
    own = own_vocabulary_file(params_file, options_file)
    bilm = load_bilm(params_file, options_file, weight_file, vocab_file=None if own else vocab_file)
    with atomic_path(outfile) as tmp, h5py.File(tmp, 'w') as fout:
        table = fout.create_dataset('embedding', (len(tokens), bilm.projection_dim), dtype='float32')
        token_embeddings(bilm, tokens, out=table, batch_size=batch_size)
    return len(tokens)
