"""ELMo (Peters et al. 2018) in PaddlePaddle: the module users import.

    from elmo import ELMoEmbedder, Elmo, ScalarMix, BiLM

Computes exactly what allenai/bilm-tf and AllenNLP compute (`../shared/REFERENCE-ELMO.md`), and
reads and writes their `options.json` + `weights.hdf5`. The pieces live in one file per job:

- `bilm.py`: options and the biLM, `BiLM(options)` -> L + 1 layers `[batch, time, 2 * projection_dim]`.
- `model_io.py`: hdf5 weights and our checkpoints, in and out (`load_bilm`, `export_weights`).
- `downstream.py`: `ScalarMix` and `Elmo`, the layers a downstream model adds.
- `embedder.py`: `ELMoEmbedder` (sentences in, numpy arrays out), `embed_file` (text to hdf5) and
  `dump_token_embeddings` (a vocabulary's char-CNN representations to hdf5, as bilm-tf's).
"""
import cpu  # noqa: F401  (before Paddle's import: it reads the user's OMP_NUM_THREADS, which Paddle overwrites)
import kernels  # noqa: F401  (first: it imports Paddle without Paddle's ccache notice)
from bilm import (ORIGINAL_FILTERS, BiLM, check_options, load_options, make_options,  # noqa: F401
                  remove_sentence_boundaries, set_mode)
from downstream import Elmo, ScalarMix  # noqa: F401
from embedder import (ELMoEmbedder, dump_token_embeddings, embed_file, keep_freed_memory,  # noqa: F401
                      token_embeddings, use_device)
from model_io import (checkpoint_paths, export_weights, hdf5_layout, load_bilm,  # noqa: F401
                      load_checkpoint, load_hdf5_weights, read_checkpoint, save_hdf5_weights)
