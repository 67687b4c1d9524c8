"""Helpers the tests share (conftest holds the fixtures): running the commands, tiny models, the reference protocol."""
import hashlib
import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import threading

import h5py
import numpy as np
import paddle
import pytest

from conftest import ROOT, tiny_config
from paddle_elmo import BiLM, ELMoEmbedder, resolve_model
from paddle_elmo.text.vocabulary import Vocabulary


# ---- optional packages -------------------------------------------------------------------------------

# Python code that makes the packages named in $BLOCKED_PACKAGES (comma-separated) fail to import, as
# where they are not installed: the start of a child's `python -c` code.
BLOCK_PACKAGES = '''
import os, sys
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in os.environ.get('BLOCKED_PACKAGES', '').split(','):
            raise ModuleNotFoundError(f'No module named {name!r} (blocked by the test)')
sys.meta_path.insert(0, NotInstalled())
'''


# ---- serving an export without Paddle (test_serve here, test_installs in a [serve] venv) ----------------

SENTENCES = ['The bank of the river .', 'She paid the bank on friday .', 'x', 'antidisestablishmentarianism']

# Run in a child: embeds SENTENCES with InferenceEmbedder, no backend named (-> OUT/encode.npz, and
# OUT/child.json: the backend it chose, the error of an explicit backend='paddle'), then runs the
# embed command without --inference_backend (-> OUT/embed.hdf5, its stderr in OUT/embed.err). With
# BLOCKED_PACKAGES=paddle, importing Paddle fails, as where it is not installed.
CHILD = BLOCK_PACKAGES + textwrap.dedent('''
    import json
    import numpy as np
    from paddle_elmo.export.inference import InferenceEmbedder
    model_dir, out, sentences = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    embedder = InferenceEmbedder(model_dir)
    np.savez(os.path.join(out, 'encode.npz'), *embedder.encode(sentences))
    assert not [m for m in sys.modules if m == 'paddle' or m.startswith('paddle.')]
    try:
        InferenceEmbedder(model_dir, backend='paddle')
        explicit = None
    except ImportError as e:
        explicit = [type(e).__name__, str(e)]
    with open(os.path.join(out, 'child.json'), 'w') as f:
        json.dump({'backend': embedder.backend, 'explicit_paddle': explicit}, f)
    with open(os.path.join(out, 'input.txt'), 'w') as f:
        f.write(''.join(s + chr(10) for s in sentences))
    from paddle_elmo.cli import main
    sys.stderr = open(os.path.join(out, 'embed.err'), 'w')
    main(['embed', os.path.join(out, 'input.txt'), os.path.join(out, 'embed.hdf5'), '--inference_model', model_dir])
''')


def run_child(python, model_dir, out, env):
    """CHILD in `python` on the export `model_dir`, its files in `out` -> what it wrote to child.json."""
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run([python, '-c', CHILD, model_dir, str(out), json.dumps(SENTENCES)], capture_output=True,
                          text=True, timeout=600, env=env)
    err = os.path.join(out, 'embed.err')
    assert proc.returncode == 0, proc.stderr[-3000:] + (open(err).read()[-3000:] if os.path.exists(err) else '')
    with open(os.path.join(out, 'child.json')) as f:
        return json.load(f)


def assert_served_without_paddle(out, model_dir, child, expected):
    """The child chose onnxruntime by itself, said so in one line, refused an explicit backend='paddle'
    naming the extra, and its encode.npz and embed.hdf5 hold `expected` (the full install's numbers;
    the same runtime on the same file: float rounding only)."""
    assert child['backend'] == 'onnxruntime'
    kind, message = child['explicit_paddle']
    assert kind == 'MissingPackageError' and message.startswith('paddle.inference cannot be imported')
    assert 'pip install "paddle-elmo[cpu]"' in message
    with open(os.path.join(out, 'embed.err')) as f:
        chosen = [line for line in f if 'run by' in line]
    assert chosen == [f'{model_dir}: run by onnxruntime on its model.onnx (Paddle cannot be imported; '
                      '--inference_backend or backend= chooses)\n']
    with np.load(os.path.join(out, 'encode.npz')) as f:
        got = [f[f'arr_{i}'] for i in range(len(expected))]
    with h5py.File(os.path.join(out, 'embed.hdf5'), 'r') as f:
        written = [f[str(i)][...] for i in range(len(expected))]
    for g, w, e in zip(got, written, expected):
        assert g.shape == w.shape == e.shape == (3, e.shape[1], 256)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-5)


# ---- from test_pretrain --------------------------------------------------------------------------------


TINY_MODEL = ['--projection_dim', '8', '--cell_dim', '16', '--num_layers', '2', '--char_embed_dim', '4',
              '--cnn_filters', '[[1, 4], [2, 8], [3, 8]]', '--num_highways', '1', '--n_negative_samples', '10',
              '--batch_size', '4', '--unroll_steps', '5']
ENV = dict(os.environ, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')


def pretrain_args(corpus, save_dir, *extra):
    return ['--train_data_path', str(corpus / 'train.*.txt'), '--vocab_file', str(corpus / 'vocab.txt'),
            '--save_dir', str(save_dir), '--log_freq', '5', '--seed', '3', '--dropout', '0.1'] + TINY_MODEL + list(extra)


def command_line(command, *args):
    """A child's argv for `command` on `args`: a front-door script of the checkout ('run_pretrain.py', as
    the PaddleNLP example runs it) or a subcommand ('embed': `python -m paddle_elmo embed`, what the
    installed `paddle-elmo embed` runs)."""
    start = [os.path.join(ROOT, command)] if command.endswith('.py') else ['-m', 'paddle_elmo', command]
    return [sys.executable, *start, *map(str, args)]


def run(command, args, cwd=ROOT, env=None, **kw):
    """`command` (command_line's) on `args` in a process of its own -> its CompletedProcess."""
    return subprocess.run(command_line(command, *args), capture_output=True, text=True, env=env or ENV, cwd=cwd, **kw)


# ---- a command in this process ---------------------------------------------------------------------


def main_exit(argv):
    """paddle-elmo ARGV in this process -> its exit code (sys.argv and the SIGTERM and SIGINT handlers as
    they were, after: pretraining installs its own, train.signals.StopRequest, for the process it owns)."""
    import signal
    from paddle_elmo.cli import main
    saved = sys.argv[:]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return main(argv)
    except SystemExit as e:
        return e.code
    finally:
        sys.argv = saved
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def run_here(command, args, capfd, cwd=ROOT):
    """`command` (command_line's: a front-door script or a subcommand) on `args` in this process: its
    subcommand's main() inside the error boundary the process runs it in (cli.run_command), without a
    new interpreter's start (importing Paddle, ~1.5 s) -> a CompletedProcess as run() gives, stdout
    and stderr captured at the file descriptors as a child's are. For tests of what a command does,
    not of its process: every command keeps tests that run it in a process of its own
    (test_bad_inputs: each one's bad input, one process each)."""
    from paddle_elmo.cli import COMMANDS
    [name] = [name for name, (_, script, _) in COMMANDS.items() if command in (name, script)]
    capfd.readouterr()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        code = main_exit([name, *args])
    finally:
        os.chdir(here)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess([command, *args], code, out, err)


def train_here(command, args, capfd, cwd=ROOT):
    """A command that trains (pretrain, finetune, word2vec) on `args` in this process (run_here) on one
    thread (--cpu_threads 1), as run() gives a child (OMP_NUM_THREADS=1): for what a run trains, writes
    and logs, without a new interpreter's start."""
    return run_here(command, [*args, '--cpu_threads', '1'], capfd, cwd=cwd)


def pretrain_here(args, capfd, cwd=ROOT):
    """run_pretrain.py on `args` in this process on one thread (train_here)."""
    return train_here('run_pretrain.py', args, capfd, cwd=cwd)


def load(path):
    return {k: v.numpy() for k, v in paddle.load(str(path)).items()}


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ---- from test_finetune --------------------------------------------------------------------------------


from conftest import RT  # noqa: E402,F401  (tests import it from here)


def head_lines(path, n):
    with open(path, encoding='utf-8') as f:
        return [next(f) for _ in range(n)]


def run_script(command, *argv, cwd=ROOT, timeout=600):
    """`command` (command_line's) on `argv` in a process of its own, on one thread -> its CompletedProcess."""
    return subprocess.run(command_line(command, *argv), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))


def check_result(path, n_folds):
    with open(path) as f:
        result = json.load(f)
    assert {'accuracy_mean', 'accuracy_std', 'fold_accuracies', 'layer_weights', 'args'} <= set(result)
    assert len(result['fold_accuracies']) == n_folds
    assert all(0 <= a <= 1 for a in result['fold_accuracies'])
    assert result['accuracy_mean'] == pytest.approx(np.mean(result['fold_accuracies']))
    return result


# ---- from test_token_input --------------------------------------------------------------------------------


WORDS = 'the cat sat on a mat while dogs ran in parks near old houses and birds sang songs'.split()


def tiny_vocab():
    return Vocabulary.from_tokens(['<S>', '</S>', '<UNK>'] + WORDS)


def tiny_bilm(token_input, seed=0):
    paddle.seed(seed)
    config = tiny_config(token_input=token_input, word_dim=5 if token_input == 'word+char' else 0)
    return BiLM(config, vocab=tiny_vocab() if config.has_words else None)


def save_checkpoint(bilm, directory):
    """`bilm` as a checkpoint of ours (options.json + final.pdparams) in `directory` -> the prefix
    --init_from_ckpt takes."""
    from paddle_elmo.files.hdf5_weights import model_options
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'options.json').write_text(json.dumps(model_options(bilm)))
    paddle.save(bilm.state_dict(), str(directory / 'final.pdparams'))
    return str(directory / 'final')


# ---- from test_elmo --------------------------------------------------------------------------------
# The fixture's references were computed by bilm-tf in float32; 1e-5 leaves room for a different
# summation order in BLAS while catching any real formula slip (those move values by >1e-3).
TOL = 1e-5


def fixture_embedder(fixture_dir, vocab_file=None, embedding_weight_file=None, **kw):
    """An ELMoEmbedder of the reference fixture's model (with a token-embedding file and its vocabulary)."""
    model = resolve_model(os.path.join(fixture_dir, 'options.json'), os.path.join(fixture_dir, 'lm_weights.hdf5'),
                          vocab_file=vocab_file, embedding_weight_file=embedding_weight_file)
    return ELMoEmbedder(model, **kw)


def assert_elmo_reads_raw_text_as_the_embedder(name, text):
    """Elmo of the resolved model `name` (a LoadedModel's biLM) splits raw `text` as ELMoEmbedder(name)
    does, with the tokenizer the model's table row or options.json records, and gives the same
    vectors: each layer alone (Elmo's only_layer k, gamma 1, no dropout) equals the embedder's layer k
    -> the embedder's layers, per sentence [n_layers + 1, n_tokens, 2P]."""
    from paddle_elmo import Elmo
    from paddle_elmo.text.tokenizers import as_token_lists
    embedder = ELMoEmbedder(name)
    bilm = resolve_model(name).load()
    elmo = Elmo(bilm, dropout=0.0)
    assert elmo.tokenizer == embedder.tokenizer
    assert as_token_lists(text, elmo.tokenizer) == embedder.tokenize(text)  # the same tokens
    expected = embedder.encode(text)
    for k in range(bilm.n_layers + 1):
        elmo = Elmo(bilm, dropout=0.0, only_layer=k)  # gamma (1) x layer k
        out = elmo(**elmo.batch_to_inputs(text))
        assert out['mask'].numpy().sum(axis=1).tolist() == [e.shape[1] for e in expected]
        for row, layers in enumerate(expected):
            np.testing.assert_allclose(out['elmo_representations'][0].numpy()[row, :layers.shape[1]], layers[k],
                                       atol=1e-5, rtol=0)
    return expected


def reference_top(fixture_dir, group, i):
    with h5py.File(os.path.join(fixture_dir, f'lm_embeddings_{group}.hdf5'), 'r') as f:
        ref = f[str(i)][...]
    return np.concatenate([ref[0], ref[1]], axis=-1)  # [n_tokens, 2 * projection_dim]


def run_reference_protocol(embedder, sentences):
    """Batch i = (sentences[0][i], sentences[1][i], sentences[2][i]), i = 0..9, in order."""
    return [embedder.embed_batch([sentences[g][i] for g in range(3)]) for i in range(10)]


# ---- a toy set that any classifier that learns gets right (test_example_commands, test_finetune) -------------

# Every positive sentence is made of two cue words, every negative one of two others: the classes
# share no word. The tiny models' token features differ little from word to word (their LSTM layers
# are close to constant), so two cues per class rather than more: each class's sentence means then
# lie on a segment, far from the other's.
POS_CUES, NEG_CUES = ('funny', 'great'), ('dull', 'predictable')
# The classifier's flags that let it learn the toy set in seconds: enough epochs and steps (16 per
# batch, 3e-3), no dropout (on features that differ this little, its noise drowns the difference), a
# dev set large enough (30%) that a lucky early epoch is rarely the one kept.
LEARN = ['--epochs', '40', '--patience', '10', '--batch_size', '16', '--lr', '0.003', '--dropout', '0',
         '--dev_fraction', '0.3']
# 2 classes, 100 test sentences a fold (--folds 2 on 2 x 100): a classifier that learns nothing
# gets ~0.5 (a constant guess exactly 0.5); by chance P(>= 85 of 100 right) = 2.4e-13. Measured
# with the test models over seeds 1-4: 0.91-1.0.
LEARNED = 0.85


def write_separable_polarity(directory, n_per_class=100, seed=0, encoding='utf-8'):
    """rt-polarity.pos / .neg in `directory`: n_per_class sentences each of 3-7 tokens drawn from
    the class's cue words (POS_CUES, NEG_CUES)."""
    rng = np.random.RandomState(seed)
    for name, cues in (('rt-polarity.pos', POS_CUES), ('rt-polarity.neg', NEG_CUES)):
        lines = [' '.join(rng.choice(cues, rng.randint(3, 8))) for _ in range(n_per_class)]
        (directory / name).write_bytes(('\n'.join(lines) + '\n').encode(encoding))


def assert_learned(result):
    """Every fold of an --output_json result reached LEARNED test accuracy."""
    assert all(a >= LEARNED for a in result['fold_accuracies']), result['fold_accuracies']


# ---- from test_chinese ----------------------------------------------------------------------------------


def readme_commands(heading, doc='README.md'):
    """The bash block under `heading` in README.md (or `doc`, a path in the checkout) -> its commands as
    written (lists of words), continuation lines joined. command_line runs a `paddle-elmo SUBCOMMAND ...`
    one: command_line(*words[1:])."""
    with open(os.path.join(ROOT, doc), encoding='utf-8') as f:
        text = f.read()
    block = re.search(r'```bash\n(.*?)```', text[text.index(heading):], re.S).group(1)
    lines = [line for line in block.replace('\\\n', ' ').splitlines() if line.strip() and not line.startswith('#')]
    return [shlex.split(line, comments=True) for line in lines]  # a comment after a command is the shell's


# ---- a tiny training case (test_train_step's, reused by test_written_weights) --------------------

VOCAB, NEGATIVES, BATCH, UNROLL = 40, 9, 3, 5


def make_model(token_input='char'):
    from paddle_elmo.text.vocabulary import Vocabulary
    from paddle_elmo.train.lm import LanguageModel
    paddle.seed(7)
    vocab = Vocabulary.from_tokens(['<S>', '</S>', '<UNK>'] + [f'w{i}' for i in range(3, VOCAB)])
    config = tiny_config(dropout=0.0, token_input=token_input, word_dim=6 if token_input == 'word+char' else 0)
    model = LanguageModel(config, VOCAB, NEGATIVES, vocab=vocab if config.has_words else None)
    model.train()
    return model


def make_case(rank):
    """-> (batch, [(forward candidates, n_draws), (backward candidates, n_draws)]) of one rank.

    Each direction's candidates include one accidental hit (a target of that direction); the word
    ids repeat some words, so a touched embedding row gathers several gradients."""
    rng = np.random.RandomState(100 + rank)
    chars = rng.randint(1, 262, (BATCH, UNROLL, 50)).astype(np.int32)
    targets = rng.randint(0, VOCAB, (BATCH, UNROLL)).astype(np.int64)
    batch = {'char_ids': chars, 'next_token_ids': targets,
             'char_ids_reverse': chars[:, ::-1].copy(), 'next_token_ids_reverse': rng.randint(0, VOCAB, (BATCH, UNROLL))}
    samples = []
    for key in ('next_token_ids', 'next_token_ids_reverse'):
        hit = int(batch[key][0, 0])
        others = rng.choice([i for i in range(VOCAB) if i != hit], NEGATIVES - 1, replace=False)
        samples.append((np.concatenate([others, [hit]]).astype(np.int64), 15 + rank))
    batch['word_ids'] = rng.randint(1, VOCAB // 3, (BATCH, UNROLL)).astype(np.int64)
    batch['word_ids_reverse'] = batch['word_ids'][:, ::-1].copy()
    return batch, samples


def fix_candidates(model, samples):
    """Make the model's sampler return the given candidate sets, forward then backward."""
    queue = list(samples)
    model.sampler.sample = lambda: queue.pop(0)


# ---- a model server on 127.0.0.1 (test_model_names, test_efml) ------------------------------------------


SERVER_SECONDS = 120  # a served test never waits longer than this on the server (bounded threads)


class Server:
    """Files over HTTP from 127.0.0.1 in a thread; `modes[path]` says how a path is served: 'full',
    '404', 'half' (the whole Content-Length announced, half the bytes sent, the connection closed)
    or 'stall' (half sent, then nothing until stop()). `requests` counts the GETs."""

    def __init__(self, files):
        self.files, self.modes, self.requests = files, {}, 0
        self.stopping = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests += 1
                mode, body = server.modes.get(self.path, 'full'), server.files.get(self.path)
                if body is None or mode == '404':
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body if mode == 'full' else body[:len(body) // 2])
                self.wfile.flush()
                if mode == 'stall':
                    server.stopping.wait(SERVER_SECONDS)
                self.close_connection = True

            def log_message(self, *args):  # no access log on the test's stderr
                pass

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}/models/elmo/'
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def sha256(path):
    """A file's sha256, hex (what `sha256sum` prints): the model cards' hashes of the files they describe."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


# ---- benchmarks ----------------------------------------------------------------------------------------

def benchmark_module(name):
    """A module of benchmarks/ (they import each other by bare name, as scripts run from there)."""
    import importlib
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(os.path.join(ROOT, 'benchmarks'))
        return importlib.import_module(name)
