"""`Recipe` (how a biLM is pretrained) and the presets: each a full model + recipe by field name,
an explicit flag overriding one value of it. The model's own config is config.ModelConfig;
files/run_configs.py reads and writes both.
"""
import dataclasses
from dataclasses import dataclass
from typing import Optional

from paddle_elmo.fileio import InputError
from paddle_elmo.model.config import MODEL_FIELDS, ORIGINAL_FILTERS, setting
from paddle_elmo.model.dropout_masks import DROPOUT_MASKS


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
    # For the most held-out perplexity per hour of a small CPU: the small model with a narrower char
    # CNN and LSTM and fewer negatives (more tokens/s), Adam with warm-up, and rows that begin a
    # sentence start from a zero state; its softmax bias starts at the unigram prior, so that the
    # first steps need not learn word frequencies.
    'budget': dict(projection_dim=128, cell_dim=256, num_layers=2, cell_clip=3.0, proj_clip=3.0,
                   use_skip_connections=True, char_embed_dim=16,
                   cnn_filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 128]], num_highways=1,
                   dropout=0.1, n_negative_samples=1024, batch_size=64, unroll_steps=20, lr=0.004,
                   max_grad_norm=10.0, optimizer='adam', warmup_steps=100,
                   reset_state_at_sentence_start=True, softmax_bias_init='unigram'),
}
RECIPE_FIELDS = tuple(f.name for f in dataclasses.fields(Recipe))


def split_fields(values):
    """{field: value} of both configs -> ({ModelConfig fields}, {Recipe fields})."""
    unknown = set(values) - set(MODEL_FIELDS) - set(RECIPE_FIELDS)
    if unknown:
        raise InputError(f'unknown settings: {", ".join(sorted(unknown))}')
    return ({k: v for k, v in values.items() if k in MODEL_FIELDS},
            {k: v for k, v in values.items() if k in RECIPE_FIELDS})
