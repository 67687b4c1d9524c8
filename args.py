"""Command-line options shared by the scripts, and the one way they report user errors."""
import argparse
import sys


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
