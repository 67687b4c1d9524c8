"""`make demo`: pretrain a tiny ELMo on the bundled sample corpus, measure it, and embed with it.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo demo` once the package is installed. The code is `paddle_elmo/cli/demo.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('demo')
