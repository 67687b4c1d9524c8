"""A checkpoint to bilm-tf / AllenNLP files (options.json + weights.hdf5).

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo export-weights` once the package is installed. The code is `paddle_elmo/cli/export_weights.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('export-weights')
