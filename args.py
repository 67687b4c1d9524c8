"""The design card's `args.py`, kept for checkouts: the commands' shared flags and their one-line errors.

They live in `paddle_elmo.cli.flags`.
"""
from paddle_elmo.cli.flags import *  # noqa: F401,F403
from paddle_elmo.cli.flags import (add_config_flags, add_device, add_model_source, add_tokenizer,  # noqa: F401
                                   given_settings, model_source, parser, pretrain_parser, run)
