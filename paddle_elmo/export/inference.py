"""`InferenceEmbedder`: runs an exported model (Paddle Inference or onnxruntime) without this
toolkit's model code, with ELMoEmbedder's interface and batching. With onnxruntime it imports no
Paddle (nor does anything it imports: tests/test_structure.py), so the [serve] extra (numpy, h5py,
onnxruntime) runs an export. Without a backend named, `choose_backend` picks the one the install
and the directory allow (onnxruntime for an int8 export; for a float32 one Paddle where it can be
imported, else onnxruntime) and logs which.
"""
import importlib
import logging
import os

import numpy as np

from paddle_elmo.export.export_format import (BACKENDS, EXPORTED_FILES, MANIFEST_FILE, ONNX_FILE, OPTIONS_FILE,
                                              OUTPUT_NAMES, PRECISION_KEY, PROGRAM_PREFIX, UNVERIFIED, input_names,
                                              read_manifest)
from paddle_elmo.fileio import InputError, require_package
from paddle_elmo.files.run_configs import VOCAB_FILE, read_input_vocabulary, read_model_config
from paddle_elmo.use.sentence_embedder import SentenceEmbedder
from paddle_elmo.runtime import ask_mkl_for_fast_path, default_threads
from paddle_elmo.text.token_ids import InputMapper, TokenInput
from paddle_elmo.text.tokenizers import model_tokenizer

log = logging.getLogger(__name__)


PROGRAM_FILES = (f'{PROGRAM_PREFIX}.json', f'{PROGRAM_PREFIX}.pdiparams')  # what the paddle backend runs


def choose_backend(model_dir, backend=None):
    """The backend that runs the export in `model_dir` -> 'paddle' or 'onnxruntime'. A `backend`
    given is kept (its package is required on use, with an error naming the extra). None: for an
    int8 export (export.json's precision), onnxruntime on its quantized model.onnx where onnxruntime
    can be imported (the model the export was made for); for a float32 one, Paddle Inference where
    the directory holds its program and Paddle can be imported (the [cpu] install; the default
    before there was a choice); else the other, or the one runtime whose file the directory holds.
    The choice and why are logged at INFO, one line (naming a skipped int8 model). FileNotFoundError
    when `model_dir` is no directory, or (None) holds neither runtime's file."""
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f'{model_dir}: no such directory (paddle-elmo export-inference writes one)')
    if backend is not None:
        return backend
    has_program = all(os.path.isfile(os.path.join(model_dir, n)) for n in PROGRAM_FILES)
    has_onnx = os.path.isfile(os.path.join(model_dir, ONNX_FILE))
    if not has_program and not has_onnx:
        raise FileNotFoundError(f'{os.path.join(model_dir, PROGRAM_FILES[0])}: not found, nor {ONNX_FILE}: {model_dir} '
                                f'is not an export (paddle-elmo export-inference writes {", ".join(EXPORTED_FILES)})')
    quantized = has_onnx and read_manifest(model_dir).get('precision', 'float32') != 'float32'
    if has_program and has_onnx and quantized:
        backend = 'onnxruntime' if _importable('onnxruntime') else 'paddle'
        reason = ('the export is int8' if backend == 'onnxruntime' else
                  f'float32: its int8 {ONNX_FILE} is skipped, onnxruntime cannot be imported')
    elif has_program and has_onnx:
        backend = 'paddle' if _importable('paddle.inference') else 'onnxruntime'
        reason = 'Paddle can be imported' if backend == 'paddle' else 'Paddle cannot be imported'
    else:
        backend = 'paddle' if has_program else 'onnxruntime'
        reason = f'the directory holds no {ONNX_FILE if has_program else PROGRAM_FILES[0]}'
    runs = PROGRAM_FILES[0] if backend == 'paddle' else f'{"int8 " if quantized else ""}{ONNX_FILE}'
    log.info('%s: run by %s on its %s (%s; --inference_backend or backend= chooses)', model_dir, backend, runs, reason)
    return backend


def default_session_options(threads):
    """The onnxruntime.SessionOptions an InferenceEmbedder runs with unless given others: `threads`
    intra-op threads whose workers wait for work asleep, not spinning. A Loop step is dozens of small
    ops, and on a busy machine spinning threads take the cores from the ones doing the work; idle,
    sleeping costs a few percent."""
    onnxruntime = require_package('onnxruntime', 'serve')
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry('session.intra_op.allow_spinning', '0')
    return options


def _importable(module):
    """Whether `module` imports here (imported, then, as its backend will be)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


class InferenceEmbedder(SentenceEmbedder):
    """An exported model (export_inference's directory) as an embedder: sentences in, numpy out.

    Same results and batching as ELMoEmbedder(stateful=False) (sentences grouped by length), run by
    Paddle Inference's predictor (backend='paddle'; onednn=False runs Paddle's own CPU kernels,
    matmuls on MKL) or onnxruntime (backend='onnxruntime'); backend=None picks one (choose_backend:
    onnxruntime for an int8 export; Paddle where it can be imported, else onnxruntime) and logs which. threads: CPU threads (None: as
    ELMoEmbedder, the user's OMP_NUM_THREADS or the available cores). tokenizer: as ELMoEmbedder's
    (None: the one the export's options.json records). A word or word+char export maps tokens to
    word ids with its vocab.txt (`mapper`, a token_ids.InputMapper). `precision`: 'float32', or how
    model.onnx was quantized ('int8: ...', export-inference --quantize int8) for onnxruntime.
    `verified`: the checks export.json records (the comparisons with ELMoEmbedder before the export
    was written), 'unverified' (export-inference --no_verify: logged as a warning), or None for an
    export written before export.json existed. session_options: onnxruntime only, an
    onnxruntime.SessionOptions to run the session with (profiling, graph optimisation levels, other
    threads) instead of the default: `threads` intra-op threads whose workers do not spin (with
    session_options, threads stays None: the options hold the threads).
    """

    stateful = False

    def __init__(self, model_dir, backend=None, batch_size=64, onednn=True, threads=None, tokenizer=None,
                 session_options=None):
        if backend not in (None, *BACKENDS):
            raise InputError(f'backend must be one of {BACKENDS} (or None: choose_backend), got {backend!r}')
        backend = choose_backend(model_dir, backend)
        if session_options is not None and backend != 'onnxruntime':
            raise InputError(f'session_options are onnxruntime\'s; this embedder runs {model_dir} on {backend} '
                             f'(pass backend=\'onnxruntime\')')
        if session_options is not None and threads is not None:
            raise InputError('threads and session_options: set the threads in the SessionOptions '
                             '(intra_op_num_threads), not both')
        self.model_dir, self.backend, self.batch_size = model_dir, backend, batch_size
        self.precision = 'float32'  # model.onnx's PRECISION_KEY when it is quantized: 'int8: ...'
        needed = list(PROGRAM_FILES) if backend == 'paddle' else [ONNX_FILE]
        for name in needed + [OPTIONS_FILE]:
            if not os.path.isfile(os.path.join(model_dir, name)):
                raise FileNotFoundError(f'{os.path.join(model_dir, name)}: not found; {model_dir} is not an export '
                                        f'for {backend} (paddle-elmo export-inference writes {", ".join(EXPORTED_FILES)})')
        self.config = read_model_config(os.path.join(model_dir, OPTIONS_FILE))
        vocab_file = os.path.join(model_dir, VOCAB_FILE)
        if self.config.has_words and not self.config.input_mode.chars_from_vocab and not os.path.isfile(vocab_file):
            raise FileNotFoundError(f'{vocab_file}: not found; the export of a {self.config.token_input} model holds '
                                    f'its input vocabulary there (paddle-elmo export-inference writes it)')
        self.verified = read_manifest(model_dir).get('verified')
        if self.verified == UNVERIFIED:
            log.warning('%s: written unverified (export-inference --no_verify, its %s says so): its outputs were never '
                        'compared with the model it was exported from', model_dir, MANIFEST_FILE)
        self.tokenizer = model_tokenizer(self.config.tokenizer, tokenizer)
        self.mapper = InputMapper(self.config, read_input_vocabulary(self.config, model_dir, source=model_dir))
        threads = threads or default_threads()
        if backend == 'paddle':
            ask_mkl_for_fast_path()  # before the predictor's first product (without oneDNN, MKL runs them)
            inference = require_package('paddle.inference', 'cpu')
            config = inference.Config(*(os.path.join(model_dir, n) for n in needed))
            config.disable_glog_info()
            config.set_cpu_math_library_num_threads(threads)
            if onednn:
                config.enable_onednn()
            else:
                config.disable_onednn()
            self._predictor = inference.create_predictor(config)
        else:
            onnxruntime = require_package('onnxruntime', 'serve')
            if session_options is None:
                session_options = default_session_options(threads)
            self._session = onnxruntime.InferenceSession(os.path.join(model_dir, ONNX_FILE), session_options,
                                                         providers=['CPUExecutionProvider'])
            self.precision = self._session.get_modelmeta().custom_metadata_map.get(PRECISION_KEY, 'float32')

    @property
    def dim(self):
        return 2 * self.config.projection_dim

    def run(self, char_ids=None, word_ids=None):
        """The export's inputs (input_names) as InputMapper.batch returns them, with <S> and </S>:
        char_ids int64 [batch, time, max_chars], word_ids int64 [batch, time], or a TokenInput
        -> (layers, mask) numpy, as exported."""
        inputs = TokenInput.of(char_ids, word_ids)
        feed = {}
        for name, ids in zip(input_names(self.config), inputs.ids(input_names(self.config))):
            if ids is None:
                raise ValueError(f'{self.model_dir}: this export ({self.config.token_input} input) reads {name}: '
                                 f'make them with paddle_elmo.text.token_ids.InputMapper')
            feed[name] = np.ascontiguousarray(ids, dtype=np.int64)
        if self.backend == 'onnxruntime':
            return tuple(self._session.run(list(OUTPUT_NAMES), feed))
        for name, ids in feed.items():
            handle = self._predictor.get_input_handle(name)
            handle.reshape(list(ids.shape))
            handle.copy_from_cpu(ids)
        self._predictor.run()
        return tuple(self._predictor.get_output_handle(n).copy_to_cpu() for n in OUTPUT_NAMES)

    def _embed_token_lists(self, sentences):
        """One batch of token lists -> list of float32 [n_layers + 1, n_tokens, 2P], boundaries removed."""
        if not sentences:
            return []
        layers, _ = self.run(self.mapper.batch(sentences))
        return [np.ascontiguousarray(layers[row, :, :len(s)]) for row, s in enumerate(sentences)]

    def reset_states(self):
        """Nothing to reset: the export is stateless."""
