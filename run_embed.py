"""Embed a text file into hdf5 (as `allennlp elmo`).

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo embed` once the package is installed. The code is `paddle_elmo/cli/embed.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('embed')
