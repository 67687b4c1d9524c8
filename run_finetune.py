"""ELMo + bag-of-words polarity classifier (rt-polarity), frozen or fine-tuned.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo finetune` once the package is installed. The code is `paddle_elmo/cli/finetune.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('finetune')
