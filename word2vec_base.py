"""The word2vec + bag-of-words baseline for the polarity classifier.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo word2vec` once the package is installed. The code is `paddle_elmo/cli/word2vec.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('word2vec')
