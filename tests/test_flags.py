"""One vocabulary of flags (issue 34): every option of every command is a name of the flag table
(paddle_elmo.cli.flags.FLAGS) or an alias it declares, one concept per name, one style of switch,
every default in --help, and README's table made from the same data. Nothing here runs a command:
the parsers come from each command module's build_parser()."""
import argparse
import dataclasses
import os

import pytest

from conftest import ROOT
from paddle_elmo.cli import COMMANDS, command_parsers
from paddle_elmo.cli import flags as cli
from paddle_elmo.config import ModelConfig, Recipe

# Level-of-output flags, not on/off settings: `--quiet` has no `--no_quiet` (the protocol's, as before).
NOT_SWITCHES = ('quiet', 'verbose', 'all', 'top', 'average')  # the last three pick one of --output_format's values


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
        assert name in cli.FLAGS, f'{command}: --{name} is not in flags.FLAGS (add it, or use the name there)'
        expected = cli.option_strings(name)
        if isinstance(action, cli.Switch):
            expected = [s for n in expected for s in (n, f'--no_{n[2:]}')]
        assert action.option_strings == expected, f'{command}: {action.option_strings}, expected {expected}'
        assert action.dest == name, f'{command}: --{name} stores into {action.dest!r}'


def test_every_table_name_is_some_command_s_flag(parsers):
    uses, _ = cli.flag_uses(parsers)
    assert set(cli.FLAGS) - set(uses) == set()


def test_one_concept_per_name_and_one_name_per_alias():
    concepts = [concept for concept, _ in cli.FLAGS.values()]
    assert len(set(concepts)) == len(concepts), [c for c in concepts if concepts.count(c) > 1]
    aliases = [alias for _, names in cli.FLAGS.values() for alias in names]
    assert len(set(aliases)) == len(aliases)
    assert not set(aliases) & set(cli.FLAGS)
    switch_negations = {f'no_{name}' for name in cli.FLAGS}
    assert not (set(aliases) | set(cli.FLAGS)) & switch_negations


def test_a_switch_is_x_and_no_x_everywhere(parsers):
    for command, action in options(parsers):
        name = action.option_strings[0][2:]
        if action.nargs == 0 and name not in NOT_SWITCHES:
            assert isinstance(action, cli.Switch), f'{command}: --{name} is a switch without --no_{name}'
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
        if f.name in actions and f.name not in cli.NOT_FLAGS and f.default is not None:
            assert '(default' in actions[f.name].help, f'--{f.name}: {actions[f.name].help!r}'
    assert '(default: off)' in actions['freeze_bilm'].help
    assert 'original on, small on, budget on' in actions['use_skip_connections'].help
    assert '(default: 0)' in actions['word_dim'].help


def test_the_paddlenlp_example_s_names_are_accepted_and_shown(parsers):
    aliases = {alias: name for name, (_, names) in cli.FLAGS.items() for alias in names}
    # the PaddleNLP example's names, and allennlp elmo's spellings (hyphens)
    assert aliases == {'pretrained_word2vec_file': 'word_vectors', 'logging_step': 'log_freq',
                       'sent_embedding_dim': 'hidden_dim', 'batch-size': 'batch_size', 'options-file': 'options_file',
                       'weight-file': 'weight_file'}
    values = {'word_vectors': 'v.bin', 'log_freq': '7', 'hidden_dim': '64', 'batch_size': '5',
              'options_file': 'o.json', 'weight_file': 'w.hdf5'}
    required = {'finetune': ['--data_dir', 'd'], 'word2vec': ['--data_dir', 'd', '--word_vectors', 'w.bin'],
                'eval': ['--dev_data_path', 'd'], 'embed': ['in.txt', 'out.hdf5'], 'export-inference': ['--output_dir', 'o']}
    checked = set()
    for command, p in parsers.items():
        for alias, name in aliases.items():
            if any(f'--{name}' in a.option_strings for a in p._actions):
                a = p.parse_args(required.get(command, []) + [f'--{alias}', values[name]])
                assert str(getattr(a, name)) == values[name], (command, alias)
                assert f'--{alias}' in p.format_help()
                checked.add(alias)
    assert checked == set(aliases)


def test_readme_s_flag_table_is_the_generated_one(parsers):
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    assert text.index('\n## Flags\n') < text.index(cli.README_START) < text.index(cli.README_END)
    table = text[text.index(cli.README_START) + len(cli.README_START):text.index(cli.README_END)]
    assert table == '\n' + cli.flags_markdown(parsers), 'README.md is stale: run `make flags-table`'


@pytest.mark.parametrize('argv', [['--nproc_per_node', '2', '--max_steps', '4'], ['--max_steps', '4', '--nproc_per_node=2'],
                                  ['--nproc', '2', '--max_steps', '4']])
def test_pretrain_launch_passes_every_flag_but_nproc_per_node_to_the_ranks(monkeypatch, argv):
    from paddle_elmo.cli import pretrain
    ran = []
    monkeypatch.setattr(pretrain.shutil, 'which', lambda *a, **k: '/bin/paddle-elmo')
    monkeypatch.setattr(pretrain.subprocess, 'run', lambda cmd: ran.append(cmd) or argparse.Namespace(returncode=0))
    assert pretrain.launch(2, argv, 'ckpt') == 0
    assert ran[0][ran[0].index('/bin/paddle-elmo'):] == ['/bin/paddle-elmo', 'pretrain', '--max_steps', '4']
