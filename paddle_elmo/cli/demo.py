"""`make demo`: pretrain a tiny ELMo on the bundled sample corpus, measure it, and embed with it.

Runs the real commands end to end (`paddle-elmo build-vocab`, `pretrain`, `eval`) on the sample
corpus installed with the package (`paddle_elmo/demo_data/sample_train.txt`, our own sentences), then
illustrates with ELMoEmbedder that the same word gets different vectors in different contexts: for
ambiguous words (bank, bat, spring), which sense's centroid (the mean vector of the word in training
sentences with a cue word of that sense) is each probe sentence's use nearest to, per layer? The
probes are a dozen sentences of our own, and none has a cue word of any sense, so a right answer
comes from the rest of the context, not from a cue the centroids were built on. It is a small
illustration on a few sentences, not a measurement: one probe more or less right is noise. The same
then with the bundled model (`paddle_elmo/pretrained/`), which never saw the demo's sentences.
Takes a few minutes on 2 CPU cores. Everything it writes goes to --output_dir (default: a new
temporary directory, whose path it prints).

    paddle-elmo demo --zh --model runs/zh/final --train_data_path zh-corpus/train.txt   # Chinese

With --zh and --model MODEL (a checkpoint trained on zh-corpus, see docs/CHINESE.md; the
older spelling --init_from_ckpt DIR/N works too) it shows the same for Chinese words with two senses, 花 (flower / to
spend) and 长 (long / the head of, as in 省长): raw probe sentences of our own split by the
model's tokenizer, none containing any cue word, the senses' centroids from zh-corpus training
sentences with one sense's cues.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from paddle_elmo.cli import runner
from paddle_elmo.cli.arguments import Switch, output_directory, parser
from paddle_elmo.text.corpus import SAMPLE_HELDOUT as HELDOUT, SAMPLE_TRAIN as TRAIN
from paddle_elmo.fileio import InputError, iter_lines, make_directory, require_package

# A small model that learns the sample corpus quickly on 2 CPU cores.
MODEL_FLAGS = ['--projection_dim', '64', '--cell_dim', '256', '--num_layers', '2', '--char_embed_dim', '8',
               '--cnn_filters', '[[1, 16], [2, 16], [3, 32], [4, 64], [5, 64]]', '--num_highways', '1',
               '--n_negative_samples', '256', '--batch_size', '32', '--unroll_steps', '20', '--dropout', '0.1']
STEPS = 300

# Probe sentences of our own, not in the training data: (word, sentence, sense). None contains a
# word of CUES (of any word's senses, test_demo checks): what tells the senses apart is context the
# centroids were not selected by.
PROBES = [
    ('bank', 'the ducks rested on the bank where the current bends .', 'river'),
    ('bank', 'she sat on the far bank and watched the sunset .', 'river'),
    ('bank', 'my aunt paid her salary into the bank on friday .', 'money'),
    ('bank', 'the bank wants a signature before it pays the pension .', 'money'),
    ('bat', 'a small bat flew out of the attic and hunted moths .', 'animal'),
    ('bat', 'the bat hung upside down near the old chimney .', 'animal'),
    ('bat', 'she gripped the bat and hit a high shot over the fence .', 'sport'),
    ('bat', 'the coach bought a new bat for the team .', 'sport'),
    ('spring', 'the garden turns green every spring after the cold months .', 'season'),
    ('spring', 'we plant tomatoes in early spring when the days get longer .', 'season'),
    ('spring', 'the hikers filled their bottles from a clear spring in the forest .', 'water'),
    ('spring', 'a cold spring bubbles up under the old bridge .', 'water'),
]
# Training sentences that contain the word and a cue of exactly one sense define that sense.
CUES = {'bank': {'river': {'river', 'stream', 'lake', 'canal', 'creek', 'boat', 'reeds', 'muddy', 'grassy', 'flood'},
                 'money': {'loan', 'interest', 'deposited', 'cash', 'savings', 'account', 'cheque', 'refused'}},
        'bat': {'animal': {'cave', 'barn', 'insects', 'dusk', 'owl', 'fox', 'heron', 'tower', 'roof'},
                'sport': {'swung', 'ball', 'player', 'base', 'willow', 'cricket', 'baseball', 'softball'}},
        'spring': {'season': {'flowers', 'blossoms', 'daffodils', 'winter', 'warm', 'meadow', 'lambs', 'leaves'},
                   'water': {'water', 'drank', 'rocks', 'feeds', 'village', 'hills', 'mountain'}}}


def run(step, args, log_flags=()):
    """Runs `paddle-elmo ARGS` as a user would (a process of its own), echoing the command; log_flags:
    the demo's own --quiet / --verbose, passed on."""
    args = list(args) + list(log_flags)
    print(f'\n== {step}\n$ paddle-elmo {" ".join(args)}', flush=True)
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    code = subprocess.run([sys.executable, '-m', 'paddle_elmo'] + args, env=env).returncode
    if code:
        sys.exit(code)  # the step said why on stderr, in its one line: the demo stops with its exit code


# Chinese: raw probe sentences of our own (split by the model's tokenizer, jieba for a zh-corpus
# model, which leaves the word a token of its own), senses defined by cues in zh-corpus's sentences.
# No probe contains any cue of CUES_ZH, not even as a part of a longer word (test_demo checks).
PROBES_ZH = [
    ('花', '公园里的花很美，引来不少游客。', 'flower'),
    ('花', '院子里种满了花和草。', 'flower'),
    ('花', '她买了一些花送给老师。', 'flower'),
    ('花', '他为了修这条路，花了整整三年。', 'spend'),
    ('花', '这次装修花了五十多万。', 'spend'),
    ('花', '我们花了不少力气才找到他。', 'spend'),
    ('长', '今年的冬季特别长，雪也多。', 'long'),
    ('长', '这部电影长三个半钟头。', 'long'),
    ('长', '学生们的暑假长，寒假短。', 'long'),
    ('长', '四川省长在会上讲话。', 'head'),
    ('长', '福建省长访问了当地的工厂。', 'head'),
    ('长', '安徽省长视察了新建的学校。', 'head'),
]
CUES_ZH = {'花': {'flower': {'盛开', '绽放', '年宵', '鲜花', '桃花', '花香', '赏花', '花卉', '开', '朵', '樱花', '油菜花',
                             '春天', '花海'},
                  'spend': {'钱', '元', '万元', '时间', '小时', '天', '精力', '功夫', '心思', '一笔', '多少'}},
           '长': {'long': {'公里', '米', '时间', '达', '周期', '太', '较', '宽', '全长', '厘米', '多长'},
                  'head': {'金正恩', '委员', '出席', '会见', '会谈', '国务', '外', '河北省', '山东省', '湖南省', '陕西省',
                           '河南省', '广东省', '浙江省', '江苏省', '省委书记'}}}
# Training sentences per sense, at most: the sample corpus has 17-126 per sense; zh-corpus hundreds.
CENTROID_SENTENCES, CENTROID_SENTENCES_ZH = 20, 50


def word_vectors(embedder, sentences, word):
    """All layers' vectors of `word` (its first use) in each token list -> [n_sentences, layers, dim]."""
    embs = embedder.encode(sentences)
    return np.stack([e[:, s.index(word)] for e, s in zip(embs, sentences)])


def sense_centroids(embedder, train, word, senses, limit=CENTROID_SENTENCES):
    """Mean vectors of `word` per sense over (at most `limit`) training sentences (token lists) with
    a cue of that sense only -> {sense: [layers, dim]}."""
    centroids = {}
    for sense, cues in senses.items():
        others = set().union(*(c for s, c in senses.items() if s != sense))
        chosen = [s for s in train if word in s and cues & set(s) and not others & set(s)][:limit]
        if not chosen:
            raise InputError(f'no training sentence has {word!r} with a cue of its sense {sense!r} only')
        centroids[sense] = word_vectors(embedder, chosen, word).mean(axis=0)
    return centroids


def sentences_with(path, words):
    """The lines of a segmented corpus that have one of `words` as a token -> token lists."""
    return [line.split() for _, _, line in iter_lines(path) if set(line.split()) & set(words)]


def show_contexts(model, model_name, probes=PROBES, cues=CUES, train_file=TRAIN, limit=CENTROID_SENTENCES):
    """Nearest sense centroid of each probe, per layer: context-free layer 0 can only guess.
    model: what ELMoEmbedder takes as its model (None: the bundled model, pretrained/; a name, a
    directory, a checkpoint prefix: model_io.resolve_model). Probes are raw sentences, split by the model's tokenizer; train_file is
    segmented (tokens split by spaces); limit: training sentences per sense centroid. -> senses right per layer [layers]."""
    from paddle_elmo.text.tokenizers import get_tokenizer
    from paddle_elmo import ELMoEmbedder
    print(f'\n== {model_name}: the same word, different vectors: which sense is each probe\'s use nearest to? '
          f'(an illustration on {len(probes)} sentences of our own without the senses\' cue words, not a measurement)',
          flush=True)
    embedder = ELMoEmbedder(model)
    split = get_tokenizer(embedder.tokenizer)
    train = sentences_with(train_file, list(cues))
    n_layers = embedder.bilm.n_layers + 1
    correct = np.zeros(n_layers, dtype=int)
    width = max(len(p[1]) for p in probes)
    for word, senses in cues.items():
        centroids = sense_centroids(embedder, train, word, senses, limit)
        chosen = [p for p in probes if p[0] == word]
        tokens = [split(p[1]) for p in chosen]
        bad = [p[1] for p, t in zip(chosen, tokens) if word not in t]
        if bad:
            raise InputError(f'the {embedder.tokenizer} tokenizer does not leave {word!r} a token in {bad[0]}')
        vectors = word_vectors(embedder, tokens, word)
        for (_, sentence, sense), v in zip(chosen, vectors):
            guesses = []
            for layer in range(n_layers):
                cos = {s: v[layer] @ c[layer] / (np.linalg.norm(v[layer]) * np.linalg.norm(c[layer]) + 1e-12)
                       for s, c in centroids.items()}
                guesses.append(max(cos, key=cos.get))
            correct += [g == sense for g in guesses]
            print(f'  [{sense:>6}] {sentence:<{width}} layer 0: {guesses[0]:<6} top: {guesses[-1]}')
    for layer in range(n_layers):
        kind = f'{embedder.bilm.config.input_mode.layer0}, context-free' if layer == 0 else f'LSTM layer {layer}'
        print(f'  layer {layer} ({kind}): {correct[layer]}/{len(probes)} senses right')
    return correct


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('--output_dir', type=output_directory,
                   help='where the vocabulary and checkpoints go (made if needed; default: a new temporary directory)')
    p.add_argument('--zh', action=Switch, default=False,
                   help='instead of pretraining: the sense demo for Chinese with the biLM --model names '
                   '(trained on zh-corpus), the senses\' centroids from --train_data_path')
    p.add_argument('--model', metavar='NAME_OR_PATH', help='with --zh: a Chinese biLM trained on zh-corpus, as a '
                   'directory or a checkpoint prefix')
    p.add_argument('--init_from_ckpt', help='with --zh: checkpoint prefix without suffix of a biLM trained on '
                   'zh-corpus, e.g. zh/final (the same as --model zh/final)')
    p.add_argument('--train_data_path', help='with --zh: the segmented Chinese text it was trained on (zh-corpus\'s '
                   'train.txt), for the senses\' centroids')
    return p


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    model = a.model or a.init_from_ckpt
    given = (model, a.train_data_path)
    if (a.zh and not all(given)) or (not a.zh and any(given)) or (a.model and a.init_from_ckpt):
        p.error('--zh goes with one model (--model NAME_OR_PATH or --init_from_ckpt DIR/N) and --train_data_path '
                '(segmented Chinese text with the senses\' cue words)')
    require_package('paddle', 'cpu')  # every step runs a model: say so before the first one
    if a.zh:
        show_contexts(model, f'{model} (Chinese)', PROBES_ZH, CUES_ZH,
                      a.train_data_path, CENTROID_SENTENCES_ZH)
        return
    t0 = time.time()
    out = a.output_dir or tempfile.mkdtemp(prefix='paddle-elmo-demo-')
    make_directory(out, '--output_dir')
    vocab, ckpt = os.path.join(out, 'vocab.txt'), os.path.join(out, 'checkpoints')
    print(f'Pretraining a tiny ELMo on the sample corpus installed with the package (our own sentences); output in {out}')
    log_flags = ['--quiet'] if a.quiet else ['--verbose'] if a.verbose else []
    run('build the vocabulary', ['build-vocab', '--train_data_path', TRAIN, '--output_file', vocab], log_flags)
    run(f'pretrain {STEPS} steps with sampled softmax', ['pretrain', '--train_data_path', TRAIN,
        '--vocab_file', vocab, '--save_dir', ckpt, '--max_steps', str(STEPS), '--log_freq', '50',
        '--save_freq', '1000', '--dev_data_path', HELDOUT, '--eval_freq', '100', '--seed', '1'] + MODEL_FLAGS,
        log_flags)
    run('held-out perplexity (full softmax)', ['eval', '--dev_data_path', HELDOUT,
        '--init_from_ckpt', os.path.join(ckpt, 'final'), '--batch_size', '8'], log_flags)
    show_contexts(os.path.join(ckpt, 'final'), 'the tiny model just trained')
    show_contexts(None, 'the bundled model (paddle_elmo/pretrained/, trained on lm-corpus; no sentence of the demo)')
    curve = os.path.join(ckpt, 'train_curve.png')  # drawn where matplotlib is installed (the [plot] extra)
    print(f'\nDone in {time.time() - t0:.0f} s. Checkpoint: {ckpt}/final, training curve: '
          f'{curve if os.path.exists(curve) else os.path.join(ckpt, "train_log.csv")}')


if __name__ == '__main__':
    runner.run(main)
