"""`ModelConfig`: the biLM's shape, and its `options.json` codec (the recipe and presets: recipe.py).

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
from dataclasses import dataclass, field
from typing import List, Optional

from paddle_elmo.text.token_ids import N_CHARACTERS
from paddle_elmo.model.token_modes import TOKEN_INPUT_MODES, recognised_mode
from paddle_elmo.text.tokenizers import TOKENIZERS
from paddle_elmo.fileio import InputError


ORIGINAL_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]

# bilm-tf's and ours (the flag's choices); the dict- modes come with an ELMoForManyLangs model's dictionaries
TOKEN_INPUTS = tuple(name for name, mode in TOKEN_INPUT_MODES.items() if not mode.chars_from_vocab)


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


MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(ModelConfig))
