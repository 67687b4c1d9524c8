"""A model resolved once: `resolve_model` makes a `LoadedModel` from a model name of
model_names.MODELS, a directory, a checkpoint, bilm-tf / AllenNLP files, an ELMoForManyLangs
directory, an in-memory BiLM, or nothing (the bundled model); each kind of source a string names is
a component it asks in turn (MODEL_SOURCES: `recognises`, `resolve`). A LoadedModel is where a
model's files are read: its options.json when it is resolved (its config and the tokenizer of its
raw text, decided here), its weights, softmax, input vocabulary and token-embedding file when it is
loaded (`load`, `load_with_softmax`, `token_table`). An in-memory BiLM has no files: its LoadedModel
answers from the BiLM, and `load` returns that very BiLM.

    model = resolve_model('checkpoints')          # or resolve_model('options.json', 'weights.hdf5'), resolve_model()
    bilm = model.load()
    ELMoEmbedder(model, batch_size=32); Elmo(model); load_language_model(vocab.size, model)
    resolve_model(bilm).load() is bilm            # so every entry point takes a BiLM as it takes a model

The inference path (the embedder, Elmo, the export) loads models through here, and nothing here
imports the training objective. Resolving imports no Paddle (the BiLM's module is imported where one
is made), so that a command checks its model's files, and the inputs read for its tokenizer, first.
"""
import dataclasses
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from paddle_elmo.files.checkpoint_names import PARAMS_SUFFIX, checkpoint_dir, latest_checkpoint
from paddle_elmo.files.checkpoints import (bilm_state, check_softmax_rows, checkpoint_options_file, load_state_checked,
                                           read_state, softmax_of, state_embedding_rows)
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.fileio import InputError
from paddle_elmo.logs import warn_once
from paddle_elmo.files.hdf5_weights import (hdf5_rows, load_embedding_weight_file, load_hdf5_weights, model_options,
                                            read_hdf5_softmax, read_token_embeddings)
from paddle_elmo.files.efml_model import RUN_FILE, is_efml_directory, read_efml_directory
from paddle_elmo.files.model_names import MODELS, PACKAGE_DIR, did_you_mean, is_model_name, listed_names, model_files
from paddle_elmo.files.run_configs import (OPTIONS_FILE, RECIPE_FILE, VOCAB_FILE, WEIGHTS_FILE, read_input_vocabulary,
                                           read_json)
from paddle_elmo.text.vocabulary import read_vocabulary_file

if TYPE_CHECKING:
    from paddle_elmo.model.bilm import BiLM

log = logging.getLogger(__name__)

BUNDLED_NAME = 'bundled'
BUNDLED_MODEL_DIR = os.path.join(PACKAGE_DIR, MODELS[BUNDLED_NAME].package_dir)
CARD_FILE = 'README.md'  # a packaged model's card, beside its options.json
IN_MEMORY_NAME = 'the in-memory BiLM'  # what messages call a model given as a BiLM


@dataclass(frozen=True)
class LoadedModel:
    """A model resolved once (`resolve_model`): what it was named, its files, its config and how its
    raw text becomes tokens. Its weights are read when asked for (`load`, `load_with_softmax`).

    name: what it was resolved from, for messages and records: a model name ('bundled', 'small',
        ...), a directory, a checkpoint prefix or an options.json.
    config: its ModelConfig, whose `tokenizer` is the one its raw text is split by: the one its
        options.json records or, for a release whose files record none (AllenNLP's), the one its
        row of model_names.MODELS gives (resolve_model decides it, once).
    options: its options.json as read (an in-memory BiLM's: the options an export of it writes,
        hdf5_weights.model_options).
    options_file: its options.json (a checkpoint's is DIR/options.json); None for an in-memory BiLM.
    weight_file: its bilm-tf / AllenNLP weights.hdf5; None for a checkpoint of ours.
    params_file: its checkpoint prefix 'DIR/N' (DIR/N.pdparams); None for hdf5 weights.
    vocab_file: given apart from the model: a word model's input vocabulary (bilm-tf files have no
        vocab.txt; line i = embedding row i), or, with `embedding_weight_file` beside a model's own
        vocab.txt, the tokens of that file's rows.
    embedding_weight_file: bilm-tf's hdf5 `embedding` of token vectors (dump_token_embeddings'):
        a word model's embedding itself; for a model with chars, its cache of token representations
        (`token_table`: those tokens skip the char CNN).
    card: its model card (a packaged model's README.md), or None.
    weights_reader: for a model in another toolkit's layout that reads its own files (an
        ELMoForManyLangs directory: efml_model.EfmlWeights), what gives its input vocabulary
        (`lexicon`) and fills a BiLM (`fill`); None for bilm-tf / AllenNLP hdf5 and our checkpoints.
    bilm: for a model given as a BiLM (`of_bilm`, which resolve_model calls), that BiLM: `load`
        returns it, not a copy (a caller fine-tuning it keeps their object), its mode and stateful
        flag as they are; its config and input vocabulary are the BiLM's. None for a model of files.
    """
    name: str
    config: ModelConfig
    options: dict = field(repr=False, compare=False)
    options_file: Optional[str]
    weight_file: Optional[str] = None
    params_file: Optional[str] = None
    vocab_file: Optional[str] = None
    embedding_weight_file: Optional[str] = None
    card: Optional[str] = None
    weights_reader: Optional[Any] = field(default=None, repr=False)
    bilm: Optional['BiLM'] = field(default=None, repr=False, compare=False)

    @classmethod
    def of_bilm(cls, bilm):
        """An in-memory BiLM as a model: no files; `load` returns `bilm` itself."""
        return cls(name=IN_MEMORY_NAME, config=bilm.config, options=model_options(bilm), options_file=None,
                   bilm=bilm)

    @property
    def own_vocabulary_file(self):
        """The vocab.txt beside its options.json (a checkpoint's, an export's), or None."""
        if self.options_file is None:
            return None
        path = os.path.join(os.path.dirname(self.options_file) or '.', VOCAB_FILE)
        return path if os.path.isfile(path) else None

    def files(self):
        """Its files, for a record of what ran: {'options_file': ..., 'weight_file' or 'params_file': ...,
        and vocab_file / embedding_weight_file when given}."""
        names = ('options_file', 'weight_file', 'params_file', 'vocab_file', 'embedding_weight_file')
        files = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        return {**files, **self.weights_reader.files()} if self.weights_reader is not None else files

    def recorded_vocabulary(self):
        """The vocabulary it records (the one its softmax was trained with; for word input also its
        embedding's): a checkpoint's recipe.json `vocab_file`, else the vocab.txt beside its
        options.json -> (path or None, what was looked at: for an error)."""
        looked = []
        if self.params_file is not None:
            recipe_file = os.path.join(checkpoint_dir(self.params_file), RECIPE_FILE)
            recorded = read_json(recipe_file, 'recipe').get('vocab_file') if os.path.isfile(recipe_file) else None
            if recorded and os.path.isfile(recorded):
                return recorded, None
            looked.append(f'{recipe_file} records {recorded}, which is not there' if recorded else
                          f'{recipe_file} records none' if os.path.isfile(recipe_file) else f'{recipe_file} is absent')
        if self.own_vocabulary_file is not None:
            return self.own_vocabulary_file, None
        looked.append(f'no {VOCAB_FILE} beside {self.options_file}' if self.options_file else
                      f'{self.name} has no files')
        return None, '; '.join(looked)

    def load(self, stateful=False):
        """Its BiLM, its weights read (here only). A word model's input vocabulary is checked
        against its embedding's rows. An in-memory BiLM's: that BiLM, its stateful flag its own."""
        return self._load(stateful, softmax=False)[0]

    def load_with_softmax(self, stateful=False, vocab_size=None):
        """Its BiLM and its softmax -> (BiLM, (W [rows, P], b [rows]) float32, or None when the
        model has none); given `vocab_size` (the vocabulary it was trained with), the softmax must
        be there with that many rows."""
        return self._load(stateful, softmax=True, vocab_size=vocab_size)

    def load_into(self, bilm, softmax=False):
        """Fill `bilm` (one of this model's shape, made elsewhere: a new run's from these weights)
        with its weights -> its softmax as load_with_softmax gives it when asked for, else None."""
        return self._fill(bilm, self._checkpoint_state(), softmax)

    def token_table(self):
        """{token: row [projection_dim]} of embedding_weight_file when it caches token representations
        (a model with chars: its rows are vocab_file's lines, else those of its own vocab.txt); {}
        otherwise."""
        if not (self.embedding_weight_file and self.config.input_mode.embedding_file == 'cache'):
            return {}
        tokens = read_vocabulary_file(self.vocab_file or self.own_vocabulary_file)
        return read_token_embeddings(self.embedding_weight_file, tokens, self.config.projection_dim)

    # ---- the files ----------------------------------------------------------------------------
    def _load(self, stateful, softmax, vocab_size=None):
        if self.bilm is not None:
            return self.bilm, self._fill(self.bilm, None, softmax, vocab_size)
        if self.params_file is not None:
            log.debug('biLM from the checkpoint %s', self.params_file)
        else:
            log.debug('biLM from %s and %s', self.options_file, self.weight_file)
        state = self._checkpoint_state(vocab_size)
        rows = state_embedding_rows(state) if state is not None else self._hdf5_embedding_rows()
        from paddle_elmo.model.bilm import BiLM
        bilm = BiLM(self.config, stateful=stateful, vocab=self.input_vocabulary(rows))
        return bilm, self._fill(bilm, state, softmax, vocab_size)

    def _checkpoint_state(self, vocab_size=None):
        """A checkpoint's state dict (its softmax checked to have vocab_size rows), or None for hdf5 weights."""
        if self.params_file is None:
            return None
        return read_state(self.params_file, vocab_size, require_softmax=vocab_size is not None)

    def _fill(self, bilm, state, softmax, vocab_size=None):
        if self.bilm is not None:  # a BiLM holds no softmax (a LanguageModel does)
            if vocab_size is not None:
                raise InputError(f'{self.name}: a BiLM holds no softmax: perplexity and word prediction need its '
                                 f'LanguageModel or its files')
            if bilm is not self.bilm:
                bilm.set_state_dict(self.bilm.state_dict())
            return None
        if self.weights_reader is not None:
            self.weights_reader.fill(bilm)
            if vocab_size is not None:
                raise InputError(f'{self.name}: this model has no softmax (ELMoForManyLangs releases none): '
                                 f'perplexity and word prediction need one')
            return None
        if state is not None:
            load_state_checked(bilm, bilm_state(state), self.params_file)
            load_embedding_weight_file(bilm, self._word_embedding_file())
            return softmax_of(state) if softmax else None
        load_hdf5_weights(bilm, self.weight_file, self._word_embedding_file())
        table = read_hdf5_softmax(self.weight_file, required=vocab_size is not None) if softmax else None
        if table is not None:
            check_softmax_rows(table[0].shape, vocab_size, self.weight_file)
        return table

    def _word_embedding_file(self):
        """embedding_weight_file when it is a word model's embedding itself (bilm-tf's inference
        layout, config.input_mode.embedding_file), else None."""
        is_embedding = self.embedding_weight_file and self.config.input_mode.embedding_file == 'embedding'
        return self.embedding_weight_file if is_embedding else None

    def _hdf5_embedding_rows(self):
        name = self.config.input_mode.word_embedding
        file = self._word_embedding_file() or self.weight_file
        return hdf5_rows(file, name) if name and file else None  # none: a weights_reader's model

    def input_vocabulary(self, rows=None, source=None):
        """A word or word+char model's input Vocabulary (None for a char model): vocab.txt beside its
        options.json or vocab_file (given both, the same tokens), checked against its embedding's
        `rows` when given; source: what the errors call the model (default: its weights' file).
        Beside a model's own vocab.txt, a vocab_file that lists a token cache's rows (token_table)
        is not its vocabulary."""
        if self.weights_reader is not None:
            return self.weights_reader.lexicon
        if self.bilm is not None:
            return self.bilm.vocab
        lists_cache_rows = self.embedding_weight_file and self.config.input_mode.embedding_file == 'cache'
        vocab_file = None if lists_cache_rows and self.own_vocabulary_file else self.vocab_file
        source = source or self.params_file or self._word_embedding_file() or self.weight_file
        return read_input_vocabulary(self.config, os.path.dirname(self.options_file), vocab_file, rows, source)


def resolve_model(model=None, weight_file=None, *, vocab_file=None, embedding_weight_file=None):
    """A model, wherever it is, as the one value the library and every command take -> LoadedModel.
    Its options.json is read here; its weights when it is loaded.

    model: None, the bundled model (a warning in the log says so: its card is
        paddle_elmo/pretrained/README.md); a string the first of MODEL_SOURCES that recognises it
        reads: a model name (model_names.MODELS: 'bundled', 'bundled-zh', AllenNLP's 'small',
        'medium', 'original', 'original-5.5b', ELMoForManyLangs' 'efml-zh', ..., downloaded into the
        cache on first use); a checkpoint prefix 'DIR/N' (with or without .pdparams); an
        ELMoForManyLangs model directory; a directory holding options.json + weights.hdf5 (bilm-tf /
        AllenNLP files, or an export of ours); a checkpoint directory (its `final`, else its latest
        step N); with `weight_file`, an options.json (bilm-tf / AllenNLP's pair of files); a
        LoadedModel (returned, with the files below when given); or a BiLM in memory
        (LoadedModel.of_bilm: `load` returns it).
    vocab_file, embedding_weight_file: see LoadedModel (a BiLM carries its own vocabulary: none).
    """
    if _is_bilm(model):
        if weight_file is not None or vocab_file is not None or embedding_weight_file is not None:
            raise InputError(f'{IN_MEMORY_NAME}: a BiLM carries its weights and vocabulary; give no weight_file, '
                             f'vocab_file or embedding_weight_file with it')
        return LoadedModel.of_bilm(model)
    if isinstance(model, LoadedModel):
        if weight_file is not None:
            raise InputError(f'{model.name}: a resolved model takes no weight_file')
        loaded = model
    elif weight_file is not None:
        if model is None:
            raise InputError(f'weight_file {weight_file} needs its options_file (bilm-tf / AllenNLP files)')
        loaded = _from_files(os.fspath(model), os.fspath(weight_file))
    elif model is None:
        loaded = _named(BUNDLED_NAME)
        log.warning('no model given: using the bundled model in %s (its card: %s)', BUNDLED_MODEL_DIR, loaded.card)
    else:
        loaded = _from_sources(os.fspath(model))
    given = {k: v for k, v in (('vocab_file', vocab_file), ('embedding_weight_file', embedding_weight_file)) if v}
    loaded = dataclasses.replace(loaded, **given) if given else loaded
    if loaded.embedding_weight_file and not (loaded.vocab_file or loaded.own_vocabulary_file):
        raise InputError(f'embedding_weight_file {loaded.embedding_weight_file} needs vocab_file, the tokens of its '
                         f'rows')
    return loaded


def _is_bilm(model):
    """Whether `model` is a BiLM, asked without importing Paddle: there is none before bilm.py is imported."""
    bilm = sys.modules.get('paddle_elmo.model.bilm')
    return bilm is not None and isinstance(model, bilm.BiLM)


def _read(name, options_file, tokenizer=None, **files):
    """A LoadedModel of options_file (read here), its tokenizer `tokenizer` when given, and `files`."""
    options = read_json(options_file, 'options file')
    config = ModelConfig.from_options({**options, 'tokenizer': tokenizer} if tokenizer else options, options_file)
    return LoadedModel(name=name, config=config, options=options, options_file=options_file, **files)


def _from_files(options_file, weight_file, name=None):
    return _read(name or options_file, options_file, weight_file=weight_file)  # a missing weight_file: when loaded


def _named(name):
    """A row of model_names.MODELS. A packaged model records its tokenizer in its options.json;
    AllenNLP's files record none: the row's is theirs."""
    options_file, weight_file = model_files(name)
    row = MODELS[name]
    if row.archive:  # an ELMoForManyLangs release: model_files gave its directory
        return _efml(options_file, row.tokenizer, name)
    card = os.path.join(os.path.dirname(options_file), CARD_FILE) if row.package_dir else None
    return _read(name, options_file, None if row.package_dir else row.tokenizer, weight_file=weight_file, card=card)


def _checkpoint(prefix):
    return _read(prefix, checkpoint_options_file(prefix), params_file=prefix)


def _efml(directory, tokenizer=None, name=None):
    """An ELMoForManyLangs model directory (efml_model.py) -> LoadedModel, its raw text split by
    `tokenizer` (a named release's row gives it); a bare directory records no language: whitespace,
    said in the log."""
    options, source, reader = read_efml_directory(directory)
    if tokenizer is None:
        warn_once(log, 'efml tokenizer', os.path.abspath(directory), '%s: an ELMoForManyLangs model records no '
                  'tokenizer: raw text is split on whitespace (give tokenizer= / --tokenizer for another)', directory)
    config = ModelConfig.from_options({**options, 'tokenizer': tokenizer or 'whitespace'}, source)
    return LoadedModel(name=name or directory, config=config, options=options,
                       options_file=os.path.join(directory, RUN_FILE), weights_reader=reader)


class ModelSource:
    """One kind of model source, a component resolve_model asks in turn (MODEL_SOURCES), as the
    token modes are asked which options file is theirs: `recognises(model)` says whether the string
    the user gave is one of its kind, `resolve(model)` reads it into a LoadedModel; `what` names
    the kind in the message for a string no source recognises."""
    what = ''

    def recognises(self, model):
        raise NotImplementedError

    def resolve(self, model):
        raise NotImplementedError


class NamedModel(ModelSource):
    """A row of model_names.MODELS: packaged, AllenNLP's and ELMoForManyLangs' releases."""

    @property
    def what(self):
        return f'a model name ({listed_names()})'

    def recognises(self, model):
        return is_model_name(model)

    def resolve(self, model):
        return _named(model)


class CheckpointPrefix(ModelSource):
    """A checkpoint of ours named by its prefix 'DIR/N' (with or without .pdparams)."""
    what = 'a checkpoint prefix DIR/N'

    def recognises(self, model):
        return os.path.isfile(_prefix(model) + PARAMS_SUFFIX)

    def resolve(self, model):
        return _checkpoint(_prefix(model))


class EfmlDirectory(ModelSource):
    """An ELMoForManyLangs model directory as released (efml_model.py)."""
    what = f'an ELMoForManyLangs directory ({RUN_FILE}, char.dic, token_embedder.pkl, encoder.pkl)'

    def recognises(self, model):
        return os.path.isdir(model) and is_efml_directory(model)

    def resolve(self, model):
        return _efml(model)


class Hdf5Directory(ModelSource):
    """bilm-tf / AllenNLP files in a directory (theirs, or an export of ours)."""
    what = f'a directory with {OPTIONS_FILE} + {WEIGHTS_FILE}'

    def recognises(self, model):
        return all(os.path.isfile(os.path.join(model, n)) for n in (OPTIONS_FILE, WEIGHTS_FILE))

    def resolve(self, model):
        return _from_files(*(os.path.join(model, n) for n in (OPTIONS_FILE, WEIGHTS_FILE)), name=model)


class CheckpointDirectory(ModelSource):
    """A checkpoint directory of ours: its latest checkpoint (checkpoint_names.latest_checkpoint: `final`,
    else the highest step N)."""
    what = f'a checkpoint directory (with final{PARAMS_SUFFIX} or N{PARAMS_SUFFIX})'

    def recognises(self, model):
        return os.path.isdir(model) and latest_checkpoint(model) is not None

    def resolve(self, model):
        return _checkpoint(latest_checkpoint(model))


# Asked in this order: a name first (a name wins over a directory of the same name in the working
# directory: './small' names the directory), then the paths.
MODEL_SOURCES = (NamedModel(), CheckpointPrefix(), EfmlDirectory(), Hdf5Directory(), CheckpointDirectory())


def _prefix(path):
    return path[:-len(PARAMS_SUFFIX)] if path.endswith(PARAMS_SUFFIX) else path


def _from_sources(model):
    """The first of MODEL_SOURCES that recognises `model` -> its LoadedModel; else one line saying
    what was expected (FileNotFoundError for a checkpoint prefix that is not there)."""
    source = next((source for source in MODEL_SOURCES if source.recognises(model)), None)
    if source is not None:
        return source.resolve(model)
    prefix = _prefix(model)
    if os.path.isfile(model) and model.endswith('.json'):
        raise InputError(f'{model}: an options file goes with its weights file (bilm-tf / AllenNLP files: '
                         f'options_file, weight_file)')
    if not os.path.exists(model) and os.path.dirname(prefix):  # a checkpoint prefix DIR/N that is not there
        checkpoint_options_file(prefix)  # names DIR/options.json when that is missing too
        raise FileNotFoundError(f'{prefix}{PARAMS_SUFFIX}: checkpoint not found')
    close = '' if os.path.exists(model) else did_you_mean(model)  # a path of the user's is no misspelt name
    kinds = [source.what for source in MODEL_SOURCES]
    raise InputError(f'{model}: not a model{close}; expected {", ".join(kinds[:-1])} or {kinds[-1]}')
