"""No output replaces an input: which flags name the files a command reads and which the files or
directories it writes, and the check, made as the command's flags are parsed (before any work), that
no output is one of its inputs: the same file by any name (a link, `./`, another spelling) or, for an
output directory, a directory holding one. The flags are known by name (one name per concept:
glossary.FLAGS), so every command is checked alike; tests/test_what_users_have.py holds each flag of
every command to a role here.
"""
import glob
import json
import os

from paddle_elmo.fileio import STDIO, InputError
from paddle_elmo.export.export_format import EXPORTED_FILES
from paddle_elmo.files.checkpoint_names import OPTIMIZER_SUFFIX, PARAMS_SUFFIX
from paddle_elmo.files.efml_model import RUN_FILE
from paddle_elmo.files.model_names import is_model_name
from paddle_elmo.files.run_configs import OPTIONS_FILE, RECIPE_FILE, VOCAB_FILE, WEIGHTS_FILE
from paddle_elmo.text.dictionary_ids import CHAR_DIC, WORD_DIC

# a file (or `-`), a glob of files, a directory whose files are read, a model as --model takes it
INPUT_FILES = ('input_file', 'vocab_file', 'options_file', 'weight_file', 'embedding_weight_file', 'word_vectors',
               'prefix_file', 'verify_file')
INPUT_GLOBS = ('train_data_path', 'dev_data_path')
INPUT_DIRS = ('data_dir',)  # its --pos_file and --neg_file
INPUT_MODELS = ('model', 'init_from_ckpt', 'init_from_weights', 'inference_model')
OUTPUT_FILES = ('output_file', 'output_corpus', 'output_json', 'output_word_vectors')
OUTPUT_DIRS = ('output_dir',)
# The files of a model's directory, by name and by ending: ours, bilm-tf's, an export's, a checkpoint's, and an
# ELMoForManyLangs directory's (its config.json and *.pkl state dicts)
MODEL_FILES = {OPTIONS_FILE, WEIGHTS_FILE, VOCAB_FILE, RECIPE_FILE, *EXPORTED_FILES, CHAR_DIC, WORD_DIC, RUN_FILE}
MODEL_FILE_ENDINGS = (PARAMS_SUFFIX, OPTIMIZER_SUFFIX, '.pkl')
# pretrain's run directory, which holds its own inputs when it resumes: files/run_directory.py's rules
OWN_RULES = ('save_dir',)


def check_outputs_apart(args, parser):
    """InputError (one line naming both flags as `parser` does) when an output of the parsed flags `args` is
    one of its inputs."""
    flags = {action.dest: (action.option_strings or [action.dest])[0] for action in parser._actions}
    check_outputs_distinct(args, flags)
    inputs = list(input_files(args, flags))
    for name in OUTPUT_FILES + OUTPUT_DIRS:
        output = getattr(args, name, None)
        if not output or output == STDIO or not os.path.exists(output):
            continue  # a path that does not exist yet is no input
        for flag, path in inputs:
            if clashes(output, path, name in OUTPUT_DIRS):
                what = 'holds' if name in OUTPUT_DIRS else 'is'
                raise InputError(f'{flags[name]} {output}: {what} the input {flag} {path}; a command never writes '
                                 f'over its input: give another {"directory" if name in OUTPUT_DIRS else "file"}')


def check_outputs_distinct(args, flags):
    """InputError when two file outputs of one command are the same file (the second would replace the first)."""
    seen = {}
    for name in OUTPUT_FILES:
        output = getattr(args, name, None)
        if output and output != STDIO:
            real = os.path.realpath(output)
            if real in seen:
                raise InputError(f'{flags[name]} {output}: the same file as {flags[seen[real]]}; give each output '
                                 f'its own file')
            seen[real] = name


def clashes(output, path, is_directory):
    """Whether writing `output` (a file, or a directory written or replaced as a whole) would replace `path`."""
    if not is_directory:
        return os.path.samefile(output, path)
    real = os.path.realpath(output)
    return os.path.realpath(path) == real or os.path.realpath(path).startswith(real + os.sep)


def input_files(args, flags):
    """Yield (its flag in `flags`, path) for every existing file the parsed flags `args` name as inputs."""
    for name in INPUT_FILES + INPUT_GLOBS + INPUT_DIRS + INPUT_MODELS:
        value = getattr(args, name, None)
        if not value or value == STDIO:
            continue
        flag = flags[name]
        paths = (glob.glob(value) if name in INPUT_GLOBS else model_files(value) if name in INPUT_MODELS else
                 [os.path.join(value, getattr(args, n)) for n in ('pos_file', 'neg_file')] if name in INPUT_DIRS
                 else [value])
        yield from ((flag, path) for path in paths if os.path.isfile(path))


def model_files(value):
    """The files of a model as --model names it: a directory's model files (not what else it holds: an
    earlier command's output), a checkpoint prefix's (DIR/N.*, the configs beside it and the vocabulary its
    recipe records); none for a model name (the cache's or the package's own files)."""
    if os.path.isdir(value):
        return [os.path.join(value, n) for n in os.listdir(value) if n in MODEL_FILES or n.endswith(MODEL_FILE_ENDINGS)]
    if os.path.isfile(value) or is_model_name(value):
        return [value] if os.path.isfile(value) else []
    prefix = value[:-len(PARAMS_SUFFIX)] if value.endswith(PARAMS_SUFFIX) else value
    directory = os.path.dirname(prefix) or '.'
    files = glob.glob(glob.escape(prefix) + '.*') + [os.path.join(directory, n) for n in (OPTIONS_FILE, VOCAB_FILE)]
    return files + recorded_vocabulary(os.path.join(directory, RECIPE_FILE))


def recorded_vocabulary(recipe_file):
    """[the vocab_file a run's recipe.json records], or [] (no recipe, an unreadable one)."""
    try:
        with open(recipe_file, encoding='utf-8') as f:
            recorded = json.load(f).get('vocab_file')
    except (OSError, ValueError, AttributeError):
        return []
    return [recipe_file, recorded] if isinstance(recorded, str) else [recipe_file]
