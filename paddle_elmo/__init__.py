"""ELMo (Peters et al. 2018) in PaddlePaddle: the module users import.

    from elmo import ELMoEmbedder, Elmo, ScalarMix, BiLM

Computes exactly what allenai/bilm-tf and AllenNLP compute (`../shared/REFERENCE-ELMO.md`), and
reads and writes their `options.json` + `weights.hdf5`. The pieces live in one file per job:

- `config.py`: `ModelConfig` (the biLM's settings; `from_options` / `to_options` for options.json).
- `bilm.py`: the biLM, `BiLM(config)` -> L + 1 layers `[batch, time, 2 * projection_dim]`.
- `model_io.py`: every model file in and out: hdf5 weights, our checkpoints (`load_bilm`, `export_weights`).
- `downstream.py`: `ScalarMix` and `Elmo`, the layers a downstream model adds.
- `embedder.py`: `ELMoEmbedder` (sentences in, numpy arrays out), `embed_file` (text to hdf5) and
  `dump_token_embeddings` (a vocabulary's token representations to hdf5, as bilm-tf's; any token input).
"""
from bilm import BiLM, remove_sentence_boundaries  # noqa: F401
from config import ORIGINAL_FILTERS, PRESETS, ModelConfig, Recipe  # noqa: F401
from downstream import Elmo, ScalarMix  # noqa: F401
from embedder import ELMoEmbedder, dump_token_embeddings, embed_file, token_embeddings  # noqa: F401
from model_io import (checkpoint_paths, export_weights, hdf5_layout, load_bilm, load_bilm_checkpoint,  # noqa: F401
                      load_hdf5_weights, load_language_model, read_checkpoint, read_model_config,
                      save_hdf5_weights)
from runtime import keep_freed_memory, set_mode, use_device  # noqa: F401
