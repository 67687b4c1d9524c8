"""What the language model predicts: the next (or previous) word, sampled continuations.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo predict` once the package is installed. The code is `paddle_elmo/cli/predict.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('predict')
