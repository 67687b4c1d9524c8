"""Command-line options shared by the scripts, the one way they report user errors, and their log.

A user's error must be the one line on stderr: Paddle's C++ info logs are off because importing the
package sets GLOG_minloglevel before anything of ours imports Paddle (runtime.py), whatever a
script imports first.

Output: results on stdout (print, in the commands); everything else is the log, on stderr: the
`paddle_elmo` logger's records (INFO lines as they are, others after their level's name:
`warning: ...`), and tqdm bars. `run()` sets that up for the command's duration, and every
command's --quiet (warnings and errors only, no progress bars) or --verbose (debug lines too)
sets the level once parsed. Under paddle.distributed.launch only rank 0 logs INFO lines.
"""
import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import typing

from paddle_elmo import runtime
from paddle_elmo.config import MODEL_FIELDS, OPTIMIZERS, PRESETS, TOKEN_INPUTS, ModelConfig, Recipe
from paddle_elmo.tokenizers import TOKENIZERS
from paddle_elmo.fileio import InputError, missing_package


# ---- the vocabulary of flags ----------------------------------------------------------------
# One name per concept across every command, one meaning per name (README's "Flags" table is made
# from this by paddle_elmo.cli.update_readme, `make flags-table`; tests/test_flags.py holds every
# parser to it).
# name -> (the concept, with its units; aliases: the PaddleNLP example's names where ours differ).
# A switch is `--NAME` / `--no_NAME` (Switch); its table name is NAME.
FLAGS = {
    # the model
    'model': ('the model, in one value: a model name (bundled, small, medium, original, '
              'original-5.5b; AllenNLP\'s downloaded once into the cache), a directory with options.json + '
              'weights.hdf5, a checkpoint directory or a checkpoint prefix DIR/N', ()),
    'init_from_ckpt': ('a checkpoint of ours: DIR/N without the .pdparams suffix (DIR holds options.json); '
                       'pretrain resumes from it, the other commands load it', ()),
    'options_file': ('the model as bilm-tf / AllenNLP files: its options.json (with --weight_file); pretrain '
                     'starts a new run from it',
                     ('options-file',)),  # allennlp elmo's spelling
    'weight_file': ('the model as bilm-tf / AllenNLP files: its weights.hdf5 (with --options_file)',
                    ('weight-file',)),
    'vocab_file': ('the model\'s vocabulary file, one token per line, most frequent first (softmax rows and, for '
                   'word input, embedding rows); predict, eval and dump default to the one the model records', ()),
    'init_from_weights': ('pretrain: start a new run from the weights in this directory (options.json + '
                          'weights.hdf5) or of a model name (bundled, original, ...)', ()),
    'inference_model': ('a directory written by export-inference, as the model', ()),
    'inference_backend': ('what runs an --inference_model: paddle or onnxruntime', ()),
    'embedding_weight_file': ('an hdf5 of token embeddings (dump --output_file) used in place of the char CNN', ()),
    # data
    'train_data_path': ('training corpus files (a glob): one sentence per line, tokens separated by spaces', ()),
    'dev_data_path': ('held-out corpus files (a glob), for perplexity', ()),
    'data_dir': ('the classification data: a directory with the positive and negative files', ()),
    'pos_file': ('the positive sentences\' file in --data_dir', ()),
    'neg_file': ('the negative sentences\' file in --data_dir', ()),
    'word_vectors': ('a word-vector file (word2vec .bin/.txt; pretrain also gensim KeyedVectors, .npz): pretrain '
                     'initialises the word embedding from it, finetune concatenates its vectors to ELMo\'s, '
                     'word2vec classifies with them', ('pretrained_word2vec_file',)),
    'prefix': ('a text for the LM to continue (repeatable)', ()),
    'prefix_file': ('a file of texts for the LM to continue, one per line', ()),
    'tokenizer': ('the tokenizer that turns raw text into the model\'s tokens: whitespace, moses, jieba or chars',
                  ()),
    # what a command writes
    'save_dir': ('pretrain\'s run directory: options.json, recipe.json, the checkpoints, the training log', ()),
    'output_dir': ('the directory the command writes its files to', ()),
    'output_file': ('the file the command writes (build-vocab: the vocabulary; dump: the token-embedding hdf5; '
                    'embed: its second argument, the embeddings hdf5)', ()),
    'output_corpus': ('build-vocab: also write the corpus as counted (segmented), one sentence per line', ()),
    'output_word_vectors': ('word2vec: write the vectors it trained to this file (.bin)', ()),
    'output_json': ('also write the results to this JSON file', ()),
    'output_format': ('embed: which layers go into the hdf5 (all, top or average)', ()),
    'use_sentence_keys': ('embed: the sentence itself is its hdf5 key, not its line number (allennlp elmo\'s flag)',
                          ('use-sentence-keys',)),
    'forget_sentences': ('embed: no sentence_to_index dataset in the hdf5 (allennlp elmo\'s flag)',
                         ('forget-sentences',)),
    # allennlp elmo's names for --output_format's three values (embed only)
    'all': ('embed: --output_format all (allennlp elmo\'s flag)', ()),
    'top': ('embed: --output_format top (allennlp elmo\'s flag)', ()),
    'average': ('embed: --output_format average (allennlp elmo\'s flag)', ()),
    'formats': ('export-inference: what to write (paddle, or paddle,onnx)', ()),
    'embeddings': ('dump: which .npy dumps (softmax, char_cnn)', ()),
    # the model's settings (pretrain; recorded in options.json)
    'preset': ('pretrain: a whole model and recipe (original, small, budget) that explicit flags override', ()),
    'token_input': ('how a token enters the biLM: char, word or word+char', ()),
    'word_dim': ('word+char input: the word embedding\'s size (floats)', ()),
    'projection_dim': ('the LSTM projection and token representation size (floats)', ()),
    'cell_dim': ('LSTM cells per layer', ()),
    'num_layers': ('LSTM layers per direction', ()),
    'cell_clip': ('clip LSTM cells to +- this value (0: no clipping)', ()),
    'proj_clip': ('clip projected LSTM states to +- this value (0: no clipping)', ()),
    'use_skip_connections': ('residual connections around the LSTM layers after the first', ()),
    'char_embed_dim': ('the char embedding\'s size (floats)', ()),
    'cnn_filters': ('the char CNN: a JSON list of [width in characters (UTF-8 bytes), filters]', ()),
    'num_highways': ('highway layers after the char CNN', ()),
    'activation': ('the char CNN\'s activation: relu or tanh', ()),
    'max_characters_per_token': ('characters (UTF-8 bytes) per token the char CNN reads, boundary marks included',
                                 ()),
    'dropout': ('dropout probability (pretrain: the biLM\'s; classifiers: on the features and the hidden layer)',
                ()),
    # training
    'batch_size': ('examples per batch: sentences, or for the LM rows of --unroll_steps tokens',
                   ('batch-size',)),  # allennlp elmo's spelling
    'unroll_steps': ('tokens per row of an LM batch (the BPTT window)', ()),
    'n_train_tokens': ('training tokens per epoch', ()),
    'n_negative_samples': ('sampled-softmax candidates per batch (words)', ()),
    'optimizer': ('pretrain\'s optimizer: adagrad or adam', ()),
    'lr': ('the learning rate (pretrain: the biLM\'s; classifiers: the head\'s and the scalar mix\'s)', ()),
    'warmup_steps': ('adam: linear learning-rate warm-up, in steps', ()),
    'from_weights_lr_scale': ('a run started from pretrained weights that trains them runs at --lr times this '
                              '(off or 1: the full rate)', ()),
    'max_grad_norm': ('clip the global gradient norm to this value', ()),
    'reset_state_at_sentence_start': ('a row that starts a sentence starts from a zero LSTM state', ()),
    'freeze_word_embeddings': ('keep the word embedding as it starts', ()),
    'freeze_bilm': ('train the softmax only, the biLM fixed', ()),
    'seed': ('the random seed: the same seed repeats a run on one machine', ()),
    'epochs': ('passes over the training data (classifiers: at most, per fold)', ()),
    'max_steps': ('stop training after this many steps (batches) in all', ()),
    'max_minutes': ('stop this run after this many minutes of training, with a checkpoint that resumes', ()),
    'nproc_per_node': ('pretrain: launch this many processes on this machine (paddle.distributed.launch)', ()),
    'save_freq': ('write a checkpoint every N steps (batches)', ()),
    'log_freq': ('log the running training loss every N steps (batches)', ('logging_step',)),
    'quiet': ('log warnings and errors only (stderr): no progress lines or bars; results still go to stdout', ()),
    'verbose': ('log debug lines too (stderr): what is loaded from where', ()),
    # evaluation
    'eval_freq': ('evaluate on --dev_data_path every N steps (batches)', ()),
    'eval_minutes': ('evaluate on --dev_data_path every this many minutes of training', ()),
    'eval_max_tokens': ('target tokens of --dev_data_path an evaluation reads (0: all)', ()),
    # classification (finetune, word2vec)
    'folds': ('k of the k-fold cross-validation', ()),
    'run_folds': ('run only these folds (1-based) of --folds', ()),
    'dev_fraction': ('share (0 to 1) of each training fold held out for early stopping', ()),
    'patience': ('stop after this many epochs without a better dev accuracy', ()),
    'weight_decay': ('Adam\'s L2 regularisation coefficient', ()),
    'max_seq_len': ('cut each sentence to this many tokens, counting ELMo\'s <S> and </S>', ()),
    'hidden_dim': ('the classifier\'s hidden layer size (0: a linear classifier)', ('sent_embedding_dim',)),
    'feature_norm': ('how the mean feature vector is normalised before the classifier', ()),
    'trainable': ('fine-tune the biLM rather than keep it frozen', ()),
    'bilm_lr': ('the learning rate of the biLM when --trainable', ()),
    'layer_norm': ('layer-normalise each biLM layer before the scalar mix', ()),
    'elmo_layer': ('the ELMo feature: mix, top or one layer number', ()),
    'l2_coef': ('L2 penalty on the scalar-mix weights', ()),
    'cache': ('compute a frozen biLM\'s layers once and cache them on disk', ()),
    'cache_dir': ('the directory for the layer cache', ()),
    'bilm_batch_size': ('sentences per biLM batch when caching its layers', ()),
    # word2vec
    'min_count': ('drop words seen fewer than this many times in the corpus', ()),
    'max_vocab_size': ('build-vocab: keep at most this many words, the most frequent (0: no limit)', ()),
    'max_vectors': ('word2vec: read only the first N vectors of --word_vectors (0: all)', ()),
    'train_max_tokens': ('train on only the first N tokens of --train_data_path (0: all)', ()),
    'oov': ('word2vec: what tokens without a vector become (unk or skip)', ()),
    'w2v_dim': ('word2vec training: the vector size (floats)', ()),
    'w2v_window': ('word2vec training: the largest distance of a context word (tokens)', ()),
    'w2v_negative': ('word2vec training: negative samples per pair', ()),
    'w2v_sample': ('word2vec training: the frequent-word downsampling threshold', ()),
    'w2v_epochs': ('word2vec training: passes over the corpus', ()),
    # embedding, export, prediction, the demo
    'stateful': ('carry the LSTM state across batches, as allennlp elmo', ()),
    'onednn': ('the paddle backend runs oneDNN\'s CPU kernels', ()),
    'softmax': ('export-weights: write the checkpoint\'s softmax too', ()),
    'softmax_dtype': ('export-weights: how softmax/W and softmax/b are stored (float16: half the size, read back as '
                      'float32)', ()),
    'verify': ('export-inference: check the written models against ELMoEmbedder (off: the export records '
               '"unverified")', ()),
    'verify_file': ('export-inference: the sentences an int8 model is checked on, one per line (at least 200; '
                    'default: the sample corpus)', ()),
    'quantize': ('export-inference: int8 writes model.onnx dynamically quantized (its LSTMs\' products in int8, for '
                 'onnxruntime); default: float32', ()),
    'special_tokens': ('build-vocab: write <S>, </S>, <UNK> first', ()),
    'direction': ('which LM predicts: forward (the next word) or backward (the previous one)', ()),
    'top_k': ('the most likely words shown per prefix', ()),
    'unk': ('<UNK> may be predicted and sampled like any other word', ()),
    'sample': ('continuations sampled per prefix', ()),
    'temperature': ('the sampling temperature', ()),
    'sample_max_tokens': ('a sampled continuation stops after this many tokens', ()),
    'zh': ('demo: the Chinese sense demo with the --init_from_ckpt model', ()),
    # the process
    'device': ('cpu, gpu or gpu:N (allennlp\'s --cuda-device N: N >= 0 is gpu:N, -1 the CPU)', ('cuda-device',)),
    'cpu_threads': ('threads per process on the CPU', ()),
}
# Option strings every parser has that are not flags of ours.
ARGPARSE_OPTIONS = ('-h', '--help')


def option_strings(name):
    """A flag's option strings: --NAME, then its aliases (accepted wherever NAME is, shown in --help)."""
    return [f'--{name}'] + [f'--{alias}' for alias in FLAGS[name][1]]


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line (argparse prints the whole usage first), and
    the log's level set from --quiet / --verbose once they are parsed (set_log_level)."""

    def error(self, message):
        self.exit(2, f'error: {message} (see {self.prog} --help)\n')

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        set_log_level(getattr(parsed, 'quiet', False), getattr(parsed, 'verbose', False))
        return parsed, rest


class Switch(argparse.Action):
    """An on/off setting: `--X` turns it on, `--no_X` off (argparse's BooleanOptionalAction, with
    the underscore of every other flag). The one style for every switch of every command."""

    def __init__(self, option_strings, dest, default=None, required=False, help=None, choices=None):
        if choices is not None:
            raise ValueError(f'{option_strings}: a switch has no choices')
        strings = []
        for s in option_strings:
            strings.append(s)
            if s.startswith('--'):
                strings.append(f'--no_{s[2:]}')
        super().__init__(option_strings=strings, dest=dest, nargs=0, default=default, required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, not option_string.startswith('--no_'))

    def format_usage(self):
        return ' | '.join(self.option_strings)


def shown_default(action):
    """How --help shows a flag's default: on/off for a switch, a list's items, '' quoted -> text, or
    None when there is nothing to show (the default is None: the help says what no value means)."""
    default = action.default
    if default is None or default is argparse.SUPPRESS:
        return None
    if isinstance(action, Switch) or (action.nargs == 0 and isinstance(default, bool)):
        return 'on' if default else 'off'
    if isinstance(default, (list, tuple)):
        return ' '.join(map(str, default))
    if default == '':
        return "''"
    return str(default)


class _DefaultsHelp(argparse.HelpFormatter):
    """Shows every flag's default (0 and empty included; on/off for a switch), except None (the help
    says what no value means) and a help text that states its own."""

    def _get_help_string(self, action):
        text = action.help or ''
        shown = shown_default(action)
        if shown is None or '(default' in text:
            return text
        return f'{text} (default: {shown.replace("%", "%%")})'


def parser(description):
    """A command's parser, with the flags every command has: --quiet and --verbose (the log's level)."""
    p = _OneLineErrors(description=description, formatter_class=_DefaultsHelp)
    g = p.add_mutually_exclusive_group()
    g.add_argument('--quiet', action='store_true', help='log warnings and errors only (stderr): no progress lines '
                   'or bars; results still go to stdout')
    g.add_argument('--verbose', action='store_true', help='log debug lines too (stderr): what is loaded from where')
    return p


VOCAB_HELP = ('the model\'s vocabulary: one token per line, most frequent first (line i = softmax row i and, for a '
              'word model, embedding row i: in bilm-tf one file)')


MODEL_HELP = ('a model name: bundled (packaged), small, medium, original, original-5.5b (AllenNLP\'s '
              'releases, downloaded once into $PADDLE_ELMO_CACHE/models/); a directory with options.json + '
              'weights.hdf5 (bilm-tf / AllenNLP files, an export); a checkpoint directory (its final or latest step); '
              'or a checkpoint prefix DIR/N')


def add_model_source(p, bundled_default=False, vocab_help=None):
    """Where the biLM comes from: --model (a name, a directory or a checkpoint: model_io.resolve_model),
    or, as before it, --init_from_ckpt (a checkpoint prefix of ours) or --options_file + --weight_file
    (bilm-tf / AllenNLP files); with bundled_default, none of them means the model bundled in
    pretrained/. --vocab_file is the model's vocabulary (vocab_help: what this command does with it,
    and when it may be left out)."""
    title = 'model (--model, or a checkpoint of ours, or bilm-tf / AllenNLP files'
    g = p.add_argument_group(title + ('; none: the bundled model in pretrained/)' if bundled_default else ')'))
    g.add_argument('--model', metavar='NAME_OR_PATH', help=MODEL_HELP)
    g.add_argument('--init_from_ckpt', help='checkpoint prefix without suffix, e.g. checkpoints/10000 '
                   '(the directory holds options.json); kept because the PaddleNLP example took its model so')
    g.add_argument(*option_strings('options_file'), help='bilm-tf / AllenNLP options.json (with --weight_file)')
    g.add_argument(*option_strings('weight_file'), help='bilm-tf / AllenNLP weights.hdf5 (with --options_file)')
    g.add_argument('--vocab_file', help=f'{VOCAB_HELP}; ' + (vocab_help or 'needed here only for a word or word+char '
                   'model given as bilm-tf files: our checkpoints and exports carry theirs (vocab.txt)'))
    p.set_defaults(_model_source_required=not bundled_default)
    return g


def model_source(args):
    """The model the flags name -> model_io.ModelSource (params_file, options_file, weight_file,
    vocab_file; tokenizer for a named release), after checking the combination. A named release
    not yet in the cache is downloaded here."""
    from paddle_elmo.model_io import ModelSource, resolve_model
    ckpt, opts, weights = args.init_from_ckpt, args.options_file, args.weight_file
    vocab_file = getattr(args, 'vocab_file', None)
    if args.model:
        if ckpt or opts or weights:
            raise InputError('give either --model or --init_from_ckpt / --options_file with --weight_file, not both')
        return dataclasses.replace(resolve_model(args.model), vocab_file=vocab_file)
    check_files_flags('init_from_ckpt', ckpt, opts, weights)
    if not ckpt and not opts and args._model_source_required:
        raise InputError('no model: give --model NAME_OR_PATH, --init_from_ckpt DIR/N or --options_file and '
                         '--weight_file')
    return ModelSource(params_file=ckpt, options_file=opts, weight_file=weights, vocab_file=vocab_file)


def model_vocabulary(args):
    """The model's vocabulary file (model_source must have accepted `args`): --vocab_file, else the one
    the model records (a checkpoint's recipe.json, or the vocab.txt beside its options.json) -> path;
    InputError naming what is missing when there is none."""
    if args.vocab_file:
        return args.vocab_file
    from paddle_elmo.model_io import recorded_vocabulary_file
    source = model_source(args)
    # No model given is the bundled one (commands with bundled_default): its vocab.txt beside its options.json.
    options_file = source.options_file or (None if source.params_file else source.options_path())
    path, checked = recorded_vocabulary_file(source.params_file, options_file)
    if path is None:
        raise InputError(f'no vocabulary: give --vocab_file (the one the model was trained with); {checked}')
    return path


def check_files_flags(other_flag, other, options_file, weight_file):
    """--options_file and --weight_file go together, and not with --`other_flag` (given as `other`)."""
    if other and (options_file or weight_file):
        raise InputError(f'give either --{other_flag} or --options_file with --weight_file, not both')
    if (options_file is None) != (weight_file is None):
        raise InputError('--options_file and --weight_file go together')


def add_tokenizer(p, default=None, group=None, why=''):
    """--tokenizer: how raw text becomes tokens (tokenizers.get_tokenizer). default None: the
    model's recorded tokenizer (scripts that load a biLM); else that tokenizer's name, `why` saying why."""
    said = (f'default: {default}{why}' if default else 'default: the one the model records in its options.json '
            '(moses for the bundled model), whitespace for bilm-tf files; another one warns')
    (group or p).add_argument(
        '--tokenizer', choices=TOKENIZERS, default=default,
        help='how raw text becomes tokens: whitespace (split on spaces: text already segmented), moses (English as '
             '1B Word is tokenized: It\'s raining, isn\'t it? -> It \'s raining , isn \'t it ?), jieba (Chinese '
             'words, jieba 0.42.1\'s accurate mode), chars (each CJK character a token, other runs of non-space '
             f'characters whole, e.g. iPhone很好 -> iPhone 很 好) ({said})')


def _int_at_least(text, least, expected):
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f'expected {expected}, got {text!r}')
    return value


def positive_int(text):
    """argparse type of a size or a count that cannot be 0 (a batch, a dimension, epochs)."""
    return _int_at_least(text, 1, 'a positive integer')


def count_or_zero(text):
    """argparse type of a limit whose 0 means none (or a frequency whose 0 means its stated default)."""
    return _int_at_least(text, 0, 'an integer >= 0')


def device_name(text):
    """argparse type of --device: cpu, gpu or gpu:N; allennlp's --cuda-device numbers: -1 is cpu, N >= 0 gpu:N."""
    text = text.strip().lower()
    if text in ('cpu', 'gpu') or text.startswith('gpu:') and text[4:].isdigit():
        return text
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected cpu, gpu, gpu:N or a CUDA device number (-1: cpu), '
                                         f'got {text!r}') from None
    if number < -1:
        raise argparse.ArgumentTypeError(f'expected a CUDA device number >= -1 (-1: cpu), got {text!r}')
    return 'cpu' if number == -1 else f'gpu:{number}'


def add_inference_model(p, title, model_help):
    """--inference_model, --inference_backend and --onednn: an export_inference directory run by
    Paddle Inference or onnxruntime (InferenceEmbedder)."""
    g = p.add_argument_group(title)
    g.add_argument('--inference_model', help=model_help)
    g.add_argument('--inference_backend', default='paddle', choices=['paddle', 'onnxruntime'],
                   help="paddle.inference's predictor (inference.json) or onnxruntime (model.onnx; an int8 export "
                   "runs here)")
    g.add_argument('--onednn', action=Switch, default=True,
                   help="paddle backend: oneDNN's CPU kernels (off: Paddle's own, with MKL matmuls)")
    return g


def add_device(p, threads_note=''):
    """--device and --cpu_threads; threads_note: what else no --cpu_threads means in this command."""
    p.add_argument(*option_strings('device'), default='cpu', type=device_name,
                   help='cpu, gpu or gpu:N (needs paddlepaddle-gpu); --cuda-device N is allennlp elmo\'s spelling: '
                   '-1 the CPU, N >= 0 gpu:N')
    p.add_argument('--cpu_threads', type=positive_int,
                   help=f'threads per process on CPU (default: {runtime.default_threads()} here: $OMP_NUM_THREADS if '
                   f'set, else the available cores divided by the ranks launched on this machine{threads_note}). On '
                   'AMD processors '
                   'MKL_DEBUG_CPU_TYPE=5 is set unless you set it (Paddle\'s MKL then runs its AVX2 path, ~3x faster)')


def run(main):
    """Call main() with the command's log set up (command_logging): the one error boundary of every
    command. A user mistake (InputError, a missing file, a package of an extra not installed, Paddle
    among them) becomes one line on stderr and exit code 2. Anything else is a bug and keeps its
    traceback."""
    with command_logging():
        try:
            sys.exit(main() or 0)
        except (InputError, FileNotFoundError) as e:
            fail(e)
        except ModuleNotFoundError as e:
            missing = missing_package(e)
            if missing is None:
                raise
            fail(missing)
        except KeyboardInterrupt:
            print('interrupted', file=sys.stderr)
            sys.exit(130)


def fail(error):
    """A user's mistake: `error` as the one line on stderr, exit code 2."""
    print(f'error: {error}', file=sys.stderr)
    sys.exit(2)


# ---- the log -----------------------------------------------------------------------------------

LOGGER = 'paddle_elmo'  # every module's logger is below it (logging.getLogger(__name__))
_handler = None  # the stderr handler of the command running (command_logging), else None


class _LogFormat(logging.Formatter):
    """INFO records as their message (a progress line reads as before); the others after their
    level's name, as the one-line errors: 'warning: ...', 'error: ...', 'debug: ...'."""

    def format(self, record):
        text = super().format(record)
        return text if record.levelno == logging.INFO else f'{record.levelname.lower()}: {text}'


def _rank():
    """This process's global rank under paddle.distributed.launch (0 otherwise)."""
    rank = os.environ.get('PADDLE_TRAINER_ID', '0').strip()
    return int(rank) if rank.isdigit() else 0


def log_level(quiet=False, verbose=False):
    """--verbose: DEBUG; --quiet, or a rank other than 0 (rank 0 alone logs its progress): WARNING; else INFO."""
    if verbose:
        return logging.DEBUG
    return logging.WARNING if quiet or _rank() > 0 else logging.INFO


@contextlib.contextmanager
def command_logging():
    """For a command's duration: the paddle_elmo logger's records on stderr in _LogFormat, at INFO
    until the flags are parsed (set_log_level), and not passed on to the root logger (Paddle's
    import gives it a handler of its own format, which would print each line again). The logger's
    settings are restored after (a test may run a command in its own process)."""
    global _handler
    logger = logging.getLogger(LOGGER)
    saved = logger.level, logger.propagate
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormat())
    logger.addHandler(handler)
    logger.setLevel(log_level())
    logger.propagate = False
    _handler = handler
    try:
        yield
    finally:
        _handler = None
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def set_log_level(quiet=False, verbose=False):
    """The level --quiet / --verbose ask for, on a command's log (none outside run(): parsing flags
    in a program of one's own changes no logging setting)."""
    if _handler is not None:
        logging.getLogger(LOGGER).setLevel(log_level(quiet, verbose))


# ---- pretraining: one flag per config field --------------------------------------------------

DATA_FIELDS = ('train_data_path', 'vocab_file', 'dev_data_path', 'n_train_tokens', 'word_vectors')
# --preset has its own help; world_size is recorded, not chosen; the last two have flags of their own
# beside --init_from_weights (the fields' help says what they record).
NOT_FLAGS = ('preset', 'world_size', 'init_options_file', 'init_weight_file')
CHOICES = {'optimizer': OPTIMIZERS, 'activation': ('relu', 'tanh'), 'token_input': TOKEN_INPUTS,
           'tokenizer': TOKENIZERS}


def _scale_or_off(text):
    """A factor, 'off' being 1."""
    if text.strip().lower() == 'off':
        return 1.0
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number or off, got {text!r}') from None


# Fields whose flag reads more than the field's type (sizes as every command reads them).
FLAG_TYPES = {'from_weights_lr_scale': _scale_or_off, 'eval_max_tokens': count_or_zero,
              **{name: positive_int for name in ('batch_size', 'unroll_steps', 'epochs', 'save_freq', 'log_freq',
                                                 'n_negative_samples')}}


def _flag_type(annotation):
    """A config field's type -> argparse keyword arguments."""
    args = [t for t in typing.get_args(annotation) if t is not type(None)]
    base = args[0] if typing.get_origin(annotation) is typing.Union else annotation
    if base is bool:
        return {'action': Switch}
    if typing.get_origin(base) is list:
        return {'type': json.loads}
    return {'type': base}


def _shown(value):
    """A config value as --help shows it: on/off for a switch, JSON for a list."""
    if isinstance(value, bool):
        return 'on' if value else 'off'
    return json.dumps(value) if isinstance(value, list) else str(value)


def _preset_help(name, text):
    values = ', '.join(f'{preset} {_shown(values[name])}' for preset, values in PRESETS.items())
    return f'{text} (default from --preset: {values})'


def add_config_flags(group, config_class, names):
    """One flag per field of `config_class` in `names`, named as the field, default None (so that a
    given flag can be told from a default): the preset or the resumed checkpoint fills the rest."""
    for f in dataclasses.fields(config_class):
        if f.name not in names:
            continue
        text = f.metadata['help']
        if f.name in PRESETS['original']:
            text = _preset_help(f.name, text)
        elif f.default is not dataclasses.MISSING and f.default is not None:
            text += f' (default: {_shown(f.default)})'
        kwargs = {**_flag_type(f.type), **({'type': FLAG_TYPES[f.name]} if f.name in FLAG_TYPES else {})}
        group.add_argument(*option_strings(f.name), choices=CHOICES.get(f.name), help=text, **kwargs)


def given_settings(a):
    """{field: value} of the config flags given on the command line (both configs, field order)."""
    names = [f.name for cls in (ModelConfig, Recipe) for f in dataclasses.fields(cls)
             if f.name == 'preset' or f.name not in NOT_FLAGS]
    return {name: getattr(a, name) for name in names if getattr(a, name, None) is not None}


def pretrain_parser():
    """run_pretrain.py's options: the original PaddleNLP example's flags plus bilm-tf's knobs, one
    per field of config.ModelConfig and config.Recipe, all defaulting to the preset (or, resuming,
    to the checkpoint's configs)."""
    p = parser('Pretrain the ELMo biLM with sampled softmax (one process, or many under python -m '
               'paddle.distributed.launch). Resuming (--init_from_ckpt DIR/N), every setting not given '
               'comes from the checkpoint\'s options.json and recipe.json.')
    recipe_fields = [f.name for f in dataclasses.fields(Recipe) if f.name not in NOT_FLAGS]
    add_config_flags(p.add_argument_group('data (resuming: the checkpoint\'s unless given)'), Recipe, DATA_FIELDS)
    p.add_argument('--preset', choices=list(PRESETS),
                   help='model and optimisation recipe: original (the paper\'s, the default), small '
                   '(AllenNLP\'s 2x1024_128 model), budget (best held-out perplexity in an hour of a 2-core '
                   'CPU); explicit flags override its values. Resuming, the default is the checkpoint\'s')
    add_config_flags(p.add_argument_group('model (resuming: must agree with the checkpoint)'), ModelConfig,
                     MODEL_FIELDS)
    t = p.add_argument_group('training')
    add_config_flags(t, Recipe, [n for n in recipe_fields if n not in DATA_FIELDS])
    t.add_argument('--max_minutes', type=float, help='stop this run after this many minutes of training (evaluation '
                   'and saving not counted), save a checkpoint DIR/STEP that resumes exactly, evaluate, exit 0 '
                   '(a budget for this run: resuming does not inherit it)')
    t.add_argument('--save_dir', help='where options.json, recipe.json and checkpoints go (default: checkpoints, '
                   'or the resumed checkpoint\'s directory)')
    t.add_argument('--init_from_ckpt', help='resume from checkpoint DIR/N, a prefix without suffix (model, optimizer, '
                   'step, data position, and every setting not given)')
    w = p.add_argument_group('start from pretrained weights (domain adaptation: a new run, a fresh optimizer)')
    w.add_argument('--init_from_weights', help='a directory with options.json + weights.hdf5 (an export of ours, '
                   'the official ELMo files renamed so) or a model name: bundled (pretrained/), small, medium, '
                   'original, original-5.5b (AllenNLP\'s, downloaded once into the cache): the biLM from its '
                   'weights, the softmax from softmax/W and softmax/b when it has them and they have the '
                   'vocabulary\'s size, else new')
    w.add_argument(*option_strings('options_file'), help='or bilm-tf / AllenNLP files to start from: their '
                   'options.json (with --weight_file; the name every command gives these files)')
    w.add_argument(*option_strings('weight_file'), help='with --options_file: their weights.hdf5')
    add_device(p)
    return p


# ---- the flag table in README.md ---------------------------------------------------------------

README_START, README_END = '<!-- flags:start -->', '<!-- flags:end -->'


def flag_uses(parsers):
    """-> ({table name: [subcommands]}, {names that are switches}) over the parsers' options."""
    uses, switches = {}, set()
    for command, p in parsers.items():
        for action in p._actions:
            names = [s for s in action.option_strings if s not in ARGPARSE_OPTIONS]
            if names:
                uses.setdefault(names[0][2:], []).append(command)
                if isinstance(action, Switch):
                    switches.add(names[0][2:])
            elif not action.option_strings and action.dest in FLAGS:  # a positional argument of that name
                uses.setdefault(action.dest, []).append(f'{command} (argument)')
    return uses, switches


def flags_markdown(parsers):
    """README's flag table, made from FLAGS and the parsers ({subcommand: parser}: which commands
    take each flag); paddle_elmo.cli.update_readme writes it between the markers."""
    import re
    uses, switches = flag_uses(parsers)
    rows = ['| flag | meaning (units) | commands |', '| --- | --- | --- |']
    for name, (concept, aliases) in FLAGS.items():
        shown = f'`--{name}`' + (f' / `--no_{name}`' if name in switches else '')
        if aliases:
            shown += ' (also ' + ', '.join(f'`--{alias}`' for alias in aliases) + ')'
        concept = re.sub(r'(</?[A-Z]+>)', r'`\1`', concept)
        rows.append(f'| {shown} | {concept} | {", ".join(uses.get(name, []))} |')
    return '\n'.join(rows) + '\n'
