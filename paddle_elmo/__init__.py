"""ELMo (Peters et al. 2018) in PaddlePaddle.

    from paddle_elmo import ELMoEmbedder, Elmo, ScalarMix, BiLM
    from paddle_elmo import ElmoEmbedder, dump_token_embeddings   # AllenNLP's and bilm-tf's calls, unchanged

Computes exactly what allenai/bilm-tf and AllenNLP compute, and reads and writes their
`options.json` + `weights.hdf5`. The names below are the public API; each lives in the module of
its concept (`paddle_elmo.model.config`, `.model.bilm`, `.files.model_io`, `.use.downstream`,
`.use.embedder`, ...: docs/ARCHITECTURE.md's code map)
and is imported from there on first use, so `import paddle_elmo` (and every `paddle-elmo --help`)
does not import Paddle.

Importing the package (which Python does first for any `paddle_elmo.*` import) imports
`paddle_elmo.runtime`, the one place that sets what must be set before Paddle is imported (its
docstring says what), so no module of ours has to be imported before another, and each imports
`paddle` plainly. MKL's code path and the threads are set by `runtime.configure()` before the first
product (ELMoEmbedder, Elmo and the commands call it), not by any import.

The library never prints: it logs through `logging.getLogger(__name__)` (all under the
`paddle_elmo` logger; progress lines at INFO, notes that matter and problems at WARNING/ERROR) and
shows tqdm bars on stderr, which the logger's level switches off too (`paddle_elmo.logs`).
Silence it as any library: `logging.getLogger('paddle_elmo').setLevel(logging.WARNING)`.
"""
import importlib
import logging
import typing

from paddle_elmo import runtime  # noqa: F401  (first: its import-time settings, see above)

__version__ = '1.0.0'

logging.getLogger(__name__).addHandler(logging.NullHandler())  # the application configures logging, not us

# public name -> the module that defines it
_EXPORTS = {
    'BiLM': 'model.bilm', 'remove_sentence_boundaries': 'model.bilm',
    'ORIGINAL_FILTERS': 'model.config', 'ModelConfig': 'model.config',
    'PRESETS': 'model.recipe', 'Recipe': 'model.recipe',
    'Elmo': 'use.downstream', 'ScalarMix': 'use.downstream',
    'ELMoEmbedder': 'use.embedder', 'dump_token_embeddings': 'use.embedder', 'token_embeddings': 'use.embedder',
    'ElmoEmbedder': 'use.embedder',  # AllenNLP's name and arguments (allennlp.commands.elmo)
    'InferenceEmbedder': 'export.inference',  # an export, run without Paddle where onnxruntime is installed
    'embed_file': 'use.sentence_embedder',
    'LoadedModel': 'files.model_io', 'resolve_model': 'files.model_io',
    'read_model_config': 'files.run_configs',
    'load_language_model': 'train.lm_loading',
    'TokenInput': 'text.token_ids',
    'checkpoint_paths': 'files.checkpoint_names', 'read_checkpoint': 'files.checkpoints',
    'export_weights': 'files.hdf5_weights', 'hdf5_layout': 'files.hdf5_weights',
    'load_hdf5_weights': 'files.hdf5_weights', 'save_hdf5_weights': 'files.hdf5_weights',
    'keep_freed_memory': 'runtime', 'set_mode': 'runtime', 'use_device': 'runtime',
}
__all__ = ['__version__', *_EXPORTS]

if typing.TYPE_CHECKING:  # what editors and type checkers read; at run time __getattr__ imports on demand
    from paddle_elmo.model.bilm import BiLM, remove_sentence_boundaries  # noqa: F401
    from paddle_elmo.model.config import ORIGINAL_FILTERS, ModelConfig  # noqa: F401
    from paddle_elmo.model.recipe import PRESETS, Recipe  # noqa: F401
    from paddle_elmo.use.downstream import Elmo, ScalarMix  # noqa: F401
    from paddle_elmo.use.embedder import (ELMoEmbedder, ElmoEmbedder, dump_token_embeddings,  # noqa: F401
                                          token_embeddings)
    from paddle_elmo.export.inference import InferenceEmbedder  # noqa: F401
    from paddle_elmo.use.sentence_embedder import embed_file  # noqa: F401
    from paddle_elmo.files.checkpoint_names import checkpoint_paths  # noqa: F401
    from paddle_elmo.files.checkpoints import read_checkpoint  # noqa: F401
    from paddle_elmo.files.hdf5_weights import (export_weights, hdf5_layout, load_hdf5_weights,  # noqa: F401
                                                save_hdf5_weights)
    from paddle_elmo.train.lm_loading import load_language_model  # noqa: F401
    from paddle_elmo.files.model_io import LoadedModel, resolve_model  # noqa: F401
    from paddle_elmo.text.token_ids import TokenInput  # noqa: F401
    from paddle_elmo.files.run_configs import read_model_config  # noqa: F401
    from paddle_elmo.runtime import keep_freed_memory, set_mode, use_device  # noqa: F401


def __getattr__(name):
    """A public name, imported from its module on first use. Where the module needs a package the
    install lacks (Paddle in the core or [serve] install), a MissingPackageError (an ImportError)
    naming the extra that brings it, instead of the bare ModuleNotFoundError."""
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    try:
        module = importlib.import_module(f'{__name__}.{_EXPORTS[name]}')
    except ModuleNotFoundError as e:
        from paddle_elmo.fileio import missing_package
        missing = missing_package(e)
        if missing is None:
            raise
        raise missing from None
    value = getattr(module, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
