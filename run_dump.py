"""Dump the vocabulary's softmax and char-CNN embeddings, or bilm-tf's token-embedding hdf5.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo dump` once the package is installed. The code is `paddle_elmo/cli/dump.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('dump')
