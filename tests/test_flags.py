"""One vocabulary of flags (issue 34): every option of every command is a name of the flag table
(paddle_elmo.cli.glossary.FLAGS) or an alias it declares, one concept per name, one style of switch,
every default in --help, and docs/FLAGS.md's table made from the same data. Nothing here runs a command:
the parsers come from each command module's build_parser()."""
import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, one_line_error
from paddle_elmo.cli import COMMANDS, command_parsers
from paddle_elmo.cli.arguments import Switch, underscored
from paddle_elmo.cli.config_flags import NOT_FLAGS
from paddle_elmo.cli.flag_table import TABLE_END, TABLE_START, flag_uses, flags_markdown
from paddle_elmo.cli.glossary import FLAGS, option_strings
from paddle_elmo.fileio import InputError
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.model.recipe import Recipe

# Level-of-output flags, not on/off settings: `--quiet` has no `--no_quiet` (the protocol's, as before).
NOT_SWITCHES = ('quiet', 'verbose', 'all', 'top', 'average',  # these three pick one of --output_format's values
                'use_sentence_keys', 'forget_sentences')  # allennlp elmo's flags as it spells them: on when given


@pytest.fixture(scope='module')
def parsers():
    return command_parsers()


def options(parsers):
    """(command, action) for every option (not positional, not --help) of every parser."""
    return [(command, action) for command, p in parsers.items() for action in p._actions
            if action.option_strings and not isinstance(action, argparse._HelpAction)]


def test_every_command_has_a_parser_and_a_main_taking_argv():
    import importlib
    import inspect
    for name, (module, _, _) in COMMANDS.items():
        m = importlib.import_module(f'paddle_elmo.cli.{module}')
        assert isinstance(m.build_parser(), argparse.ArgumentParser), name
        assert list(inspect.signature(m.main).parameters) == ['argv'], name


def test_every_option_is_a_table_name_with_exactly_its_declared_aliases(parsers):
    for command, action in options(parsers):
        name = action.option_strings[0][2:]
        assert name in FLAGS, f'{command}: --{name} is not in glossary.FLAGS (add it, or use the name there)'
        expected = option_strings(name)
        if isinstance(action, Switch):
            expected = [s for n in expected for s in (n, f'--no_{n[2:]}')]
        assert action.option_strings == expected, f'{command}: {action.option_strings}, expected {expected}'
        assert action.dest == name, f'{command}: --{name} stores into {action.dest!r}'


def test_every_table_name_is_some_command_s_flag(parsers):
    uses, _ = flag_uses(parsers)
    assert set(FLAGS) - set(uses) == set()


def test_one_concept_per_name_and_one_name_per_alias():
    concepts = [concept for concept, _ in FLAGS.values()]
    assert len(set(concepts)) == len(concepts), [c for c in concepts if concepts.count(c) > 1]
    aliases = [alias for _, names in FLAGS.values() for alias in names]
    assert len(set(aliases)) == len(aliases)
    assert not set(aliases) & set(FLAGS)
    switch_negations = {f'no_{name}' for name in FLAGS}
    assert not (set(aliases) | set(FLAGS)) & switch_negations


def test_a_switch_is_x_and_no_x_everywhere(parsers):
    for command, action in options(parsers):
        name = action.option_strings[0][2:]
        if action.nargs == 0 and name not in NOT_SWITCHES:
            assert isinstance(action, Switch), f'{command}: --{name} is a switch without --no_{name}'
        assert not any(s.startswith('--no-') for s in action.option_strings), (command, action.option_strings)
    p = parsers['finetune']
    assert p.parse_args(['--data_dir', 'd']).cache is True
    assert p.parse_args(['--data_dir', 'd', '--no_cache']).cache is False
    assert p.parse_args(['--data_dir', 'd', '--no_cache', '--cache']).cache is True
    assert parsers['export-weights'].parse_args(['--init_from_ckpt', 'c', '--output_dir', 'o',
                                                 '--no_softmax']).softmax is False
    assert parsers['pretrain'].parse_args([]).freeze_bilm is None  # the preset or checkpoint decides
    assert parsers['pretrain'].parse_args(['--no_use_skip_connections']).use_skip_connections is False


def test_every_option_s_help_shows_its_default_unless_it_is_none(parsers):
    for command, p in parsers.items():
        formatter = p._get_formatter()
        for action in p._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            text = formatter._get_help_string(action)
            if action.default is not None:
                assert '(default' in text, f'{command} --{action.dest}: {text!r}'
            assert '%(default)' not in text
    help_of = {command: p.format_help() for command, p in parsers.items()}
    assert 'stop after this many target tokens (0: all) (default: 0)' in ' '.join(help_of['eval'].split())
    assert '--quiet log warnings and errors only (stderr): no progress lines or bars' in ' '.join(
        help_of['finetune'].split())
    assert '(default: on)' in help_of['embed'] and '(default: softmax char_cnn)' in help_of['dump']
    assert '{paddle,onnx,paddle}' not in help_of['export-inference']
    assert '--formats paddle[,onnx]' in help_of['export-inference']


def test_pretrain_s_config_flags_show_their_field_s_default_or_the_presets(parsers):
    actions = {a.dest: a for a in parsers['pretrain']._actions}
    for f in [*dataclasses.fields(ModelConfig), *dataclasses.fields(Recipe)]:
        if f.name in actions and f.name not in NOT_FLAGS and f.default is not None:
            assert '(default' in actions[f.name].help, f'--{f.name}: {actions[f.name].help!r}'
    assert '(default: off)' in actions['freeze_bilm'].help
    assert 'original on, small on, budget on' in actions['use_skip_connections'].help
    assert '(default: 0)' in actions['word_dim'].help


def test_the_paddlenlp_example_s_names_are_accepted_and_shown(parsers):
    aliases = {alias: name for name, (_, names) in FLAGS.items() for alias in names}
    # the PaddleNLP example's names, and allennlp elmo's --cuda-device (as every name, spelt with _)
    assert aliases == {'pretrained_word2vec_file': 'word_vectors', 'logging_step': 'log_freq',
                       'sent_embedding_dim': 'hidden_dim', 'cuda_device': 'device'}
    # name -> (the value given, the value parsed)
    values = {'word_vectors': ('v.bin', 'v.bin'), 'log_freq': ('7', 7), 'hidden_dim': ('64', 64), 'device': ('-1', 'cpu')}
    required = {'finetune': ['--data_dir', 'd'], 'word2vec': ['--data_dir', 'd', '--word_vectors', 'w.bin'],
                'eval': ['--dev_data_path', 'd'], 'embed': ['in.txt', 'out.hdf5'], 'export-inference': ['--output_dir', 'o']}
    checked = set()
    for command, p in parsers.items():
        for alias, name in aliases.items():
            if any(f'--{name}' in a.option_strings for a in p._actions):
                given, parsed = values[name]
                a = p.parse_args(required.get(command, []) + [f'--{alias}', given])
                assert getattr(a, name) == parsed, (command, alias)
                assert f'--{alias}' in p.format_help()
                checked.add(alias)
    assert checked == set(aliases)


def test_every_flag_is_spelt_with_underscores_and_also_taken_with_hyphens_shown_nowhere(parsers):
    for command, action in options(parsers):
        for option in action.option_strings:
            assert '-' not in option[2:], f'{command}: {option} (a name is spelt with _; - is taken for every flag)'
            hyphens = '--' + option[2:].replace('_', '-')
            assert underscored([hyphens, '1'], parsers[command]._option_string_actions) == [option, '1']
            assert underscored([f'{hyphens}=1'], parsers[command]._option_string_actions) == [f'{option}=1']
    # allennlp elmo's spellings, as its users type them
    a = parsers['embed'].parse_args(['in.txt', 'out.hdf5', '--batch-size', '5', '--cuda-device', '-1', '--options-file',
                                     'o.json', '--weight-file', 'w.hdf5', '--use-sentence-keys', '--forget-sentences'])
    assert (a.batch_size, a.device, a.options_file, a.weight_file, a.use_sentence_keys, a.forget_sentences) == (
        5, 'cpu', 'o.json', 'w.hdf5', True, True)
    assert parsers['finetune'].parse_args(['--data_dir', 'd', '--no-cache', '--log-freq=3']).cache is False
    # a value or anything after -- keeps its hyphens; an unknown flag is not made up
    assert underscored(['--prefix', 'a-b', '--', '--batch-size'], {'--prefix': None, '--batch_size': None}) == [
        '--prefix', 'a-b', '--', '--batch-size']
    assert underscored(['--no-such-flag'], {'--batch_size': None}) == ['--no-such-flag']


@pytest.mark.parametrize('command, argv, error', [
    ('predict', ['--top', '2'], 'error: unrecognized arguments: --top 2'),  # not --top_k 2: no prefix matching
    ('pretrain', ['--max_step', '4'], 'error: unrecognized arguments: --max_step 4'),
    ('embed', ['in.txt', 'out.hdf5', '--batch-size', '0'], "error: argument --batch_size: expected a positive integer"),
    ('finetune', ['--data_dir', 'd', '--pretrained_word2vec_file'], 'error: argument --word_vectors: expected one '
     'argument'),
    ('embed', ['in.txt', 'out.hdf5', '--cuda-device', 'x'], 'error: argument --device: expected cpu, gpu'),
])
def test_a_flag_is_named_in_full_and_an_error_names_it_as_its_help_does(parsers, capsys, command, argv, error):
    assert all(not p.allow_abbrev for p in parsers.values())
    with pytest.raises(SystemExit) as e:
        parsers[command].parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(error) and err.count('\n') == 1, err


def test_the_flags_document_s_table_is_the_generated_one(parsers):
    with open(os.path.join(ROOT, 'docs', 'FLAGS.md'), encoding='utf-8') as f:
        text = f.read()
    assert text.startswith('# Flags\n') and text.index(TABLE_START) < text.index(TABLE_END)
    table = text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)]
    assert table == '\n' + flags_markdown(parsers), 'docs/FLAGS.md is stale: run `make flags-table`'


def test_readme_links_the_flags_document_and_holds_no_flag_table():
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    assert '](docs/FLAGS.md)' in text and TABLE_START not in text


@pytest.mark.parametrize('argv', [['--nproc_per_node', '2', '--max_steps', '4'], ['--max_steps', '4', '--nproc_per_node=2'],
                                  ['--nproc-per-node', '2', '--max_steps', '4']])
def test_pretrain_launch_passes_every_flag_but_nproc_per_node_to_the_ranks(monkeypatch, argv, tmp_path):
    from paddle_elmo.cli import pretrain
    ran = []
    monkeypatch.setattr(pretrain.shutil, 'which', lambda *a, **k: '/bin/paddle-elmo')
    monkeypatch.setattr(pretrain.subprocess, 'Popen', lambda cmd: ran.append(cmd) or argparse.Namespace(wait=lambda: 0))
    monkeypatch.setattr(pretrain.signal, 'signal', lambda *a: None)
    save_dir = str(tmp_path / 'ckpt')
    argv = [*argv, '--save_dir', save_dir, '--overwrite_save_dir']  # the run's directory: said once, decided here
    assert pretrain.launch(pretrain.build_parser().parse_args(argv), argv) == 0
    assert ran[0][ran[0].index('/bin/paddle-elmo'):] == ['/bin/paddle-elmo', 'pretrain', '--max_steps', '4',
                                                         '--save_dir', save_dir]


# ---- one meaning per flag, one name per concept (issue: flags that meant two things) ------------------

# Flags that several commands take with a different type or default, on purpose. name -> {command: what
# its --help must say about the difference}; an empty dict: the reason is here, the concept's own.
DIFFERENT_ON_PURPOSE = {
    'batch_size': {},  # what a batch holds is each command's: LM rows, training sentences, sentences to embed
    'dropout': {},  # the biLM's, or a classifier head's (FLAGS' concept says so)
    'lr': {},  # the biLM's (Adagrad/Adam), or a classifier head's (Adam)
    'epochs': {},  # passes over n_train_tokens, or at most per fold (FLAGS' concept)
    'tokenizer': {},  # a command that loads a model defaults to the model's; one that reads bare text to whitespace
    'log_freq': {'pretrain': "not the classifiers' 0 (once per epoch)", 'finetune': "pretrain's is 100",
                 'word2vec': "pretrain's is 100"},
    'eval_max_tokens': {'pretrain': 'paddle-elmo eval reads all by default'},
    'min_count': {'word2vec': "not build-vocab's 1", 'build-vocab': "not word2vec's 5"},
    # `-` (standard input or output) where the command reads the file once or writes it whole
    'train_data_path': {'build-vocab': '- reads standard input'},
    'dev_data_path': {'eval': '- reads standard input'},
    'output_file': {'build-vocab': '- writes it to standard output'},
}


def effective_default(command, action):
    """What a flag means when not given: pretrain's config flags default to None and take the field's
    default or the default preset's value."""
    from paddle_elmo.model.recipe import PRESETS
    fields = {f.name: f.default for cls in (ModelConfig, Recipe) for f in dataclasses.fields(cls)}
    if command == 'pretrain' and action.dest in fields:
        return PRESETS['original'].get(action.dest, fields[action.dest])
    return action.default


def test_a_flag_shared_by_commands_has_one_type_and_default_or_a_stated_reason(parsers):
    by_name = {}
    for command, action in options(parsers):
        by_name.setdefault(action.dest, []).append((command, action))
    differing = set()
    for name, uses in by_name.items():
        kinds = {(getattr(a.type, '__name__', 'str') if a.nargs != 0 else 'switch', repr(effective_default(c, a)))
                 for c, a in uses}
        if len(kinds) > 1:
            differing.add(name)
            assert name in DIFFERENT_ON_PURPOSE, f'--{name} differs between commands: {sorted(kinds)}'
            for command, phrase in DIFFERENT_ON_PURPOSE[name].items():
                text = ' '.join(next(a.help for c, a in uses if c == command).split())
                assert phrase in text, f'{command} --{name}: the help does not say why its default differs: {text!r}'
    assert differing == set(DIFFERENT_ON_PURPOSE), 'stale entries: ' + str(set(DIFFERENT_ON_PURPOSE) - differing)


def test_max_vocab_size_keeps_words_and_max_vectors_reads_vectors(parsers):
    names = {command: {a.dest for a in p._actions} for command, p in parsers.items()}
    assert [c for c, n in names.items() if 'max_vocab_size' in n] == ['build-vocab']
    assert [c for c, n in names.items() if 'max_vectors' in n] == ['word2vec']
    with pytest.raises(SystemExit):
        parsers['word2vec'].parse_args(['--word_vectors', 'w.bin', '--max_vocab_size', '10'])


def test_bilm_tf_files_have_one_spelling_in_every_command(parsers):
    for command, action in options(parsers):
        if action.dest.endswith(('options_file', 'weight_file')) and action.dest != 'embedding_weight_file':
            assert action.dest in ('options_file', 'weight_file'), f'{command}: --{action.dest}'
    a = parsers['pretrain'].parse_args(['--options_file', 'o.json', '--weight_file', 'w.hdf5'])
    assert (a.options_file, a.weight_file) == ('o.json', 'w.hdf5')
    assert '--options_file' in parsers['pretrain'].format_help()


def test_max_characters_per_token_is_counted_in_utf8_bytes_everywhere(parsers):
    for command, action in options(parsers):
        if action.dest in ('max_characters_per_token', 'cnn_filters'):
            text = ' '.join(action.help.split())
            assert 'UTF-8 bytes' in text and 'chars per token' not in text, (command, text)
    assert 'UTF-8 bytes' in FLAGS['max_characters_per_token'][0]


SCRIPT_NAME = re.compile(r'\b(?:run_\w+|export_\w+|word2vec_base|build_vocab|demo|args|dataset|elmo)\.py\b|'
                         r'\bdataset\.InputMapper')


def error_texts():
    """(module, line, text) of every string in a `raise` of the package: what a user reads as an error."""
    import ast
    found = []
    package = os.path.join(ROOT, 'paddle_elmo')
    for directory, _, files in os.walk(package):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                with open(path, encoding='utf-8') as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Raise) and node.exc is not None:
                        found += [(os.path.relpath(path, ROOT), c.lineno, c.value) for c in ast.walk(node.exc)
                                  if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    return found


def test_help_and_errors_name_commands_not_checkout_scripts(parsers):
    for command, p in parsers.items():
        text = ' '.join(p.format_help().split())
        assert not SCRIPT_NAME.search(text), f'{command} --help: {SCRIPT_NAME.search(text).group(0)}'
    bad = [f'{path}:{line}: {text!r}' for path, line, text in error_texts() if SCRIPT_NAME.search(text)]
    assert not bad, bad
    assert SCRIPT_NAME.search('written by export_inference.py') and SCRIPT_NAME.search('dataset.InputMapper.of')
    assert not SCRIPT_NAME.search('paddle-elmo export-inference writes one, see embedder.py')


def test_paddle_elmo_alone_prints_help_on_stderr_and_exits_2(capsys):
    from paddle_elmo.cli import main
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == '' and 'usage: paddle-elmo SUBCOMMAND' in err and err.rstrip().endswith('error: give a subcommand')
    assert main(['--help']) == 0 and 'usage: paddle-elmo SUBCOMMAND' in capsys.readouterr().out


@pytest.mark.parametrize('flags, chosen', [([], 'all'), (['--top'], 'top'), (['--output_format', 'average'], 'average'),
                                           (['--top', '--output_format', 'top'], 'top')])
def test_embed_s_output_format_is_the_one_its_flags_name(parsers, flags, chosen):
    from paddle_elmo.cli.embed import output_format
    assert output_format(parsers['embed'].parse_args(['in.txt', 'out.hdf5'] + flags)) == chosen


@pytest.mark.parametrize('flags', [['--top', '--output_format', 'all'], ['--all', '--top'],
                                   ['--average', '--output_format', 'top']])
def test_embed_refuses_two_output_formats(parsers, flags):
    from paddle_elmo.cli.embed import output_format
    with pytest.raises(InputError, match='give one output format'):
        output_format(parsers['embed'].parse_args(['in.txt', 'out.hdf5'] + flags))


@pytest.mark.parametrize('given, device', [('-1', 'cpu'), ('0', 'gpu:0'), ('2', 'gpu:2'), ('gpu', 'gpu'),
                                           ('gpu:1', 'gpu:1'), ('cpu', 'cpu')])
def test_cuda_device_is_allennlp_s_numbering_of_device(parsers, given, device):
    a = parsers['embed'].parse_args(['in.txt', 'out.hdf5', '--cuda-device', given])
    assert a.device == device
    assert parsers['embed'].parse_args(['in.txt', 'out.hdf5', '--device', given]).device == device


@pytest.mark.parametrize('command, flag, given, expected', [
    ('embed', '--batch_size', '0', 'a positive integer'), ('eval', '--batch_size', '0', 'a positive integer'),
    ('finetune', '--batch_size', '0', 'a positive integer'), ('pretrain', '--batch_size', '0', 'a positive integer'),
    ('word2vec', '--w2v_dim', '0', 'a positive integer'), ('build-vocab', '--min_count', '0', 'a positive integer'),
    ('eval', '--unroll_steps', '0', 'a positive integer'), ('finetune', '--epochs', '0', 'a positive integer'),
    ('pretrain', '--max_steps', '-1', 'a positive integer'), ('pretrain', '--max_steps', '0', 'a positive integer'),
    ('pretrain', '--save_freq', '0', 'a positive integer'), ('pretrain', '--epochs', '0', 'a positive integer'),
    ('pretrain', '--log_freq', '0', 'a positive integer'), ('pretrain', '--n_train_tokens', '0', 'a positive integer'),
    ('pretrain', '--num_layers', '0', 'a positive integer'), ('pretrain', '--nproc_per_node', '0', 'a positive integer'),
    ('pretrain', '--eval_freq', '-5', 'an integer >= 0'), ('pretrain', '--warmup_steps', '-1', 'an integer >= 0'),
    ('pretrain', '--max_minutes', '0', 'a number > 0'), ('pretrain', '--max_minutes', '-2.5', 'a number > 0'),
    ('pretrain', '--max_minutes', 'nan', 'a number > 0'), ('pretrain', '--eval_minutes', '-1', 'a number >= 0'),
    ('build-vocab', '--max_characters_per_token', '-1', 'a positive integer'),
    ('predict', '--sample_max_tokens', '0', 'a positive integer'), ('predict', '--top_k', '-1', 'an integer >= 0'),
    # temperatures, probabilities, shares, rates and seeds
    ('predict', '--temperature', '-1', 'a number > 0'), ('predict', '--temperature', '0', 'a number > 0'),
    ('predict', '--seed', '-3', 'an integer from 0 to 4294967295'),
    ('finetune', '--dropout', '1', r'a probability in \[0, 1\)'),
    ('finetune', '--dev_fraction', '0', r'a number in \(0, 1\)'),
    ('finetune', '--lr', '0', 'a number > 0'), ('finetune', '--bilm_lr', '-0.5', 'a number > 0'),
    ('finetune', '--l2_coef', '-0.1', 'a number >= 0'),
    ('finetune', '--max_seq_len', '2', r'an integer >= 3 \(room for <S>, a word and </S>\)'),
    ('word2vec', '--weight_decay', 'inf', 'a number >= 0'), ('word2vec', '--w2v_sample', '-1', 'a number >= 0'),
    ('pretrain', '--dropout', '1.5', r'a probability in \[0, 1\)'),
    ('pretrain', '--adam_beta2', '1', r'a number in \(0, 1\)'),
    ('pretrain', '--lr_final', '2', r'a number in \[0, 1\]'), ('pretrain', '--max_grad_norm', '0', 'a number > 0'),
    ('pretrain', '--cell_clip', '-3', 'a number >= 0'),
    ('pretrain', '--from_weights_lr_scale', '0', 'a number > 0 or off'),
])
def test_a_number_out_of_its_range_is_refused_when_the_flags_are_parsed(parsers, capsys, command, flag, given,
                                                                         expected):
    with pytest.raises(SystemExit) as e:
        parsers[command].parse_args([flag, given])
    assert e.value.code == 2
    assert re.search(f'^error: argument {flag}: expected {expected}, got \'{given}\'', capsys.readouterr().err)


# The types of the flags whose value is not a number: text and paths (None, str), JSON, devices, and the
# other types of their own. Every other type is a number's, which must refuse what no number flag can be.
def text_types():
    from paddle_elmo.cli import arguments, export_inference
    return (None, str, json.loads, arguments.output_file, arguments.output_directory, arguments.device_name,
            export_inference.formats, *arguments.STDIO_TYPES)


def numeric_flags(parsers):
    """(command, action) of every option whose value is a number: its type is not one of text_types(),
    or its default is a number (a switch's on/off is not)."""
    texts = text_types()
    return [(command, action) for command, action in options(parsers) if action.nargs != 0 and (
        action.type not in texts or isinstance(action.default, (int, float)) and not isinstance(action.default, bool))]


def test_every_numeric_flag_of_the_glossary_has_a_type_that_refuses_a_bad_value_as_it_is_parsed(parsers):
    # A new flag declared with type=float (or int, or no type and a number for default) fails here: no
    # flag takes -1, nan, inf or a word where a temperature, a probability, a count, a size or a rate goes.
    numeric = numeric_flags(parsers)
    by_name = {}
    for command, action in numeric:
        by_name.setdefault(action.dest, []).append(command)
        assert action.type not in (int, float) and action.type not in text_types(), (
            f'{command} --{action.dest}: give it a type of arguments.py that refuses what it cannot be')
        for bad in ('-1', 'nan', 'inf', '-inf', 'x', ''):
            with pytest.raises(argparse.ArgumentTypeError):
                action.type(bad)
        if isinstance(action.default, (int, float)):
            assert action.type(str(action.default)) == action.default, (command, action.dest)
    assert set(by_name) <= set(FLAGS)
    assert set(by_name) >= {'temperature', 'dropout', 'dev_fraction', 'lr', 'bilm_lr', 'seed', 'max_seq_len',
                            'adam_beta2', 'lr_final', 'max_grad_norm', 'cell_clip', 'proj_clip', 'l2_coef',
                            'weight_decay', 'w2v_sample', 'from_weights_lr_scale', 'elmo_layer', 'max_steps',
                            'save_freq', 'batch_size', 'epochs', 'max_minutes', 'nproc_per_node', 'cpu_threads',
                            'top_k', 'sample', 'sample_max_tokens'}


def test_every_path_a_command_writes_is_checked_as_it_is_parsed(parsers):
    """--output_*, --save_dir and embed's output_file: checked (fileio's check_output_*) before any work
    (file_or_stdout: checked unless it is `-`, standard output)."""
    from paddle_elmo.cli import arguments
    writes = {(command, action.dest): action.type for command, p in parsers.items() for action in p._actions
              if action.dest.startswith('output_') and action.dest != 'output_format' or action.dest == 'save_dir'}
    assert ('embed', 'output_file') in writes and ('pretrain', 'save_dir') in writes and len(writes) >= 14
    expected = {'output_dir': (arguments.output_directory,), 'save_dir': (arguments.output_directory,)}
    wrong = {key: kind for key, kind in writes.items()
             if kind not in expected.get(key[1], (arguments.output_file, arguments.file_or_stdout))}
    assert wrong == {}


class _FakeEmbedder:
    """iter_embeddings() -> (index, one [3, n_tokens, 2] array) per line: what embed_file writes, without a model."""
    tokenizer = 'whitespace'  # what tokenize does; embed_file reads the file as text of it (text.encodings)

    def tokenize(self, lines):
        return [line.split() for line in lines]

    def iter_embeddings(self, lines, batch_size):
        import numpy as np
        return ((i, np.full((3, len(tokens), 2), i, np.float32)) for i, tokens in enumerate(lines))  # tokenize's lists


def test_use_sentence_keys_and_forget_sentences_write_what_allennlp_elmo_wrote(tmp_path):
    import h5py
    from paddle_elmo.use.sentence_embedder import embed_file
    (tmp_path / 'in.txt').write_text('the cat sat\na dog\n')
    embed_file(_FakeEmbedder(), str(tmp_path / 'in.txt'), str(tmp_path / 'keys.hdf5'), 'top', progress=False,
               use_sentence_keys=True)
    with h5py.File(tmp_path / 'keys.hdf5', 'r') as f:
        assert sorted(f) == ['a dog', 'the cat sat'] and f['a dog'].shape == (2, 2)
    embed_file(_FakeEmbedder(), str(tmp_path / 'in.txt'), str(tmp_path / 'forget.hdf5'), 'all', progress=False,
               forget_sentences=True)
    with h5py.File(tmp_path / 'forget.hdf5', 'r') as f:
        assert sorted(f) == ['0', '1']
    embed_file(_FakeEmbedder(), str(tmp_path / 'in.txt'), str(tmp_path / 'plain.hdf5'), 'all', progress=False)
    with h5py.File(tmp_path / 'plain.hdf5', 'r') as f:
        assert sorted(f) == ['0', '1', 'sentence_to_index']


@pytest.mark.parametrize('text, message', [('a dog\nthe cat\na dog\n', 'in.txt:3: --use_sentence_keys: the same '
                                                                        'sentence as line 1'),
                                           ('a dog\n\n', 'in.txt:2: --use_sentence_keys: an empty sentence'),
                                           ('either/or\n', 'in.txt:1: --use_sentence_keys')])
def test_a_sentence_that_cannot_be_a_key_is_an_error_naming_its_line(tmp_path, text, message):
    from paddle_elmo.use.sentence_embedder import embed_file
    (tmp_path / 'in.txt').write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        embed_file(_FakeEmbedder(), str(tmp_path / 'in.txt'), str(tmp_path / 'o.hdf5'), progress=False,
                   use_sentence_keys=True)
    assert not (tmp_path / 'o.hdf5').exists()


def test_predict_refuses_a_negative_temperature_before_loading_a_model():
    # It used to be accepted, then fail after printing the top words: now one line, exit 2, nothing on stdout.
    proc = subprocess.run([sys.executable, '-m', 'paddle_elmo', 'predict', '--prefix', 'the', '--sample', '2',
                           '--temperature', '-1'], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert one_line_error(proc) == ("error: argument --temperature: expected a number > 0, got '-1' "
                                    "(see paddle-elmo predict --help)")
    assert proc.stdout == ''
