"""The two configs and their files: ModelConfig <-> bilm-tf's options.json, the Recipe beside it,
presets and flags by field name, resuming with --init_from_ckpt alone, and checkpoints written
before recipe.json existed (tests/fixtures/legacy-checkpoint, made by commit 7d00a9b)."""
import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from conftest import ROOT, one_line_error, tiny_config
from paddle_elmo.model.recipe import BILM_TF_TRAINING_KEYS, PRESETS, Recipe
from paddle_elmo.model.config import ModelConfig
from paddle_elmo.train.run_plan import for_resume, for_run, from_preset
from paddle_elmo.fileio import InputError
from helpers import ENV, assert_same_weights, load, pretrain_args, pretrain_here, run, run_here

LEGACY = f'{ROOT}/tests/fixtures/legacy-checkpoint'


def test_model_config_round_trips_through_bilm_tf_options_and_fills_what_files_leave_out():
    config = tiny_config(cell_clip=None, activation='tanh', use_skip_connections=False)
    options = config.to_options()
    assert options['lstm']['dim'] == 16 and options['char_cnn']['filters'] == [[1, 4], [2, 8], [3, 8]]
    assert options['char_cnn']['n_highway'] == 1 and options['char_cnn']['n_characters'] == 262
    assert ModelConfig.from_options(options) == config
    # AllenNLP's files may leave the optional keys out: bilm-tf's reading of them
    del options['lstm']['cell_clip'], options['lstm']['use_skip_connections'], options['dropout']
    read = ModelConfig.from_options(options)
    assert (read.cell_clip, read.use_skip_connections, read.dropout) == (None, False, 0.0)
    del options['lstm']['dim']
    with pytest.raises(InputError, match=r'opts\.json: missing "lstm\.dim"'):
        ModelConfig.from_options(options, 'opts.json')
    with pytest.raises(InputError, match=r'--dropout must be in \[0, 1\), got 1\.5'):
        tiny_config(dropout=1.5).checked()


def test_a_preset_then_the_flags_given_make_the_configs():
    model, recipe = from_preset('budget', {'cell_dim': 64, 'lr': 0.01})
    assert model.cell_dim == 64 and recipe.lr == 0.01  # given
    assert model.cnn_filters == PRESETS['budget']['cnn_filters'] and recipe.optimizer == 'adam'  # the preset's
    assert recipe.preset == 'budget'
    with pytest.raises(InputError, match='--batch_size must be >= 1, got 0'):
        from_preset('original', {'batch_size': 0})


def test_resuming_keeps_the_checkpoints_configs_overrides_training_settings_and_names_differing_model_ones():
    model, recipe = from_preset('budget', {'unroll_steps': 10})
    same_model, resumed = for_resume(model, recipe, {'lr': 0.001, 'cell_dim': model.cell_dim}, 'ck/options.json')
    assert same_model == model and resumed == dataclasses.replace(recipe, lr=0.001)
    with pytest.raises(InputError) as error:
        for_resume(model, recipe, {'cell_dim': 32, 'num_highways': 1, 'activation': 'tanh'}, 'ck/options.json')
    assert str(error.value).startswith('ck/options.json defines the model being resumed, and these flags differ '
                                       'from it: --cell_dim 32 (checkpoint: 256); --activation tanh (checkpoint: '
                                       'relu). Drop them')


def test_options_json_holds_bilm_tfs_keys_and_recipe_json_the_rest(tmp_path):
    from paddle_elmo.files.run_configs import read_run_configs, write_run_configs
    model, recipe = from_preset('budget', {'train_data_path': '/data/*', 'vocab_file': '/v.txt', 'max_steps': 9})
    from paddle_elmo.text.vocabulary import Vocabulary
    write_run_configs(str(tmp_path), model, recipe, Vocabulary.from_tokens([f'w{i}' for i in range(120)]))
    options = json.loads((tmp_path / 'options.json').read_text())
    stored = json.loads((tmp_path / 'recipe.json').read_text())
    assert options['learning_rate'] == 0.004 and options['n_negative_samples_batch'] == 1024
    assert options['n_tokens_vocab'] == 123 and options['all_clip_norm_val'] == 10.0
    training_keys = set(BILM_TF_TRAINING_KEYS.values()) | {'n_tokens_vocab'}
    assert set(options) == {'bidirectional', 'char_cnn', 'lstm', 'dropout'} | training_keys  # bilm-tf's, nothing else
    assert not set(stored) & set(BILM_TF_TRAINING_KEYS) and stored['optimizer'] == 'adam'
    assert read_run_configs(str(tmp_path)) == (model, recipe)


def test_a_checkpoint_written_before_recipe_json_reads_as_the_run_that_wrote_it():
    from paddle_elmo.files.run_configs import read_run_configs
    model, recipe = read_run_configs(LEGACY)
    assert (model.cell_dim, model.max_characters_per_token, model.cnn_filters) == (16, 20, [[1, 4], [2, 8], [3, 8]])
    assert (recipe.preset, recipe.optimizer, recipe.lr, recipe.warmup_steps, recipe.seed) == ('budget', 'adam', 0.004,
                                                                                              100, 3)
    assert (recipe.batch_size, recipe.unroll_steps, recipe.n_negative_samples, recipe.world_size) == (4, 5, 10, 1)
    assert recipe.reset_state_at_sentence_start and recipe.n_train_tokens == 772


@pytest.fixture
def legacy(tmp_path):
    """A copy of the legacy checkpoint directory (resuming writes into it), its run's final weights apart."""
    ck = tmp_path / 'legacy'
    shutil.copytree(LEGACY, ck)
    (ck / 'final.pdparams').rename(tmp_path / 'expected.pdparams')
    return ck


def test_a_legacy_checkpoint_resumes_exactly_evaluates_and_exports(legacy, tmp_path, capfd):
    corpus = legacy / 'corpus'
    # That layout recorded no data paths or step count: they are given, nothing else.
    # On the default path, the CPU kernels on: that run drew its dropout masks from Paddle's
    # dropout, and so does its resume (a checkpoint without recipe.json records dropout_masks paddle).
    # (The runs in this process, helpers.pretrain_here and run_here: what they read and write is the test.)
    resumed = pretrain_here(['--init_from_ckpt', str(legacy / '4'), '--train_data_path', str(corpus / 'train.*.txt'),
                             '--vocab_file', str(corpus / 'vocab.txt'), '--max_steps', '8'], capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'CPU kernels unavailable' not in resumed.stderr
    assert 'preset budget, adam lr 0.004' in resumed.stderr  # the log
    final, expected = load(legacy / 'final.pdparams'), load(tmp_path / 'expected.pdparams')
    assert final.keys() == expected.keys()
    for k in expected:  # the run at 7d00a9b, continued by today's code
        np.testing.assert_allclose(final[k], expected[k], rtol=0, atol=1e-6, err_msg=k)
    options = json.loads((legacy / 'options.json').read_text())
    assert options['learning_rate'] == 0.004 and 'lr' not in options and 'preset' not in options
    assert json.loads((legacy / 'recipe.json').read_text())['preset'] == 'budget'
    assert json.loads((legacy / 'recipe.json').read_text())['dropout_masks'] == 'paddle'
    assert json.loads((legacy / 'recipe.json').read_text())['softmax_bias_init'] == 'zero'  # not budget's today
    evaluation = run_here('run_eval.py', ['--dev_data_path', str(corpus / 'heldout.txt'), '--vocab_file',
                                          str(corpus / 'vocab.txt'), '--init_from_ckpt', f'{LEGACY}/4'], capfd)
    assert evaluation.returncode == 0 and 'perplexity (exp of the mean' in evaluation.stdout, evaluation.stderr
    export = run_here('export-weights', ['--init_from_ckpt', f'{LEGACY}/4', '--output_dir', str(tmp_path / 'exp')], capfd)
    assert export.returncode == 0, export.stderr
    from paddle_elmo import ELMoEmbedder
    sentence = ['the', 'cat', 'sat']
    np.testing.assert_array_equal(
        ELMoEmbedder(options_file=str(tmp_path / 'exp' / 'options.json'),
                     weight_file=str(tmp_path / 'exp' / 'weights.hdf5')).embed_sentence(sentence),
        ELMoEmbedder(f'{LEGACY}/4').embed_sentence(sentence))


def test_resuming_needs_only_init_from_ckpt(corpus, tmp_path, capfd):
    """bilm-tf's restart.py: the data, model and recipe all come from the checkpoint (here a run with a
    non-default --unroll_steps, which used to stop the resume with 'stream state was saved with
    unroll_steps 10, this stream has 20')."""
    flags = ['--max_steps', '12', '--save_freq', '4', '--unroll_steps', '10', '--eval_freq', '6',
             '--dev_data_path', str(corpus / 'heldout.txt')]
    whole = pretrain_here(pretrain_args(corpus, tmp_path / 'whole', *flags), capfd)
    assert whole.returncode == 0, whole.stderr[-2000:]
    first = pretrain_here(pretrain_args(corpus, tmp_path / 'slot', *flags, '--max_minutes', '0.0001'), capfd)
    assert first.returncode == 0, first.stderr[-2000:]
    step = next(p.stem for p in (tmp_path / 'slot').glob('*.pdparams'))
    resumed = pretrain_here(['--init_from_ckpt', str(tmp_path / 'slot' / step)], capfd, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_weights(load(tmp_path / 'whole' / 'final.pdparams'), load(tmp_path / 'slot' / 'final.pdparams'))
    # max_steps and dev data came along: the last step's log line, the final perplexity (a result)
    assert 'step 12/12' in resumed.stderr and 'dev (' in resumed.stdout


def test_a_training_flag_given_when_resuming_overrides_the_checkpoints_and_is_recorded(corpus, tmp_path, capfd):
    first = pretrain_here(pretrain_args(corpus, tmp_path, '--max_steps', '6', '--max_minutes', '0.0001'), capfd)
    assert first.returncode == 0, first.stderr[-2000:]
    step = next(p.stem for p in tmp_path.glob('*.pdparams'))
    resumed = pretrain_here(['--init_from_ckpt', str(tmp_path / step), '--lr', '0.05'], capfd)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'lr 0.05' in resumed.stderr
    assert json.loads((tmp_path / 'options.json').read_text())['learning_rate'] == 0.05
    # the refusal is the command's: run in this process (helpers.run_here)
    line = one_line_error(run_here('run_pretrain.py', ['--init_from_ckpt', str(tmp_path / step), '--num_layers', '3'],
                                   capfd))
    assert '--num_layers 3 (checkpoint: 2)' in line


def test_a_new_run_without_data_paths_says_which_flag_is_missing(tmp_path, capfd):
    line = one_line_error(run_here('run_pretrain.py', ['--vocab_file', str(tmp_path / 'v.txt')], capfd))
    assert line == 'error: --train_data_path is required'


def test_recipe_fields_and_presets_use_one_set_of_names():
    fields = {f.name for f in dataclasses.fields(ModelConfig)} | {f.name for f in dataclasses.fields(Recipe)}
    for preset in PRESETS.values():
        assert set(preset) <= fields
    from paddle_elmo.cli.config_flags import given_settings, pretrain_parser
    a = pretrain_parser().parse_args(['--cell_dim', '7', '--lr', '0.1', '--no_use_skip_connections'])
    assert given_settings(a) == {'cell_dim': 7, 'use_skip_connections': False, 'lr': 0.1}


def test_a_library_user_gets_the_new_resumed_and_from_weights_policy_from_for_run():
    data = {'train_data_path': 'train/*', 'vocab_file': 'vocab.txt'}
    model, recipe = for_run({**data, 'preset': 'budget', 'lr': 0.01})
    assert (model.cell_dim, recipe.optimizer, recipe.lr) == (256, 'adam', 0.01)
    assert recipe.vocab_file == os.path.abspath('vocab.txt')  # absolute: a resume elsewhere reads the same
    # resumed: the checkpoint's model; a differing model flag names the checkpoint
    resumed = (model, recipe, 'ck/options.json')
    assert for_run({'lr': 0.5}, resumed=resumed)[1].lr == 0.5
    with pytest.raises(InputError, match=r'ck/options\.json defines the model being resumed.*--cell_dim 64'):
        for_run({'cell_dim': 64}, resumed=resumed)
    # from weights: the file's model, the preset's recipe, the recorded files and the word table's vocabulary
    word = tiny_config(token_input='word')
    adapted, recipe = for_run({'train_data_path': 'train/*'}, weights=(word, 'w/options.json', 'w/weights.hdf5',
                                                                       'w/vocab.txt'))
    assert adapted.projection_dim == word.projection_dim and recipe.init_weight_file == 'w/weights.hdf5'
    assert recipe.vocab_file.endswith('w/vocab.txt') and recipe.lr == PRESETS['original']['lr']
    with pytest.raises(InputError, match='not both'):
        for_run(data, resumed=resumed, weights=(word, 'o', 'w', None))
    with pytest.raises(InputError, match='--word_vectors is for a model with word input'):
        for_run({**data, 'word_vectors': 'v.bin'})


def test_a_run_records_how_it_draws_dropout_masks_and_a_resume_that_cannot_says_so(corpus, tmp_path):
    """A new run records the CPU kernel's masks (Paddle's with the kernels off); resuming a kernel
    run with the kernels off trains on, with a warning that its masks are not the run's."""
    off = {**ENV, 'ELMO_CPU_KERNELS': '0'}
    for name, env, masks in (('on', ENV, 'kernel'), ('off', off, 'paddle')):
        proc = run('run_pretrain.py', pretrain_args(corpus, tmp_path / name, '--max_steps', '1'), env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads((tmp_path / name / 'recipe.json').read_text())['dropout_masks'] == masks
    resumed = run('run_pretrain.py', pretrain_args(corpus, tmp_path / 'on', '--max_steps', '2', '--init_from_ckpt',
                                                   str(tmp_path / 'on' / 'final')), env=off)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 'drew its dropout masks with the CPU kernel, which does not run here' in resumed.stderr
    assert json.loads((tmp_path / 'on' / 'recipe.json').read_text())['dropout_masks'] == 'kernel'
    with pytest.raises(InputError, match="recipe dropout_masks must be one of kernel, paddle, got 'hash'"):
        Recipe(dropout_masks='hash').checked()


def test_a_recipe_written_before_dropout_masks_reads_as_the_code_of_its_day_drew_them(tmp_path):
    """recipe.json without dropout_masks: the kernel's if it records lr_decay (which came 19 minutes
    before the kernel), Paddle's dropout if older still."""
    from paddle_elmo.files.run_configs import read_run_configs, write_run_configs
    from paddle_elmo.text.vocabulary import Vocabulary
    (tmp_path / 'v.txt').write_text('<S>\n</S>\n<UNK>\nthe\n')
    write_run_configs(str(tmp_path), tiny_config(), Recipe(preset='budget', softmax_bias_init='unigram').checked(),
                      Vocabulary(str(tmp_path / 'v.txt')))
    recipe_file = tmp_path / 'recipe.json'
    stored = json.loads(recipe_file.read_text())
    assert read_run_configs(str(tmp_path))[1].dropout_masks == 'kernel'  # as written today (the default)
    for dropped, masks in ((('dropout_masks', 'softmax_bias_init'), 'kernel'),
                           (('dropout_masks', 'softmax_bias_init', 'lr_decay'), 'paddle')):
        recipe_file.write_text(json.dumps({k: v for k, v in stored.items() if k not in dropped}))
        recipe = read_run_configs(str(tmp_path))[1]
        assert (recipe.dropout_masks, recipe.softmax_bias_init) == (masks, 'zero')  # not budget's unigram
