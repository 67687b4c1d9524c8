"""Held-out perplexity of a pretrained biLM, with the full softmax.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo eval` once the package is installed. The code is `paddle_elmo/cli/evaluate.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('eval')
