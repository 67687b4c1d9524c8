"""Token-input modes as components: what one value of ModelConfig.token_input means, in one class.

A mode (a `TokenMode` subclass, in TOKEN_INPUT_MODES through `register`) says
- which ids the biLM reads (`reads`: TokenInput's fields, in the export's input order);
- which token layers it holds (`parts`: token_layer.TOKEN_PARTS builds them, hdf5_weights.PART_LAYOUTS
  names their datasets), its word embedding's hdf5 dataset and size, and what bilm-tf's
  `embedding_weight_file` is to it;
- how an options.json says it is this mode (`recognises`, and `mark` for to_options);
- its token representation (`embed`), written once for BiLM's eager forward and StaticBiLM's
  static one: the `ops` it is given (token_layer.EagerOps, layer_math.TokenOps) hold the steps whose ops
  differ between the two (the char CNN's windows and max, the de-duplication, the word rows).
A new mode built from today's ids is one subclass and one `register` call; one needing a new kind
of id also needs its mapper (token_ids.InputMapper), its ops and its export input (deploy).

Which char ids a mode with chars reads is its `char_mapper` and `char_table`: ELMo's UTF-8 bytes
(token_ids.py) for bilm-tf's modes, Unicode characters from a model's dictionary for the `dict-`
modes of ELMoForManyLangs' models (dictionary_ids.py), whose `vocab` is then that model's Lexicon.

This module imports no Paddle (config imports it, and `paddle-elmo --help` reads config): the
Paddle work is in the ops and the layers a mode is handed.
"""
from paddle_elmo.text.token_ids import N_CHARACTERS, PAD_CHAR, CharMapper

CHAR_IDS, WORD_IDS = 'char_ids', 'word_ids'  # the ids a biLM reads: TokenInput's fields, the export's inputs
CHAR_ENCODER, WORD_EMBEDDING = 'char_encoder', 'word_embedding'  # token layers: the BiLM's attributes

# hdf5 datasets of a word embedding (hdf5_weights.hdf5_layout has the rest of the layout)
HDF5_EMBEDDING = 'embedding'  # bilm-tf's token-mode embedding [n_tokens_vocab, projection_dim]
HDF5_WORD_EMBEDDING = 'word_embedding'  # word+char's [n_tokens_vocab, word_dim] (ours only)


class TokenMode:
    """One token input mode. Class attributes:

    name: the value of ModelConfig.token_input.
    reads: the ids the biLM reads, in the export's input order (word columns first, as in the
        projection): CHAR_IDS and / or WORD_IDS.
    parts: the token layers, in the order they are created (which fixes their initial weights).
    word_embedding: the hdf5 dataset of its word embedding, None without one.
    word_embedding_dim: the ModelConfig field that gives that embedding's columns, None without one.
    embedding_file: what bilm-tf's `embedding_weight_file` (an hdf5 `embedding` of token vectors) is
        to this model: 'embedding' (its word embedding itself) or 'cache' (vectors used in place of
        the char CNN for the tokens it holds).
    layer0: what layer 0 (the context-free token representation) is, in words.
    chars_from_vocab: its char ids come from the model's dictionaries (`vocab`, which the biLM then
        keeps even without words), not from the token's bytes.
    """
    name = None
    reads = ()
    parts = ()
    word_embedding = None
    word_embedding_dim = None
    embedding_file = 'cache'
    layer0 = ''
    chars_from_vocab = False

    @property
    def chars(self):
        """The mode reads char ids (a char CNN)."""
        return CHAR_IDS in self.reads

    @property
    def words(self):
        """The mode reads word ids (an embedding over its input vocabulary)."""
        return WORD_IDS in self.reads

    def recognises(self, options):
        """Whether a bilm-tf options dict is this mode's. A mode of ours names itself under
        `token_input` (what `mark` writes); bilm-tf's modes are told by the sections present."""
        return options.get('token_input') == self.name

    def mark(self, options):
        """Write into options (ModelConfig.to_options') what `recognises` reads."""
        options['token_input'] = self.name

    def projection_word_columns(self, config):
        """Word embedding columns that go into the char encoder's projection beside its features."""
        return 0

    def char_mapper(self, config, vocab, max_cache):
        """Tokens -> the char ids this mode reads (a token_ids.CharMapper): ELMo's UTF-8 byte ids."""
        return CharMapper(config.max_characters_per_token, max_cache)

    def char_table(self, vocab):
        """(rows of the char embedding, shifted id of the padding inside a token) of a model with chars."""
        return N_CHARACTERS, PAD_CHAR + 1

    def embed(self, bilm, ids, ops):
        """The token representations -> [tokens, projection_dim] (anything at padding: the caller
        zeroes it).

        bilm: the BiLM whose `parts` to read; ids: {name in `reads`: int64 ids flattened to
        [tokens] (word ids: vocabulary id + 1, 0 = padding) or [tokens, max_chars] (char ids)};
        ops: the forward's ops (layer_math.TokenOps: a static program; token_layer.EagerOps: BiLM's).
        """
        raise NotImplementedError

    @staticmethod
    def char_tokens(bilm, char_ids, ops):
        """The char encoder on each distinct token: char CNN, highway, projection -> [tokens, P]."""
        encoder = bilm.char_encoder
        return ops.per_distinct_token(char_ids, lambda c: encoder.cnn(c, ops), lambda x: encoder.project_highway(x, ops),
                                      bilm.projection_dim, encoder.pad_id)


class CharMode(TokenMode):
    """bilm-tf's char input: char CNN + highway + projection (a pure bilm-tf options file)."""
    name, reads, parts, layer0 = 'char', (CHAR_IDS,), (CHAR_ENCODER,), 'char CNN'

    def recognises(self, options):
        return 'char_cnn' in options and not _word_dim(options)

    def mark(self, options):
        pass

    def embed(self, bilm, ids, ops):
        return self.char_tokens(bilm, ids[CHAR_IDS], ops)


class WordMode(TokenMode):
    """bilm-tf's token mode: a word embedding [vocabulary, projection_dim], row i for the
    vocabulary's id i, no padding row, no char CNN (a file without `char_cnn`)."""
    name, reads, parts, layer0 = 'word', (WORD_IDS,), (WORD_EMBEDDING,), 'word embedding'
    word_embedding, word_embedding_dim, embedding_file = HDF5_EMBEDDING, 'projection_dim', 'embedding'

    def recognises(self, options):
        return 'char_cnn' not in options

    def mark(self, options):
        pass

    def embed(self, bilm, ids, ops):
        return ops.word_rows(bilm.word_embedding, ids[WORD_IDS])


class WordCharMode(TokenMode):
    """ELMoForManyLangs' composition: a --word_dim word row beside the highway output of the
    token's chars, then the char encoder's projection (word columns first). Two tokens with the
    same chars may differ in word id (one cut to max_chars, or an unknown word and <UNK>), so
    the projection runs per position, after the char CNN ran per distinct char sequence."""
    name, reads, parts, layer0 = 'word+char', (WORD_IDS, CHAR_IDS), (CHAR_ENCODER, WORD_EMBEDDING), \
        'word embedding + char CNN'
    word_embedding, word_embedding_dim = HDF5_WORD_EMBEDDING, 'word_dim'

    def recognises(self, options):
        return 'char_cnn' in options and bool(_word_dim(options))

    def mark(self, options):
        pass

    def projection_word_columns(self, config):
        return config.word_dim

    def embed(self, bilm, ids, ops):
        encoder = bilm.char_encoder
        features = ops.per_distinct_token(ids[CHAR_IDS], lambda c: encoder.cnn(c, ops),
                                          lambda x: encoder.highway(x, ops), bilm.config.n_filters, encoder.pad_id)
        return ops.word_beside_chars(ops.word_rows(bilm.word_embedding, ids[WORD_IDS]), features, encoder.projection)


class DictionaryChars:
    """A mixin for the modes of ELMoForManyLangs' models: Unicode-character ids from the model's
    char.dic (its `vocab` is a dictionary_ids.Lexicon), its word ids from word.dic; named in
    `token_input`, as modes of ours are."""
    chars_from_vocab = True

    def recognises(self, options):
        return TokenMode.recognises(self, options)

    def mark(self, options):
        TokenMode.mark(self, options)
        options.get('char_cnn', {}).pop('n_characters', None)  # bilm-tf's byte count: its chars are char.dic's

    def char_mapper(self, config, vocab, max_cache):
        return _lexicon(self, vocab).char_mapper(max_cache)

    def char_table(self, vocab):
        lexicon = _lexicon(self, vocab)
        return lexicon.char_rows, lexicon.pad_id


def _lexicon(mode, vocab):
    if vocab is None or not hasattr(vocab, 'char_mapper'):
        raise ValueError(f'a {mode.name} model needs its dictionaries (vocab=: a dictionary_ids.Lexicon)')
    return vocab


class DictionaryCharMode(DictionaryChars, CharMode):
    """ELMoForManyLangs' characters-only model (word_dim 0): char CNN + highway + projection over
    the Unicode characters of char.dic."""
    name, layer0 = 'dict-char', 'char CNN (characters from char.dic)'


class DictionaryWordCharMode(DictionaryChars, WordCharMode):
    """ELMoForManyLangs' model with words: word.dic's word row beside the highway output of
    char.dic's characters, then the projection (word columns first)."""
    name, layer0 = 'dict-word+char', 'word embedding + char CNN (word.dic, char.dic)'


TOKEN_INPUT_MODES = {}


def register(mode):
    """Add a TokenMode (an instance) to TOKEN_INPUT_MODES under its name -> mode. A later mode is
    asked first whether it recognises an options file, so a mode of ours that marks its files is
    told apart from bilm-tf's ones they resemble."""
    if not mode.name or not mode.reads or not set(mode.reads) <= {CHAR_IDS, WORD_IDS}:
        raise ValueError(f'token mode {mode.name!r}: a name and reads among {CHAR_IDS}, {WORD_IDS} are needed')
    TOKEN_INPUT_MODES[mode.name] = mode
    return mode


def recognised_mode(options):
    """The registered mode whose options file this is, or None."""
    return next((mode for mode in reversed(list(TOKEN_INPUT_MODES.values())) if mode.recognises(options)), None)


def _word_dim(options):
    section = options.get('word_embedding')
    return section.get('dim') if isinstance(section, dict) else None


register(CharMode())
register(WordMode())
register(WordCharMode())
register(DictionaryCharMode())
register(DictionaryWordCharMode())
