"""`ELMoEmbedder`, the Python API: sentences (raw strings or lists of tokens) in, numpy arrays
`[n_layers + 1, n_tokens, 2 * projection_dim]` out, with the batching and the files of
sentence_embedder.SentenceEmbedder (`embed_file` into hdf5 as `allennlp elmo`); `ElmoEmbedder`, the same with
AllenNLP's arguments and defaults, for code ported from it; and `token_embeddings` /
`dump_token_embeddings`, the context-free token representation of a vocabulary (bilm-tf's
`dump_token_embeddings`, for char, word and word+char models), which an embedder of a model with
that `embedding_weight_file` (model_io.resolve_model) reads back so that known words skip the char CNN."""
import logging
import os

import numpy as np

import paddle

from paddle_elmo.runtime import (configure_if_on_cpu, cuda_device_name, inference_mode, keep_freed_memory,
                                 set_device)
from paddle_elmo.text.token_ids import BOS_TOKEN, EOS_TOKEN, InputMapper
from paddle_elmo.text.tokenizers import model_tokenizer
from paddle_elmo.text.vocabulary import read_vocabulary_file
from paddle_elmo.use.downstream import ScalarMix
from paddle_elmo.fileio import InputError, atomic_path, check_output_file
from paddle_elmo.files.model_io import resolve_model
from paddle_elmo.files.model_names import release_urls_as_name
from paddle_elmo.use.sentence_embedder import SentenceEmbedder

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
    >>> ELMoEmbedder(model='bundled-zh')              # the same by keyword
    >>> ELMoEmbedder('checkpoints')                   # a directory or a checkpoint prefix
    >>> ELMoEmbedder(resolve_model('options.json', 'weights.hdf5', vocab_file='vocab.txt'))  # a bilm-tf word model

    options_file, weight_file: a model in the bilm-tf / AllenNLP format (positional, as in AllenNLP;
        AllenNLP's URLs of a release name it: model_names.release_urls_as_name).
        Without weight_file, the first argument is any model model_io.resolve_model takes: a name of
        model_names.MODELS, a directory, a checkpoint prefix, or a LoadedModel (with its vocab_file
        and embedding_weight_file: a word model's vocabulary, bilm-tf's token-embedding file); none
        of them: the bundled model (its card: paddle_elmo/pretrained/README.md), which is logged.
    model: the first argument by name (`ELMoEmbedder(model='bundled-zh')`); giving both is an InputError.
    bilm: instead, an in-memory BiLM (e.g. one being trained), whose mode and stateful flag are
        left as they were (resolve_model takes it as it takes a model: `load` gives it back).
    batch_size: sentences per batch in `encode` / `embed_file`.
    device: 'cpu', 'gpu' or 'gpu:N': the constructor calls paddle.set_device(device), which switches
        Paddle's device for the whole process (Paddle has no per-model device for the tensors a
        forward creates); None (the default) changes nothing and runs on the device Paddle uses.
    stateful: carry LSTM state from batch to batch per row, as AllenNLP's ElmoEmbedder and bilm-tf
        do; the default (stateless) makes a sentence's embedding independent of other inputs.
    token_cache_size: char-CNN outputs of up to this many distinct tokens are kept, so a known word
        goes through the char CNN once (0 disables the cache). A model's `embedding_weight_file`
        (as `dump_token_embeddings` writes it: the cached path, bilm-tf's
        `use_character_inputs=False`, AllenNLP's `vocab_to_cache`) gives every token it holds its
        row whatever this says: those words skip the char CNN.
    reuse_memory: call `keep_freed_memory()`, a process-wide glibc malloc setting that makes CPU
        embedding faster (see there); off by default because it changes the whole process.
    cpu_threads: on CPU, Paddle's threads (process-wide, as torch's default): None for
        $OMP_NUM_THREADS if you set it, else the available cores. On an AMD processor the embedder
        also sets MKL_DEBUG_CPU_TYPE unless you set it (7 with AVX-512, else 5: MKL's AVX-512 or AVX2
        path rather than its slower generic one); see `runtime.py`.
    tokenizer: how raw strings become tokens, 'whitespace', 'moses', 'jieba' or 'chars'
        (tokenizers.get_tokenizer); None: the one the model records (its config's tokenizer: moses
        for the bundled model; for a named AllenNLP release, the table's; whitespace when absent,
        as in bilm-tf files). Another than the model's logs a warning. A word model warns once when
        a call's tokens are mostly unknown. `tokenize(sentences)` gives the tokens that are embedded
        (one row each); text already in the model's tokens comes back unchanged.
    """

    def __init__(self, options_file=None, weight_file=None, *, model=None, batch_size=64, device=None,
                 stateful=False, token_cache_size=50000, bilm=None, reuse_memory=False, cpu_threads=None,
                 tokenizer=None):
        if model is not None:
            if options_file is not None:
                raise InputError(f'{type(self).__name__}: a model given twice, as the first argument and as model=; '
                                 'give it once')
            options_file = model
        if bilm is not None and (options_file is not None or weight_file is not None):
            raise InputError('give a model (options_file, weight_file or a model as resolve_model takes it) or '
                             'bilm=, not both')
        if device is not None:
            set_device(device)
        configure_if_on_cpu(cpu_threads)
        if reuse_memory:
            keep_freed_memory()
        source = (bilm,) if bilm is not None else release_urls_as_name(options_file, weight_file)
        model = resolve_model(*source)  # an in-memory BiLM too: its load() gives it back as it was
        self.bilm = bilm = model.load(stateful=stateful)
        self.tokenizer = model_tokenizer(bilm.config.tokenizer, tokenizer)
        self.batch_size = batch_size
        self.stateful = stateful
        self.token_cache_size = token_cache_size
        # Char ids are only needed for tokens the vector cache misses: a bound like the cache's keeps
        # embed_file's memory flat (the mapper's default bound, a million tokens of 50 char ids each, is large).
        self.mapper = InputMapper.of(self.bilm, max_cache=max(token_cache_size, 10000))
        self._token_cache = {}
        # The cached path: every row of the model's embedding_weight_file, kept whatever token_cache_size says.
        self._token_table = model.token_table()

    @classmethod
    def from_pretrained(cls, name='bundled', **kwargs):
        """An embedder of a model by name: a name of model_names.MODELS ('bundled', 'bundled-zh',
        AllenNLP's 'small', 'medium', 'original', 'original-5.5b'), a directory (bilm-tf / AllenNLP
        files, an export, or a checkpoint directory: its final or latest step), or a checkpoint
        prefix 'DIR/N'. kwargs: the constructor's (batch_size, ...)."""
        return cls(name, **kwargs)

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
        """One batch of token lists through the biLM -> (activations: n_layers + 1 tensors
        [batch, time, 2P], lengths)."""
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
            activations = bilm(None, lengths, token_embeddings=x)['activations']
        return activations, lengths

    def _embed_token_lists(self, sentences):
        if not sentences:
            return []
        activations, lengths = self._run_batch(sentences)
        # Each sentence's array is filled layer by layer, and each layer's tensor dropped once copied:
        # the batch's layers are never held three times over (tensors, their numpy copies, a stack).
        out = [np.empty((len(activations), n - 2, self.dim), np.float32) for n in lengths]
        for k in range(len(activations)):
            layer, activations[k] = activations[k].numpy(), None
            for row, n in enumerate(lengths):
                out[row][k] = layer[row, 1:n - 1]
        return out

    def hub_outputs(self, sentences, mix_weights=None, gamma=1.0):
        """TF-Hub-style outputs for a batch, padded to its longest sentence (numpy arrays).

        sentences: raw strings, split by the embedder's tokenizer (whitespace: as the `default`
        signature does), or token lists (the `tokens` signature). word_emb [batch, time, P]
        (char-CNN token representation), lstm_outputs1/2 [batch, time, 2P], elmo [batch, time, 2P]
        = gamma * sum softmax(mix_weights)_k layer_k (equal weights by default), default
        [batch, 2P] = mean of elmo over real tokens only, sequence_len [batch].
        """
        padded, lengths = self._padded(self.encode(sentences))
        n_layers = self.bilm.n_layers + 1
        mix = ScalarMix(n_layers, initial_weights=mix_weights, initial_gamma=gamma, trainable=False)
        with paddle.no_grad():
            elmo = mix([paddle.to_tensor(layer) for layer in padded]).numpy()
        out = {'word_emb': padded[0, :, :, :self.bilm.projection_dim],
               'elmo': elmo, 'sequence_len': lengths,
               'default': elmo.sum(axis=1) / np.maximum(lengths, 1)[:, None]}
        for k in range(1, n_layers):
            out[f'lstm_outputs{k}'] = padded[k]
        return out

    def _padded(self, embs):
        """Sentences' layers (float32 [n_layers + 1, n_tokens, 2P] each) -> (float32 [n_layers + 1,
        batch, longest, 2P], zero past each sentence's end; int64 lengths [batch])."""
        lengths = np.array([e.shape[1] for e in embs], dtype=np.int64)
        padded = np.zeros((self.bilm.n_layers + 1, len(embs), int(lengths.max(initial=0)), self.dim), np.float32)
        for row, e in enumerate(embs):
            padded[:, row, :e.shape[1]] = e
        return padded, lengths


# AllenNLP's ElmoEmbedder() loads the paper's model (its DEFAULT_OPTIONS_FILE / DEFAULT_WEIGHT_FILE).
ALLENNLP_DEFAULT_MODEL = 'original'


class ElmoEmbedder(ELMoEmbedder):
    """AllenNLP's `ElmoEmbedder` (allennlp.commands.elmo), so that code written for it runs
    unchanged: ELMoEmbedder with AllenNLP's arguments and defaults.

    >>> ElmoEmbedder('options.json', 'weights.hdf5', cuda_device=-1).embed_sentence(['Hello', '.'])  # [3, 2, dim]

    # Parameters
    options_file, weight_file: as ELMoEmbedder's (bilm-tf / AllenNLP files, or one model value);
        neither (nor model= or bilm=): 'original', the paper's model, as AllenNLP's defaults
        (downloaded once into the cache).
    cuda_device: AllenNLP's device number, -1 the CPU (the default, as AllenNLP's), N >= 0 'gpu:N'
        (runtime.cuda_device_name); it sets Paddle's device for the process, as ELMoEmbedder's device=.
    stateful: True, as AllenNLP's ElmoEmbedder carries each batch row's LSTM state to the next batch
        (its caveat: the same sentence embedded twice gives different vectors; `reset_states()`
        zeroes it); False gives ELMoEmbedder's stateless embeddings.
    kwargs: ELMoEmbedder's other keywords (batch_size, model, tokenizer, ...), device excepted.

    Its methods are AllenNLP's: embed_sentence, embed_batch and embed_sentences return numpy float32
    [n_layers + 1, n_tokens, dim] per sentence ([3, n_tokens, 1024] for the original model),
    embed_file takes AllenNLP's argument order, batch_to_embeddings gives Paddle tensors where
    AllenNLP's gives torch's.
    """

    def __init__(self, options_file=None, weight_file=None, cuda_device=-1, *, stateful=True, **kwargs):
        if 'device' in kwargs:
            raise InputError("ElmoEmbedder takes AllenNLP's cuda_device (-1: cpu, N: gpu:N), not device=; "
                             "ELMoEmbedder takes device=")
        if options_file is None and kwargs.get('model') is None and kwargs.get('bilm') is None:
            options_file = ALLENNLP_DEFAULT_MODEL
        super().__init__(options_file, weight_file, device=cuda_device_name(cuda_device), stateful=stateful, **kwargs)
        self.cuda_device = cuda_device

    def embed_file(self, input_file, output_file_path, output_format='all', batch_size=None, forget_sentences=False,
                   use_sentence_keys=False, *, progress=True):
        """AllenNLP's embed_file, its arguments in its order: a one-sentence-per-line file (a path or
        the file opened, as AllenNLP takes it) into hdf5 (sentence_embedder.embed_file); -> number of lines."""
        return super().embed_file(input_file, output_file_path, output_format, batch_size, progress,
                                  use_sentence_keys=use_sentence_keys, forget_sentences=forget_sentences)

    def batch_to_embeddings(self, batch):
        """AllenNLP's batch_to_embeddings: one batch of sentences -> (float32 Tensor [batch, n_layers
        + 1, longest, dim], zero past each sentence's end; bool Tensor mask [batch, longest])."""
        padded, lengths = self._padded(self.embed_batch(batch))
        mask = np.arange(padded.shape[2])[None, :] < lengths[:, None]
        return paddle.to_tensor(padded.transpose(1, 0, 2, 3)), paddle.to_tensor(mask)

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


def dump_token_embeddings(vocab_file, options_file=None, weight_file=None, outfile=None, *, model=None,
                          batch_size=8192):
    """bilm-tf's `dump_token_embeddings(vocab_file, options_file, weight_file, outfile)`: the
    token_embeddings of every line of `vocab_file`, in file order, into hdf5 dataset `embedding`
    float32 [n_lines, projection_dim] (`<S>` / `</S>` lines are the BOS / EOS embeddings).

    Two forms, told apart by how many arguments follow vocab_file:
        dump_token_embeddings(vocab_file, options_file, weight_file, outfile)  # bilm-tf's, unchanged
        dump_token_embeddings(vocab_file, model, outfile)                      # the model as one value
    model (the second argument of three, or model=): what model_io.resolve_model takes (a
    LoadedModel, a name, a directory, a checkpoint prefix; None: the bundled model). An options file
    as the second of three is an InputError (bilm-tf's form has four: the weights file is missing),
    so that the weights file is never taken for the output.
    A word model whose files have no vocab.txt (bilm-tf's) and no vocab_file reads `vocab_file` as
    its vocabulary. The file appears atomically. -> the number of rows.
    """
    import h5py
    source, outfile = _dump_source_and_outfile(options_file, weight_file, outfile, model)
    if outfile is None:
        raise InputError('dump_token_embeddings needs outfile, the hdf5 file to write')
    check_output_file(outfile, None)  # before any work (its missing directories are made when written)
    tokens = read_vocabulary_file(vocab_file)
    model = resolve_model(*source)
    own = model.own_vocabulary_file or model.vocab_file
    bilm = (model if own else resolve_model(model, vocab_file=vocab_file)).load()
    with atomic_path(outfile) as tmp, h5py.File(tmp, 'w') as fout:
        table = fout.create_dataset('embedding', (len(tokens), bilm.projection_dim), dtype='float32')
        token_embeddings(bilm, tokens, out=table, batch_size=batch_size)
    return len(tokens)


def _dump_source_and_outfile(options_file, weight_file, outfile, model):
    """dump_token_embeddings' arguments after vocab_file, in either form -> (the model as
    resolve_model's arguments, outfile)."""
    if model is not None:
        if options_file is not None or weight_file is not None:
            raise InputError('dump_token_embeddings: model= or options_file, weight_file, not both')
        return (model,), outfile
    if outfile is not None:  # bilm-tf's four: (vocab_file, options_file, weight_file, outfile)
        return release_urls_as_name(options_file, weight_file), outfile
    if isinstance(options_file, (str, os.PathLike)) and os.fspath(options_file).endswith('.json'):
        raise InputError(f'dump_token_embeddings: {os.fspath(options_file)} is an options file, which takes '
                         "bilm-tf's four arguments (vocab_file, options_file, weight_file, outfile); three are "
                         '(vocab_file, model, outfile)')
    return (options_file,), weight_file  # (vocab_file, model, outfile): the third is outfile
