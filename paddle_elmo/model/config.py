"""The two configs: `ModelConfig` (the biLM's shape) and `Recipe` (how it is pretrained).

One field per setting, with its help text; the field name is run_pretrain.py's flag
(`--cell_dim` is `ModelConfig.cell_dim`), and a preset is a dict of field names. Only where a file
is read or written does a config meet bilm-tf's names: `ModelConfig.to_options()` /
`from_options()` convert to and from the `options.json` layout (`cell_dim` is `lstm.dim`), and the
Recipe fields that bilm-tf's `bin/train_elmo.py` also writes into `options.json` go there under its
names (BILM_TF_TRAINING_KEYS); run_configs.py reads and writes the files.

Each value of `ModelConfig.token_input` is a component of token_modes.py (TOKEN_INPUT_MODES: the
ids it reads, its token layers and their hdf5 names, how its options file is recognised, its token
representation): `config.input_mode`. The config delegates to it what differs by mode.
"""
import copy
import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional

from paddle_elmo.token_ids import N_CHARACTERS
# the ids a biLM reads and its word embedding's hdf5 datasets are the modes' (importers find them here too)
from paddle_elmo.token_modes import (CHAR_IDS, HDF5_EMBEDDING, HDF5_WORD_EMBEDDING, TOKEN_INPUT_MODES,  # noqa: F401
                                     WORD_IDS, recognised_mode)
from paddle_elmo.tokenizers import TOKENIZERS
from paddle_elmo.fileio import InputError

log = logging.getLogger(__name__)

ORIGINAL_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]

TOKEN_INPUTS = tuple(TOKEN_INPUT_MODES)  # bilm-tf's and ours (the flag's choices)


def setting(default, help):
    """A config field with its help text (argparse shows it for the flag of the same name)."""
    if isinstance(default, list):
        return field(default_factory=lambda: copy.deepcopy(default), metadata={'help': help})
    return field(default=default, metadata={'help': help})


@dataclass
class ModelConfig:
    """The biLM: a token representation (char CNN + highway + projection, a word embedding, or
    both), then L projected LSTM layers per direction.

    Defaults are the original ELMo (Peters et al. 2018). In options.json each field lives at the
    path OPTION_PATHS gives; `token_input` is told by which sections the file has (to_options).
    """
    token_input: str = setting('char', "token representation: char (bilm-tf's char CNN), word (bilm-tf's token mode: "
                               "an embedding [vocabulary, projection_dim], no char CNN) or word+char (a --word_dim "
                               "word embedding concatenated with the char CNN + highway output, then projected, as "
                               "ELMoForManyLangs); word input reads the --vocab_file ids, an unknown word is <UNK>")
    word_dim: int = setting(0, 'word+char: size of the word embedding (word: it is projection_dim; char: unused)')
    projection_dim: int = setting(512, 'LSTM projection and token representation size')
    cell_dim: int = setting(4096, 'LSTM cells per layer')
    num_layers: int = setting(2, 'LSTM layers per direction')
    cell_clip: Optional[float] = setting(3.0, 'clip LSTM cells to +-this (0 or none: no clipping)')
    proj_clip: Optional[float] = setting(3.0, 'clip projected LSTM states to +-this (0 or none: no clipping)')
    use_skip_connections: bool = setting(True, 'residual connection around LSTM layers after the first')
    char_embed_dim: int = setting(16, 'char embedding size (floats per char)')
    cnn_filters: List[List[int]] = setting(ORIGINAL_FILTERS, 'JSON list of [width in characters (UTF-8 bytes), n_filters] for the char CNN')
    num_highways: int = setting(2, 'highway layers after the char CNN')
    activation: str = setting('relu', 'char CNN activation: relu or tanh')
    max_characters_per_token: int = setting(50, 'characters per token, counted in UTF-8 bytes, boundary marks included; '
                                           'longer tokens are cut')
    dropout: float = setting(0.1, 'dropout probability on the LSTM inputs and before the softmax (training only)')
    tokenizer: str = setting('whitespace', "the tokenizer that turns raw text into this model's tokens (whitespace, "
                             'moses, jieba or chars), recorded for every command that gives the model raw text; '
                             'the corpus must already be in its tokens, one sentence per line split on spaces '
                             '(paddle-elmo build-vocab --tokenizer X --output_corpus FILE makes them once from raw text)')

    def __post_init__(self):
        mode = TOKEN_INPUT_MODES.get(self.token_input)
        if mode is not None and not mode.chars:  # no char CNN: its fields are unused and kept at their
            for name, (path, _) in OPTION_PATHS.items():  # defaults, so that options.json round-trips exactly
                if path[0] == 'char_cnn':
                    setattr(self, name, _field_default(name))

    @property
    def n_filters(self):
        return sum(n for _, n in self.cnn_filters)

    @property
    def input_mode(self):
        """The token_modes.TokenMode of token_input: the ids it reads, its layers, its hdf5 names."""
        return TOKEN_INPUT_MODES[self.token_input]

    @property
    def has_chars(self):
        """The model reads char ids (a char CNN)."""
        return self.input_mode.chars

    @property
    def has_words(self):
        """The model reads word ids (an embedding over its input vocabulary)."""
        return self.input_mode.words

    @property
    def word_embedding_dim(self):
        """Columns of the word embedding: projection_dim (word), word_dim (word+char), 0 (char)."""
        field_name = self.input_mode.word_embedding_dim
        return getattr(self, field_name) if field_name else 0

    def to_options(self):
        """-> the bilm-tf options dict (the model part of options.json).

        A char model is a pure bilm-tf char file and a word model a pure bilm-tf token-mode file
        (no `char_cnn`; model_io adds `n_tokens_vocab`, the vocabulary's size). Our own keys
        (OUR_OPTIONS: word+char's `word_embedding.dim`, `tokenizer`) are written only when they
        differ from their absent value.
        """
        options = {'bidirectional': True, 'lstm': {}}
        if self.has_chars:
            options['char_cnn'] = {'n_characters': N_CHARACTERS}
        for name, (path, absent) in OPTION_PATHS.items():
            value = getattr(self, name)
            if (path[0] == 'char_cnn' and not self.has_chars) or (name in OUR_OPTIONS and value == absent):
                continue
            _put(options, path, copy.deepcopy(value))
        self.input_mode.mark(options)
        return options

    @classmethod
    def from_options(cls, options, source='options'):
        """A bilm-tf / AllenNLP options dict -> ModelConfig; InputError naming `source` and the key.

        Keys that are not the model's (bilm-tf's training keys, ours in older checkpoints) are
        ignored; optional keys take the value bilm-tf assumes when they are absent. A file without
        `char_cnn` is bilm-tf's token mode (token_input word); one with `word_embedding.dim` too is
        word+char."""
        if not isinstance(options.get('lstm'), dict):
            raise InputError(f'{source}: missing section "lstm" (a bilm-tf options file needs "lstm", and '
                             f'"char_cnn" unless the model reads words)')
        if not options.get('bidirectional', True):
            raise InputError(f'{source}: only bidirectional models are supported')
        if options.get('share_embedding_softmax'):
            raise InputError(f'{source}: share_embedding_softmax (one matrix for the word embedding and the '
                             f'softmax) is not supported')
        if 'char_cnn' not in options and _get(options, ('word_embedding', 'dim')):
            raise InputError(f'{source}: "word_embedding.dim" (word+char input) needs "char_cnn"')
        mode = recognised_mode(options)
        if mode is None:
            raise InputError(f'{source}: "token_input" must be one of {", ".join(TOKEN_INPUT_MODES)}, got '
                             f'{options.get("token_input")!r}')
        has_chars = mode.chars
        if has_chars:
            if not isinstance(options['char_cnn'], dict):
                raise InputError(f'{source}: "char_cnn" must be an object')
            n_characters = options['char_cnn'].get('n_characters', N_CHARACTERS)
            if n_characters not in (261, 262):
                raise InputError(f'{source}: char_cnn.n_characters must be 261 or 262, got {n_characters}')
        values = {}
        for name, (path, absent) in OPTION_PATHS.items():
            value = _get(options, path)
            if path[0] == 'char_cnn' and not has_chars:
                value = _field_default(name)  # a word model has no char CNN: the field is unused
            elif value is None and absent is REQUIRED:
                raise InputError(f'{source}: missing "{".".join(path)}"')
            values[name] = absent if value is None else value
        values['token_input'] = mode.name
        if not has_chars:
            values['word_dim'] = 0
        return cls(**values).checked(source)

    def checked(self, source=None):
        """self, after checking the values; InputError naming the flag, or `source` (a file) and
        the setting with its options.json path."""
        def bad(name, expected, value):
            path = '.'.join(OPTION_PATHS[name][0]) if name in OPTION_PATHS else 'the sections present'
            where = f'--{name}' if source is None else f'{source}: {name} ({path})'
            return InputError(f'{where} must be {expected}, got {value!r}')
        if self.token_input not in TOKEN_INPUT_MODES:
            raise bad('token_input', ' or '.join(TOKEN_INPUT_MODES), self.token_input)
        sized_by_word_dim = self.input_mode.word_embedding_dim == 'word_dim'  # (word+char's)
        if sized_by_word_dim and self.word_dim < 1:
            raise bad('word_dim', f'>= 1 with token_input {self.token_input}', self.word_dim)
        if not sized_by_word_dim and self.word_dim:
            raise bad('word_dim', f'0 with token_input {self.token_input} (a word model\'s embedding has '
                      f'projection_dim columns)', self.word_dim)
        if self.activation not in ('relu', 'tanh'):
            raise bad('activation', '"relu" or "tanh"', self.activation)
        for entry in self.cnn_filters:
            if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and
                    1 <= entry[0] <= self.max_characters_per_token and entry[1] >= 1):
                raise bad('cnn_filters', f'[width, n] entries with 1 <= width <= max_characters_per_token '
                          f'({self.max_characters_per_token}) and n >= 1', entry)
        for name in ('projection_dim', 'cell_dim', 'num_layers', 'char_embed_dim', 'max_characters_per_token'):
            if getattr(self, name) < 1:
                raise bad(name, '>= 1', getattr(self, name))
        if self.num_highways < 0:
            raise bad('num_highways', '>= 0', self.num_highways)
        if not 0 <= self.dropout < 1:
            raise bad('dropout', 'in [0, 1)', self.dropout)
        if self.tokenizer not in TOKENIZERS:
            raise bad('tokenizer', f'one of {", ".join(TOKENIZERS)}', self.tokenizer)
        return self


REQUIRED = object()
# Each ModelConfig field but token_input (told by the sections present): its path in options.json, and its value when a file leaves it out
# (REQUIRED: an error), as bilm-tf and AllenNLP read those files.
OPTION_PATHS = {
    'projection_dim': (('lstm', 'projection_dim'), REQUIRED),
    'cell_dim': (('lstm', 'dim'), REQUIRED),
    'num_layers': (('lstm', 'n_layers'), REQUIRED),
    'cell_clip': (('lstm', 'cell_clip'), None),
    'proj_clip': (('lstm', 'proj_clip'), None),
    'use_skip_connections': (('lstm', 'use_skip_connections'), False),
    'char_embed_dim': (('char_cnn', 'embedding', 'dim'), REQUIRED),
    'cnn_filters': (('char_cnn', 'filters'), REQUIRED),
    'num_highways': (('char_cnn', 'n_highway'), REQUIRED),
    'activation': (('char_cnn', 'activation'), 'relu'),
    'max_characters_per_token': (('char_cnn', 'max_characters_per_token'), REQUIRED),
    'dropout': (('dropout',), 0.0),
    'word_dim': (('word_embedding', 'dim'), 0),  # word+char only
    'tokenizer': (('tokenizer',), 'whitespace'),
}
# Keys of ours, not bilm-tf's: to_options writes them only when they differ from their absent value,
# so that char and word models keep pure bilm-tf options files.
OUR_OPTIONS = ('word_dim', 'tokenizer')
assert set(OPTION_PATHS) | {'token_input'} == {f.name for f in dataclasses.fields(ModelConfig)}


def _field_default(name):
    f = ModelConfig.__dataclass_fields__[name]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _get(options, path):
    for key in path:
        options = options.get(key) if isinstance(options, dict) else None
    return options


def _put(options, path, value):
    for key in path[:-1]:
        options = options.setdefault(key, {})
    options[path[-1]] = value


@dataclass
class Recipe:
    """How the biLM is pretrained: data, batches, optimisation, length and bookkeeping.

    Defaults are bilm-tf's recipe (the `original` preset). A checkpoint directory keeps it in two
    files (run_configs.py): the fields of BILM_TF_TRAINING_KEYS in options.json under bilm-tf's
    names, as its train_elmo.py writes them, the rest in recipe.json. Resuming reads both; a flag
    given explicitly overrides a field.
    """
    preset: str = setting('original', 'the preset the run started from (its values, then the explicit flags)')
    train_data_path: Optional[str] = setting(None, "training files, a glob such as 'data/train/*'")
    vocab_file: Optional[str] = setting(None, 'the model\'s vocabulary: one token per line, most frequent first '
                                      '(line i = softmax row i and, for word input, embedding row i)')
    dev_data_path: Optional[str] = setting(None, 'held-out glob: full-softmax perplexity every --eval_freq steps')
    n_train_tokens: Optional[int] = setting(None, 'training tokens per epoch (default: counted once from the data '
                                            'and cached in the cache directory, never beside the data)')
    batch_size: int = setting(128, 'rows per batch per device')
    unroll_steps: int = setting(20, 'tokens per row per batch (BPTT window)')
    n_negative_samples: int = setting(8192, 'sampled-softmax candidates (words) per batch')
    optimizer: str = setting('adagrad', "adagrad: bilm-tf's (accumulators from 1.0); adam: with linear warm-up")
    lr: float = setting(0.2, 'learning rate')
    warmup_steps: int = setting(0, 'adam: linear warm-up steps')
    adam_beta2: float = setting(0.999, "adam: the second moment's decay per update (0.999: Adam's paper; lower "
                                'forgets early gradients sooner)')
    lr_decay: str = setting('none', "not bilm-tf's: after warm-up the learning rate falls to lr x lr_final over "
                            "lr_decay_steps updates, along a line (linear) or a half cosine (cosine), then stays; "
                            "none keeps it constant (bilm-tf)")
    lr_decay_steps: int = setting(0, 'updates over which the learning rate decays (0: the run\'s steps after '
                                  'warm-up, --max_steps or all the epochs\', fixed when the run starts)')
    lr_final: float = setting(0.1, 'the learning rate at the end of the decay, as a share of lr')
    max_grad_norm: float = setting(10.0, 'global gradient-norm clip (of the gradient of loss x unroll_steps, '
                                   'as bilm-tf)')
    softmax_bias_init: str = setting('zero', "a new softmax's bias (a new run's, or a run's from weights without one "
                                     "that fits): zero (bilm-tf) or unigram (not bilm-tf's: each word's log share of "
                                     "the training targets, counted from the first 20M tokens, so the first steps "
                                     "need not learn word frequencies)")
    reset_state_at_sentence_start: bool = setting(
        False, "not bilm-tf's: a row whose window begins with a new sentence starts from a zero LSTM state, as "
        "embedding does (bilm-tf never resets, and its models can fail from a zero state)")
    seed: int = setting(0, 'seeds data order, init, sampling and dropout')
    word_vectors: Optional[str] = setting(None, 'word and word+char input: initialise the word embedding rows of the '
                                          'words this file has (word2vec .bin/.txt, gensim KeyedVectors, .npz with '
                                          '"words" and "vectors"); the other rows as bilm-tf initialises them')
    freeze_word_embeddings: bool = setting(False, 'word and word+char input: keep the word embedding as it starts '
                                           '(e.g. from --word_vectors)')
    freeze_bilm: bool = setting(False, 'train the softmax only, the biLM keeping the weights it starts from (with '
                                '--init_from_weights: a softmax for weights released without one, for perplexity '
                                'and prediction on your vocabulary)')
    epochs: int = setting(10, 'passes over n_train_tokens')
    max_steps: Optional[int] = setting(None, 'stop after this many steps (batches) in all (overrides --epochs)')
    save_freq: int = setting(10000, 'checkpoint every N steps (batches)')
    log_freq: int = setting(100, 'log the training loss every N steps (batches); 100, not the '
                            'classifiers\' 0 (once per epoch): a pretraining epoch is thousands of steps')
    eval_freq: int = setting(0, 'with --dev_data_path: evaluate every N steps (0: only at the end)')
    eval_minutes: float = setting(0.0, 'with --dev_data_path: evaluate every this many minutes of training (0: off)')
    eval_max_tokens: int = setting(51200, 'target tokens of --dev_data_path read by each evaluation during '
                                   'training (0: all; paddle-elmo eval reads all by default)')
    world_size: int = setting(1, 'processes that trained (recorded; resuming needs as many)')
    dropout_masks: str = setting('kernel', "how the run draws its dropout masks (recorded when it starts, so that a "
                                 "resume draws as it did): kernel (the CPU kernel's) or paddle (Paddle's dropout: "
                                 "on a GPU, with the kernels off, and in checkpoints made before the kernel)")
    init_options_file: Optional[str] = setting(None, 'the options.json of the weights the run started from '
                                               '(recorded from --init_from_weights / --options_file)')
    init_weight_file: Optional[str] = setting(None, 'the weights.hdf5 the run started from (recorded)')
    from_weights_lr_scale: float = setting(0.1, 'a run that starts from pretrained weights (--init_from_weights, '
                                           '--options_file) and trains them: its learning rate is --lr x this '
                                           '(a fresh optimizer at the full rate undoes the weights within a few '
                                           'steps); 1 or off: the full rate (a new model, and --freeze_bilm, have '
                                           'the full rate)')

    def checked(self):
        """self, after checking the values; InputError naming the flag."""
        for name in ('batch_size', 'unroll_steps', 'epochs', 'save_freq', 'log_freq', 'n_negative_samples'):
            if getattr(self, name) < 1:
                raise InputError(f'--{name} must be >= 1, got {getattr(self, name)}')
        for name in ('lr', 'max_grad_norm', 'from_weights_lr_scale'):
            if not getattr(self, name) > 0:
                raise InputError(f'--{name} must be > 0, got {getattr(self, name)}')
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f'--optimizer must be one of {", ".join(OPTIMIZERS)}, got {self.optimizer!r}')
        if self.lr_decay not in LR_DECAYS:
            raise InputError(f'--lr_decay must be one of {", ".join(LR_DECAYS)}, got {self.lr_decay!r}')
        if self.softmax_bias_init not in SOFTMAX_BIAS_INITS:
            raise InputError(f'--softmax_bias_init must be one of {", ".join(SOFTMAX_BIAS_INITS)}, '
                             f'got {self.softmax_bias_init!r}')
        if self.dropout_masks not in DROPOUT_MASKS:  # recorded, not a flag: a recipe.json edited by hand
            raise InputError(f'recipe dropout_masks must be one of {", ".join(DROPOUT_MASKS)}, '
                             f'got {self.dropout_masks!r}')
        if not 0.0 < self.adam_beta2 < 1.0:
            raise InputError(f'--adam_beta2 must be within (0, 1), got {self.adam_beta2}')
        if self.lr_decay_steps < 0 or not 0.0 <= self.lr_final <= 1.0:
            raise InputError(f'--lr_decay_steps must be >= 0 and --lr_final within [0, 1], got '
                             f'{self.lr_decay_steps} and {self.lr_final}')
        return self


OPTIMIZERS = ('adagrad', 'adam')
LR_DECAYS = ('none', 'linear', 'cosine')
SOFTMAX_BIAS_INITS = ('zero', 'unigram')
DROPOUT_MASKS = ('kernel', 'paddle')  # kernels.Kernels.dropout_masks
# Recipe fields that bilm-tf's train_elmo.py writes into options.json, under its names. n_tokens_vocab
# (the vocabulary's size) goes there too; it is the data's, not a setting.
BILM_TF_TRAINING_KEYS = {'batch_size': 'batch_size', 'unroll_steps': 'unroll_steps',
                         'n_negative_samples': 'n_negative_samples_batch', 'n_train_tokens': 'n_train_tokens',
                         'epochs': 'n_epochs', 'max_grad_norm': 'all_clip_norm_val', 'lr': 'learning_rate'}

# Each preset is a full model + optimisation recipe (field names of both configs); an explicit
# flag overrides one value of it.
PRESETS = {
    # Peters et al. (2018) / bilm-tf's 1B Word model and recipe.
    'original': dict(projection_dim=512, cell_dim=4096, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                     use_skip_connections=True, char_embed_dim=16, cnn_filters=ORIGINAL_FILTERS, num_highways=2,
                     dropout=0.1, n_negative_samples=8192, batch_size=128, unroll_steps=20, lr=0.2,
                     max_grad_norm=10.0, optimizer='adagrad', warmup_steps=0,
                     reset_state_at_sentence_start=False, softmax_bias_init='zero'),
    # AllenNLP's elmo_2x1024_128_2048cnn_1xhighway, trained with bilm-tf's recipe.
    'small': dict(projection_dim=128, cell_dim=1024, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                  use_skip_connections=True, char_embed_dim=16, cnn_filters=ORIGINAL_FILTERS, num_highways=1,
                  dropout=0.1, n_negative_samples=8192, batch_size=128, unroll_steps=20, lr=0.2,
                  max_grad_norm=10.0, optimizer='adagrad', warmup_steps=0,
                  reset_state_at_sentence_start=False, softmax_bias_init='zero'),
    # The most held-out perplexity per hour of a 2-core CPU (BENCHMARKS.md, "Screens"): the small
    # model with a narrower char CNN and LSTM and fewer negatives (more tokens/s), Adam with
    # warm-up, and rows that begin a sentence start from a zero state; its softmax bias starts at
    # the unigram prior (BENCHMARKS.md, "A better recipe per token": -11.7% at 1,500 steps, free).
    'budget': dict(projection_dim=128, cell_dim=256, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                   use_skip_connections=True, char_embed_dim=16,
                   cnn_filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 128]], num_highways=1,
                   dropout=0.1, n_negative_samples=1024, batch_size=64, unroll_steps=20, lr=0.004,
                   max_grad_norm=10.0, optimizer='adam', warmup_steps=100,
                   reset_state_at_sentence_start=True, softmax_bias_init='unigram'),
}

MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(ModelConfig))
RECIPE_FIELDS = tuple(f.name for f in dataclasses.fields(Recipe))


def split_fields(values):
    """{field: value} of both configs -> ({ModelConfig fields}, {Recipe fields})."""
    unknown = set(values) - set(MODEL_FIELDS) - set(RECIPE_FIELDS)
    if unknown:
        raise InputError(f'unknown settings: {", ".join(sorted(unknown))}')
    return ({k: v for k, v in values.items() if k in MODEL_FIELDS},
            {k: v for k, v in values.items() if k in RECIPE_FIELDS})


def from_preset(preset, given):
    """A new run: the preset's values, then the settings given explicitly -> (ModelConfig, Recipe)."""
    if preset not in PRESETS:
        raise InputError(f'--preset must be one of {", ".join(PRESETS)}, got {preset!r}')
    model, recipe = split_fields({**copy.deepcopy(PRESETS[preset]), **given, 'preset': preset})
    return ModelConfig(**model).checked(), Recipe(**recipe).checked()


def for_resume(model, recipe, given, source):
    """A resumed run: the checkpoint's configs, with the training settings given explicitly (and,
    with `preset` among them, that preset's training values) -> (ModelConfig, Recipe).

    The checkpoint defines the model: a model setting given that differs from it is an InputError
    naming each such flag, its value and the checkpoint's.
    """
    given = dict(given)
    if 'preset' in given:
        _, preset_recipe = split_fields(PRESETS[given['preset']])
        given = {**preset_recipe, **given}
    given_model, given_recipe = split_fields(given)
    _check_model_flags(model, given_model, f'{source} defines the model being resumed', 'checkpoint',
                       'Drop them, or start a new --save_dir without --init_from_ckpt')
    return model, dataclasses.replace(recipe, **given_recipe).checked()


def for_weights(model, given, source):
    """A new run from pretrained weights (domain adaptation): the file's model, the recipe of
    --preset (default original) and the flags given -> (ModelConfig, Recipe).

    A model setting given that differs from the file's is an InputError naming each such flag;
    dropout is a training setting here (a released options.json often leaves it out): the flag's,
    else the preset's; so is tokenizer, the adaptation corpus's: the flag's, else the file's.
    """
    given = dict(given)
    preset = given.pop('preset', 'original')
    given_model, given_recipe = split_fields(given)
    dropout = given_model.pop('dropout', None)
    tokenizer = given_model.pop('tokenizer', model.tokenizer)  # the new corpus's, which may differ
    _check_model_flags(model, given_model, f'{source} defines the model being adapted', 'weights',
                       'Drop them: the weights fix the model')
    _, recipe = from_preset(preset, given_recipe)  # (checks the preset's name)
    dropout = PRESETS[preset]['dropout'] if dropout is None else dropout
    return dataclasses.replace(model, dropout=dropout, tokenizer=tokenizer).checked(), recipe


def for_run(given, resumed=None, weights=None):
    """A pretraining run's configs, whichever way it starts -> (ModelConfig, Recipe): a new run's
    from `preset` (among `given`, default original) and the settings given; a resumed run's
    (for_resume) or a run from weights (for_weights). The paths the recipe names become absolute,
    so that a resume from another directory reads the same data.

    given: the settings given explicitly, {field: value}; resumed: (ModelConfig, Recipe, source) as
    read from the checkpoint a run resumes, source naming its options.json; weights:
    (ModelConfig, options_file, weight_file, vocabulary_file) of the weights a new run starts from,
    vocabulary_file the vocab.txt beside them or None. InputError for settings that cannot go together.
    """
    given = dict(given)
    check_one_start(resumed is not None, weights is not None)
    if weights is not None:
        model, options_file, weight_file, vocabulary_file = weights
        model, recipe = for_weights(model, given, options_file)
        recipe = dataclasses.replace(recipe, init_options_file=options_file, init_weight_file=weight_file)
        recipe = _with_the_weights_vocabulary(model, recipe, vocabulary_file)
    elif resumed is not None:
        model, recipe, source = resumed
        model, recipe = for_resume(model, recipe, given, source)
    else:
        model, recipe = from_preset(given.pop('preset', 'original'), given)
    for name in ('train_data_path', 'vocab_file'):
        if getattr(recipe, name) is None:
            raise InputError(f'--{name} is required' + (f' ({resumed[2]} was written before recipe.json recorded '
                                                         f'the data)' if resumed is not None else ''))
    if (recipe.word_vectors or recipe.freeze_word_embeddings) and not model.input_mode.words:
        flag = '--word_vectors' if recipe.word_vectors else '--freeze_word_embeddings'
        raise InputError(f'{flag} is for a model with word input (--token_input word or word+char); this one '
                         f'reads chars only')
    if recipe.word_vectors and (resumed or weights) and 'word_vectors' in given:
        raise InputError('--word_vectors initialises a new model; a resumed or adapted run has its weights')
    return model, dataclasses.replace(recipe, **{name: os.path.abspath(getattr(recipe, name)) for name in
                                                 ('train_data_path', 'vocab_file', 'dev_data_path', 'word_vectors')
                                                 if getattr(recipe, name) is not None})


def check_one_start(resumed, from_weights):
    """InputError when a run would both resume a checkpoint and start from weights (bools)."""
    if resumed and from_weights:
        raise InputError('give --init_from_ckpt (resume a run) or --init_from_weights / --options_file '
                         '(start a new one from weights), not both')


def _with_the_weights_vocabulary(model, recipe, vocabulary_file):
    """A word or word + char model's input table is tied to its vocabulary, which is then also the
    softmax's: without --vocab_file, a run from its weights reads the vocab.txt beside them."""
    if recipe.vocab_file is None and model.input_mode.words and vocabulary_file is not None:
        log.info('--vocab_file: %s (the word table\'s vocabulary, beside the weights)', vocabulary_file)
        return dataclasses.replace(recipe, vocab_file=vocabulary_file)
    return recipe


def _check_model_flags(model, given_model, what, theirs, advice):
    differing = [f'--{name} {value} ({theirs}: {getattr(model, name)})'
                 for name, value in given_model.items() if value != getattr(model, name)]
    if differing:
        raise InputError(f'{what}, and these flags differ from it: {"; ".join(differing)}. {advice}')
