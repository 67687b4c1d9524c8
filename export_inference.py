"""Any model to a Paddle Inference program and model.onnx that run without this code.

A front door kept for checkouts and the PaddleNLP example's commands; the same command is
`paddle-elmo export-inference` once the package is installed. The code is `paddle_elmo/cli/export_inference.py`.
"""
from paddle_elmo.cli import run_command

if __name__ == '__main__':
    run_command('export-inference')
