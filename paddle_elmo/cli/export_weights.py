"""Export a checkpoint of ours to the bilm-tf / AllenNLP format (options.json + weights.hdf5).

    python export_weights.py --init_from_ckpt checkpoints/final --output_dir elmo_export

The files load in AllenNLP (`Elmo(options_file, weight_file, ...)`) and in bilm-tf. When the
checkpoint holds a softmax, it is added as `softmax/W` and `softmax/b` (both readers ignore them;
run_eval.py uses them for perplexity) unless --no_softmax: embeddings do not need it, and for a
100k vocabulary it is most of the file (pretrained/ was exported that way).
"""
import os

from paddle_elmo.cli import flags as cli


def build_parser():
    p = cli.parser(__doc__.split('\n')[0])
    p.add_argument('--init_from_ckpt', required=True, help='checkpoint prefix without suffix, e.g. '
                   'checkpoints/10000 (the directory holds options.json)')
    p.add_argument('--output_dir', required=True, help='directory for options.json and weights.hdf5')
    p.add_argument('--softmax', action=cli.Switch, default=True,
                   help='write the checkpoint\'s softmax too (off: enough for embeddings and fine-tuning, not for '
                   'paddle-elmo eval or paddle-elmo predict)')
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    from paddle_elmo.checkpoints import load_bilm_checkpoint, softmax_of
    from paddle_elmo.hdf5_weights import export_weights
    import paddle
    paddle.set_device('cpu')
    bilm, state = load_bilm_checkpoint(a.init_from_ckpt)
    export_weights(bilm, a.output_dir, softmax_of(state) if a.softmax else None)
    print(f'wrote {os.path.join(a.output_dir, "options.json")} and {os.path.join(a.output_dir, "weights.hdf5")}')


if __name__ == '__main__':
    cli.run(main)
