"""What every command module reaches as `cli` (`from paddle_elmo.cli import flags as cli`): the
names of the modules below, in one place, so that a command reads `cli.parser`, `cli.run`,
`cli.model_source` whichever module holds them. It defines nothing.

- glossary: the vocabulary of flags (FLAGS) and a flag's option strings;
- arguments: the parser, Switch, the argparse types (sizes, output paths), --tokenizer and --device;
- model_flags: where the model comes from (--model, a checkpoint, bilm-tf files, an export);
- config_flags: pretraining's flags, one per config field, and pretrain's parser;
- runner: the error boundary (run) and the log;
- flag_table: README's flag table.
"""
from paddle_elmo.cli.arguments import (Switch, add_device, add_tokenizer, count_or_zero, device_name,  # noqa: F401
                                       float_or_zero, output_directory, output_file, parser, positive_float,
                                       positive_int, shown_default, underscored)
from paddle_elmo.cli.config_flags import (CHOICES, DATA_FIELDS, FLAG_TYPES, NOT_FLAGS, add_config_flags,  # noqa: F401
                                          given_settings, pretrain_parser)
from paddle_elmo.cli.flag_table import README_END, README_START, flag_uses, flags_markdown  # noqa: F401
from paddle_elmo.cli.glossary import ARGPARSE_OPTIONS, FLAGS, option_strings  # noqa: F401
from paddle_elmo.cli.model_flags import (MODEL_HELP, VOCAB_HELP, add_inference_model, add_model_source,  # noqa: F401
                                         check_files_flags, model_source, model_vocabulary)
from paddle_elmo.cli.runner import LOGGER, command_logging, fail, log_level, run, set_log_level  # noqa: F401
from paddle_elmo.config import PRESETS  # noqa: F401
from paddle_elmo.fileio import InputError  # noqa: F401
