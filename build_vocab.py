"""The vocabulary of a corpus, most frequent first.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo build-vocab` once the package is installed. The code is `paddle_elmo/cli/build_vocab.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('build-vocab')
