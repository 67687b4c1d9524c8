"""The design card's `args.py`, kept for checkouts: the commands' shared flags and their one-line errors.

They live in `paddle_elmo.cli`'s modules, one per part (README, "How the code is organised").
"""
from paddle_elmo.cli.arguments import (Switch, add_device, add_tokenizer, count_or_zero, device_name,  # noqa: F401
                                       parser, positive_int, shown_default)
from paddle_elmo.cli.config_flags import (CHOICES, DATA_FIELDS, FLAG_TYPES, NOT_FLAGS, add_config_flags,  # noqa: F401
                                          given_settings, pretrain_parser)
from paddle_elmo.cli.glossary import ARGPARSE_OPTIONS, FLAGS, option_strings  # noqa: F401
from paddle_elmo.cli.model_flags import (MODEL_HELP, VOCAB_HELP, add_inference_model, add_model_source,  # noqa: F401
                                         check_files_flags, model_source, model_vocabulary)
from paddle_elmo.cli.runner import LOGGER, command_logging, fail, log_level, run, set_log_level  # noqa: F401
from paddle_elmo.model.recipe import PRESETS  # noqa: F401
from paddle_elmo.fileio import InputError  # noqa: F401
