"""The classification protocol's flags and their use, shared by `paddle-elmo finetune` and
`paddle-elmo word2vec` (the protocol itself is paddle_elmo/classify/'s; its Paddle parts are
imported where they are used: the flags, and so --help, need no Paddle). Their --quiet is every
command's (flags.parser): no progress bars and no per-epoch lines (those are the log's INFO)."""
import logging

from paddle_elmo.cli.arguments import (count_or_zero, file_or_stdout, float_or_zero, fraction, length_with_boundaries,
                                       positive_float, positive_int, probability, seed_number)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.runner import rank, results_stream, world_size, write_json_output
from paddle_elmo.fileio import STDIO, InputError
from paddle_elmo.classify.choices import FEATURE_NORMS
from paddle_elmo.classify.report import format_table, summarize

log = logging.getLogger(__name__)


def add_protocol_args(p, data_required=True):
    """The protocol's options -> their 'data' group, where each script adds its --tokenizer.
    data_required=False: the script checks --data_dir itself (word2vec_base.py can train vectors only)."""
    d = p.add_argument_group('data')
    d.add_argument('--data_dir', required=data_required, help='directory holding the positive and negative files')
    d.add_argument('--pos_file', default='rt-polarity.pos', help='positive sentences, one per line, in --data_dir')
    d.add_argument('--neg_file', default='rt-polarity.neg', help='negative sentences, one per line, in --data_dir')
    t = p.add_argument_group('protocol and classifier')
    t.add_argument('--folds', type=positive_int, default=10, help='k of the k-fold cross-validation; 1: one split (10%% test)')
    t.add_argument('--run_folds', type=positive_int, nargs='+', help='run only these folds (1-based) of the --folds: the '
                   'same folds, seeds and results as in the full run, e.g. 1 for a quick check on fold 1')
    t.add_argument('--dev_fraction', type=fraction, default=0.1,
                   help='share (0 to 1) of each training fold held out for early stopping')
    t.add_argument('--seed', type=seed_number, default=0, help='fixes folds, initialisation, batch order and dropout')
    t.add_argument(*option_strings('batch_size'), type=positive_int, default=32, help='sentences per training batch')
    t.add_argument('--epochs', type=positive_int, default=20, help='maximum epochs (passes over the training fold) per fold')
    t.add_argument('--patience', type=positive_int, default=3, help='stop after this many epochs without a better dev accuracy')
    t.add_argument('--lr', type=positive_float, default=1e-3,
                   help='Adam learning rate of the classifier (and scalar mix)')
    t.add_argument('--weight_decay', type=float_or_zero, default=0.0, help='Adam L2 regularisation coefficient '
                   '(the PaddleNLP example\'s default: 1e-4)')
    t.add_argument('--max_seq_len', type=length_with_boundaries,
                   help='cut sentences to this many tokens, counting ELMo\'s <S> and </S> (as the PaddleNLP '
                   'example): each keeps its first max_seq_len - 2 tokens, in both scripts; how many were cut is '
                   'reported. Default: no limit, nothing is cut')
    t.add_argument(*option_strings('log_freq'), type=count_or_zero, default=0,
                   help='print the running training loss every N steps (batches; 0: once per epoch, the default here, as '
                   'an epoch of rt-polarity is a few hundred batches; pretrain\'s is 100); --logging_step is the '
                   'PaddleNLP example\'s name for it')
    t.add_argument(*option_strings('hidden_dim'), type=count_or_zero, default=256,
                   help='MLP hidden size (0: a linear classifier); --sent_embedding_dim is the PaddleNLP '
                   'example\'s name for it')
    t.add_argument('--dropout', type=probability, default=0.2,
                   help='dropout probability on the token features and the hidden layer')
    t.add_argument('--feature_norm', default='batchnorm', choices=FEATURE_NORMS,
                   help='batchnorm: standardize each dimension of the mean feature vector before the MLP')
    t.add_argument('--output_json', type=file_or_stdout, help='write the results here (accuracy_mean, accuracy_std, '
                   'fold_accuracies, layer_weights, args, ...); - writes them to standard output (the table then goes '
                   'to stderr)')
    return d


def check_protocol_args(a):
    """InputError naming the option when protocol options disagree (each one's range is its type's,
    checked as the flags are parsed)."""
    for k in a.run_folds or ():
        if not 1 <= k <= a.folds:
            raise InputError(f'--run_folds: fold {k} is not among the {a.folds} folds (1 to {a.folds})')


def train_config(a):
    from paddle_elmo.classify.training import TrainConfig
    return TrainConfig(lr=a.lr, batch_size=a.batch_size, epochs=a.epochs, patience=a.patience, seed=a.seed,
                       progress=not a.quiet, weight_decay=a.weight_decay, logging_step=a.log_freq)


def runs_on_this_rank(script):
    """Under paddle.distributed.launch with several ranks, only rank 0 runs the protocol (the folds
    of rt-polarity are small, and N copies would fight over one output file): -> False elsewhere."""
    if world_size() > 1:
        # a warning: the launch does not do what it may seem to (every rank logs it, rank 0 alone the rest)
        log.warning('%s: %d ranks launched; rank 0 runs all folds, the others exit (this is rank %d)', script,
                    world_size(), rank())
    return rank() == 0


def data_flags(a):
    """classify.data.load_data's arguments from the protocol's flags (add_protocol_args) -> dict."""
    return dict(data_dir=a.data_dir, pos_file=a.pos_file, neg_file=a.neg_file,
                max_seq_len=a.max_seq_len)


def settings(a):
    """The flags' values to record with the results -> {flag: value}."""
    return {k: v for k, v in vars(a).items() if not k.startswith('_')}


def report(results, settings, data, features_info=None, output_json=None):
    """Print the accuracy table; write output_json (atomically) if given. Returns the summary.
    settings: what to record as the run's settings ({flag: value}: `settings(a)`)."""
    summary = summarize(results, settings, data, features_info)
    print(format_table(summary), file=results_stream(output_json))
    if output_json:
        write_json_output(summary, output_json, '--output_json')
    if output_json and output_json != STDIO:
        print(f'wrote {output_json}')
    return summary
