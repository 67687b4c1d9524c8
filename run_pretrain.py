"""Pretrain the biLM language model (one process, or under `python -m paddle.distributed.launch`).

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo pretrain` once the package is installed. The code is `paddle_elmo/cli/pretrain.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('pretrain')
