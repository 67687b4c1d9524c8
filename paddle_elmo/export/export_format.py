"""What an exported model directory holds and how it is called: its files, its input and output
names (one input per id kind the model reads), the key that records its precision, and its
manifest (export.json: how it was checked), and the error a failed export raises. Shared by the
writer (deploy.py and the modules it calls) and the runtime (inference.py).
"""
import logging
import os
import sys
import tempfile

from paddle_elmo.model.token_modes import CHAR_IDS, WORD_IDS
from paddle_elmo.fileio import RunFailure
from paddle_elmo.files.run_configs import read_json

log = logging.getLogger(__name__)


CHAR_INPUT, WORD_INPUT = CHAR_IDS, WORD_IDS  # the export's input names are TokenInput's fields


OUTPUT_NAMES = ('layers', 'mask')


PROGRAM_PREFIX = 'inference'  # paddle.jit.save's path prefix inside the export directory


ONNX_FILE = 'model.onnx'


ONNX_OPSET = 13  # Loop, Split with sizes as an input; supported by every onnxruntime since 1.6


OPTIONS_FILE = 'options.json'


MANIFEST_FILE = 'export.json'  # {'verified': the checks' results, or UNVERIFIED; 'precision': model.onnx's}


UNVERIFIED = 'unverified'  # the manifest's 'verified' of an export written without its checks (--no_verify)


# What every export directory holds (Paddle 3.x saves PIR programs as JSON, not inference.pdmodel);
# a word or word+char model's also holds its input vocabulary, model_io's VOCAB_FILE (vocab.txt).
# Exports written before the manifest existed lack export.json and still load.
EXPORTED_FILES = (f'{PROGRAM_PREFIX}.json', f'{PROGRAM_PREFIX}.pdiparams', ONNX_FILE, OPTIONS_FILE, MANIFEST_FILE)


BACKENDS = ('paddle', 'onnxruntime')


def input_names(config):
    """The exported inputs of a model with ModelConfig `config`, in order: ('char_ids',),
    ('word_ids',) or ('word_ids', 'char_ids') (word+char: the word columns come first, as in
    the projection)."""
    return config.input_mode.reads


# model.onnx's metadata key saying how it was quantized (absent: float32); InferenceEmbedder reads it.
PRECISION_KEY = 'elmo_precision'


class ExportError(RunFailure):
    """Writing an export failed at a step that is not the user's input (a conversion, a check, the
    quantization): the message says which and why. Raised by deploy, export_checks and quantize; a
    runtime failure (the commands: one line, exit 1)."""


def read_manifest(model_dir):
    """model_dir/export.json -> dict ({} for an export written before the manifest existed)."""
    path = os.path.join(model_dir, MANIFEST_FILE)
    return read_json(path, 'export manifest') if os.path.isfile(path) else {}


class quiet_native_output:
    """Silence stdout/stderr at the file-descriptor level (Paddle's and paddle2onnx's C++ log there);
    what was written is shown if the block fails, and kept in .output."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.file.seek(0)
        self.output = self.file.read().decode(errors='replace')
        self.file.close()
        if exc[0] is not None and self.output.strip():
            log.error('the output of the step that failed:\n%s', self.output.rstrip())
        return False
