"""A biLM from wherever it is: a checkpoint prefix of ours, bilm-tf / AllenNLP files, or the bundled
model (`load_bilm`); a model named in one value (`ModelSource`: `resolve_model` makes one from a
model name of model_names.MODELS or a path, the commands' `cli.model_source` from their flags); the
model files a source names (`model_options_file`, `weights_files`).

The inference path (the embedder, Elmo, the export) loads models through here, and nothing here
imports the training objective.
"""
import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Optional

from paddle_elmo.bilm import BiLM
from paddle_elmo.checkpoints import PARAMS_SUFFIX, checkpoint_dir, checkpoint_paths, load_bilm_checkpoint
from paddle_elmo.fileio import InputError
from paddle_elmo.hdf5_weights import hdf5_rows, load_embedding_weight_file, load_hdf5_weights
from paddle_elmo.model_names import MODELS, PACKAGE_DIR, did_you_mean, is_model_name, model_files
from paddle_elmo.run_configs import (OPTIONS_FILE, RECIPE_FILE, VOCAB_FILE, WEIGHTS_FILE, read_input_vocabulary,
                                     read_json, read_model_config)

log = logging.getLogger(__name__)


def model_options_file(params_file=None, options_file=None, weight_file=None, vocab_file=None):
    """The options.json of a model given as load_bilm takes it (a checkpoint prefix, bilm-tf files,
    or none: the bundled model) -> its path."""
    if params_file is not None:
        return checkpoint_paths(params_file)[0]
    if options_file is not None:
        return options_file
    return bundled_model_files()[0]


def own_vocabulary_file(params_file=None, options_file=None):
    """The vocab.txt beside a model's options.json (model_options_file), or None."""
    path = os.path.join(os.path.dirname(model_options_file(params_file, options_file)) or '.', VOCAB_FILE)
    return path if os.path.isfile(path) else None


def recorded_vocabulary_file(params_file=None, options_file=None):
    """The vocabulary a model records (the one its softmax was trained with; for word input also its
    embedding's): a checkpoint's recipe.json `vocab_file`, else the vocab.txt beside its options.json
    (a word model's checkpoint or an export) -> (path or None, what was looked at: for an error)."""
    looked = []
    if params_file is not None:
        recipe_file = os.path.join(checkpoint_dir(params_file), RECIPE_FILE)
        recorded = read_json(recipe_file, 'recipe').get('vocab_file') if os.path.isfile(recipe_file) else None
        if recorded and os.path.isfile(recorded):
            return recorded, None
        looked.append(f'{recipe_file} records {recorded}, which is not there' if recorded else
                      f'{recipe_file} records none' if os.path.isfile(recipe_file) else f'{recipe_file} is absent')
    if params_file is not None or options_file is not None:
        own = own_vocabulary_file(params_file, options_file)
        if own is not None:
            return own, None
        looked.append(f'no {VOCAB_FILE} beside {model_options_file(params_file, options_file)}')
    return None, '; '.join(looked) or 'no model given'


BUNDLED_NAME = 'bundled'
BUNDLED_MODEL_DIR = os.path.join(PACKAGE_DIR, MODELS[BUNDLED_NAME].package_dir)


def bundled_model_files():
    """-> (options_file, weight_file) of the model that ships in pretrained/ (its card: README.md)."""
    return model_files(BUNDLED_NAME)


@dataclass(frozen=True)
class ModelSource:
    """A model, as load_bilm takes it, in one value: a checkpoint prefix of ours (`params_file`), a
    bilm-tf / AllenNLP pair (`options_file` + `weight_file`), or neither (the bundled model); with a
    word model's input vocabulary given apart (`vocab_file`) and bilm-tf's `embedding_weight_file`;
    `tokenizer`, for files that record none (AllenNLP's releases), the one the table of model names
    gives them (model_names.MODELS).

        source = resolve_model('checkpoints')       # or ModelSource(options_file=..., weight_file=...)
        bilm = source.load()
        ELMoEmbedder(source, batch_size=32)
    """
    params_file: Optional[str] = None
    options_file: Optional[str] = None
    weight_file: Optional[str] = None
    vocab_file: Optional[str] = None
    embedding_weight_file: Optional[str] = None
    tokenizer: Optional[str] = None

    def kwargs(self):
        """The files given, as keyword arguments of load_bilm, ELMoEmbedder, load_language_model ..."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None and k != 'tokenizer'}

    def load(self, stateful=False):
        """load_bilm of this source -> BiLM."""
        return load_bilm(stateful=stateful, **self.kwargs())

    def options_path(self):
        """Its options.json (the bundled model's when none is given)."""
        return model_options_file(self.params_file, self.options_file)

    def recorded_tokenizer(self):
        """How its raw text becomes tokens: the table's tokenizer for files that record none, else the
        one its options.json records (whitespace when absent, as in bilm-tf files)."""
        return self.tokenizer or read_model_config(self.options_path()).tokenizer


def resolve_model(name):
    """A model named as `from_pretrained` and `--model` take it -> ModelSource(params_file=...) or
    ModelSource(options_file=..., weight_file=...).

    name: a model name (model_names.MODELS: 'bundled', 'bundled-zh', AllenNLP's 'small', 'medium',
        'original', 'original-5.5b', downloaded into the cache on first use); a directory holding
        options.json + weights.hdf5 (bilm-tf / AllenNLP files, or an export of ours); a checkpoint
        directory (its `final`, else its latest step N); or a checkpoint prefix 'DIR/N' (with or
        without .pdparams).
    """
    if is_model_name(name):
        options_file, weight_file = model_files(name)
        model = MODELS[name]
        # A packaged model records its tokenizer in its options.json; AllenNLP's files record none.
        return ModelSource(options_file=options_file, weight_file=weight_file,
                           tokenizer=None if model.package_dir else model.tokenizer)
    prefix = name[:-len(PARAMS_SUFFIX)] if name.endswith(PARAMS_SUFFIX) else name
    if os.path.isfile(prefix + PARAMS_SUFFIX):
        return ModelSource(params_file=prefix)
    if os.path.isdir(name):
        files = [os.path.join(name, n) for n in (OPTIONS_FILE, WEIGHTS_FILE)]
        if all(os.path.isfile(f) for f in files):
            return ModelSource(options_file=files[0], weight_file=files[1])
        steps = [f[:-len(PARAMS_SUFFIX)] for f in os.listdir(name) if f.endswith(PARAMS_SUFFIX)]
        if 'final' in steps or any(s.isdigit() for s in steps):
            step = 'final' if 'final' in steps else max((s for s in steps if s.isdigit()), key=int)
            return ModelSource(params_file=os.path.join(name, step))
    close = '' if os.path.exists(name) else did_you_mean(name)  # a path of the user's is no misspelt name
    raise InputError(f'{name}: not a model{close}; expected a model name ({", ".join(MODELS)}), a directory with '
                     f'{OPTIONS_FILE} + {WEIGHTS_FILE}, a checkpoint directory (with final{PARAMS_SUFFIX} or '
                     f'N{PARAMS_SUFFIX}) or a checkpoint prefix DIR/N')


def weights_files(init_from_weights=None, options_file=None, weight_file=None):
    """The (options.json, weights.hdf5) a run starts from: DIR's, a named model's ('bundled', 'bundled-zh',
    'original', ...: model_names.MODELS, a release downloaded on first use), or the pair given ->
    absolute paths, both checked to exist."""
    if init_from_weights and is_model_name(init_from_weights):
        options_file, weight_file = model_files(init_from_weights)
    elif init_from_weights:
        options_file, weight_file = (os.path.join(init_from_weights, n) for n in (OPTIONS_FILE, WEIGHTS_FILE))
    for path, what in ((options_file, 'options file'), (weight_file, 'weights file')):
        if not os.path.isfile(path):
            named = init_from_weights and not os.path.exists(init_from_weights)  # a misspelt name, not a path
            close = did_you_mean(init_from_weights) if named else ''
            raise FileNotFoundError(f'{path}: {what} not found' + (f' (--init_from_weights DIR needs DIR/{OPTIONS_FILE} '
                                    f'and DIR/{WEIGHTS_FILE}, or a model name{close})' if init_from_weights else ''))
    return os.path.abspath(options_file), os.path.abspath(weight_file)


def load_bilm(params_file=None, options_file=None, weight_file=None, stateful=False, vocab_file=None,
              embedding_weight_file=None):
    """A BiLM from a checkpoint prefix ('DIR/N'), from bilm-tf options + hdf5 weights, or, given
    none of them, the bundled model in pretrained/ (saying so: a warning in the log).

    A word or word+char model needs its input vocabulary: vocab.txt beside its options.json, or
    `vocab_file` (bilm-tf files; given beside vocab.txt, it must hold the same tokens). A word
    model's `embedding` may come from `embedding_weight_file` (bilm-tf's inference layout).
    """
    if params_file is None and options_file is None and weight_file is None:
        options_file, weight_file = bundled_model_files()
        log.warning('no model given: using the bundled model in %s (its card: %s)', BUNDLED_MODEL_DIR,
                    os.path.join(BUNDLED_MODEL_DIR, 'README.md'))
    if params_file is not None:
        if options_file is not None or weight_file is not None:
            raise InputError('give either params_file (a checkpoint prefix) or options_file + weight_file')
        log.debug('biLM from the checkpoint %s', params_file)
        return load_embedding_weight_file(load_bilm_checkpoint(params_file, stateful, vocab_file)[0],
                                          embedding_weight_file)
    if options_file is None or weight_file is None:
        raise InputError('give params_file (a checkpoint prefix like checkpoints/10000), '
                         'both options_file and weight_file, or neither (the bundled model)')
    log.debug('biLM from %s and %s', options_file, weight_file)
    config = read_model_config(options_file)
    embedding_source = word_embedding_file(config, weight_file, embedding_weight_file)
    vocab = read_input_vocabulary(config, os.path.dirname(options_file), vocab_file,
                                  _hdf5_embedding_rows(config, weight_file, embedding_weight_file), embedding_source)
    return load_hdf5_weights(BiLM(config, stateful=stateful, vocab=vocab), weight_file, embedding_weight_file)


def word_embedding_file(config, weight_file, embedding_weight_file=None):
    """The hdf5 that holds the model's word embedding: bilm-tf's embedding_weight_file when that is
    the embedding itself (a word model's, config.input_mode.embedding_file), else weight_file."""
    is_embedding = embedding_weight_file and config.input_mode.embedding_file == 'embedding'
    return embedding_weight_file if is_embedding else weight_file


def _hdf5_embedding_rows(config, weight_file, embedding_weight_file=None):
    name = config.input_mode.word_embedding
    return hdf5_rows(word_embedding_file(config, weight_file, embedding_weight_file), name) if name else None
