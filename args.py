"""Command-line options shared by the scripts, and the one way they report user errors."""
import argparse
import os
import sys
import warnings

# Paddle's import prints a ccache notice and C++ info logs on stderr; a user's error must be the
# one line there. Set before anything imports paddle (the scripts import this module first).
os.environ.setdefault('GLOG_minloglevel', '2')
warnings.filterwarnings('ignore', message='No ccache found')


class UserError(Exception):
    """A mistake in the user's input: reported as one line on stderr, exit code 2."""


def parser(description):
    return argparse.ArgumentParser(description=description,
                                   formatter_class=argparse.ArgumentDefaultsHelpFormatter)


def add_model_source(p, required=True):
    """Where the biLM comes from: our checkpoint prefix, or bilm-tf/AllenNLP files."""
    g = p.add_argument_group('model (a checkpoint of ours, or bilm-tf / AllenNLP files)')
    g.add_argument('--init_from_ckpt', help='checkpoint prefix without suffix, e.g. checkpoints/10000 '
                   '(the directory holds options.json)')
    g.add_argument('--options_file', help='bilm-tf / AllenNLP options.json')
    g.add_argument('--weight_file', help='bilm-tf / AllenNLP weights.hdf5')
    p.set_defaults(_model_source_required=required)


def model_source(args):
    """-> dict(params_file=..., options_file=..., weight_file=...) after checking the combination."""
    ckpt, opts, weights = args.init_from_ckpt, args.options_file, args.weight_file
    if ckpt and (opts or weights):
        raise UserError('give either --init_from_ckpt or --options_file with --weight_file, not both')
    if (opts is None) != (weights is None):
        raise UserError('--options_file and --weight_file go together')
    if not ckpt and not opts and args._model_source_required:
        raise UserError('no model: give --init_from_ckpt DIR/N or --options_file and --weight_file')
    return dict(params_file=ckpt, options_file=opts, weight_file=weights)


def add_device(p):
    p.add_argument('--device', default='cpu', choices=['cpu', 'gpu'],
                   help='cpu, or gpu (needs paddlepaddle-gpu)')


def run(main):
    """Call main(); a user mistake becomes one line on stderr and exit code 2, no traceback."""
    try:
        sys.exit(main() or 0)
    except (UserError, FileNotFoundError, ValueError, TypeError) as e:
        print(f'error: {e}', file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print('interrupted', file=sys.stderr)
        sys.exit(130)


def pretrain_parser():
    """run_pretrain.py's options: the original PaddleNLP example's flags plus bilm-tf's knobs.

    Defaults reproduce the paper's model and recipe (Adagrad lr 0.2, global-norm clip 10, dropout
    0.1, batch 128 per device, unroll 20, 10 epochs, LSTM 4096 -> 512, 2 layers, residual).
    """
    import json
    from elmo import ORIGINAL_FILTERS
    p = parser('Pretrain the ELMo biLM with sampled softmax '
               '(one process, or many under python -m paddle.distributed.launch).')
    d = p.add_argument_group('data')
    d.add_argument('--train_data_path', required=True, help="training files, a glob such as 'data/train/*'")
    d.add_argument('--vocab_file', required=True, help='one token per line, most frequent first')
    d.add_argument('--dev_data_path', help='held-out glob: full-softmax perplexity every --eval_freq steps')
    d.add_argument('--n_train_tokens', type=int, help='training tokens per epoch (default: counted once '
                   'from the data and cached next to it)')
    m = p.add_argument_group('model')
    m.add_argument('--projection_dim', type=int, default=512, help='LSTM projection and token dim')
    m.add_argument('--cell_dim', type=int, default=4096, help='LSTM cells per layer')
    m.add_argument('--num_layers', type=int, default=2, help='LSTM layers per direction')
    m.add_argument('--cell_clip', type=float, default=3.0, help='clip LSTM cells to +-this (0: off)')
    m.add_argument('--proj_clip', type=float, default=3.0, help='clip projected states to +-this (0: off)')
    m.add_argument('--use_skip_connections', action=argparse.BooleanOptionalAction, default=True,
                   help='residual connection around LSTM layers after the first')
    m.add_argument('--char_embed_dim', type=int, default=16, help='char embedding size')
    m.add_argument('--cnn_filters', type=json.loads, default=ORIGINAL_FILTERS,
                   help='JSON list of [width, n_filters] for the char CNN')
    m.add_argument('--num_highways', type=int, default=2, help='highway layers after the char CNN')
    m.add_argument('--max_characters_per_token', type=int, default=50, help='chars per token (longer '
                   'tokens are cut)')
    m.add_argument('--dropout', type=float, default=0.1, help='dropout on LSTM inputs and before the softmax')
    m.add_argument('--n_negative_samples', type=int, default=8192, help='sampled-softmax candidates per batch')
    t = p.add_argument_group('training')
    t.add_argument('--batch_size', type=int, default=128, help='rows per batch per device')
    t.add_argument('--unroll_steps', type=int, default=20, help='tokens per row per batch (BPTT window)')
    t.add_argument('--epochs', type=int, default=10, help='passes over n_train_tokens')
    t.add_argument('--max_steps', type=int, help='stop after this many steps (overrides --epochs)')
    t.add_argument('--lr', type=float, default=0.2, help='Adagrad learning rate')
    t.add_argument('--max_grad_norm', type=float, default=10.0, help='global gradient-norm clip')
    t.add_argument('--seed', type=int, default=0, help='seeds data order, init, sampling and dropout')
    t.add_argument('--save_dir', default='checkpoints', help='where options.json and checkpoints go')
    t.add_argument('--init_from_ckpt', help='resume from DIR/N (model, optimizer, step, data position)')
    t.add_argument('--save_freq', type=int, default=10000, help='checkpoint every N steps')
    t.add_argument('--log_freq', type=int, default=100, help='log every N steps')
    t.add_argument('--eval_freq', type=int, default=0, help='with --dev_data_path: evaluate every N '
                   'steps (0: only at the end)')
    t.add_argument('--eval_max_tokens', type=int, default=50000, help='tokens of --dev_data_path used by the '
                   'periodic evaluation (run_eval.py does the whole set)')
    add_device(p)
    return p
