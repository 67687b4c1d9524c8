"""`make demo`: pretrain a tiny ELMo on the bundled sample corpus, measure it, and embed with it.

Runs the real scripts end to end (build_vocab.py, run_pretrain.py, run_eval.py) on
demo/sample_train.txt (our own sentences), then shows with ELMoEmbedder that the same word gets
different vectors in different contexts: for ambiguous words (bank, bat, spring) in held-out
sentences, the LSTM layers' vector is nearest to the right sense's centroid, while the
context-free layer 0 can only guess; then the same with the bundled model (pretrained/), which never
saw the demo's sentences. Takes about two minutes on 2 CPU cores.
"""
import os
import subprocess
import sys
import time

import args  # noqa: F401  (first: it quiets Paddle's import-time noise)
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'demo_out')
TRAIN, HELDOUT = os.path.join(HERE, 'demo', 'sample_train.txt'), os.path.join(HERE, 'demo', 'sample_heldout.txt')
VOCAB, CKPT = os.path.join(OUT, 'vocab.txt'), os.path.join(OUT, 'checkpoints')
# A small model that learns the sample corpus in about a minute on 2 CPU cores.
MODEL_FLAGS = ['--projection_dim', '64', '--cell_dim', '256', '--num_layers', '2', '--char_embed_dim', '8',
               '--cnn_filters', '[[1, 16], [2, 16], [3, 32], [4, 64], [5, 64]]', '--num_highways', '1',
               '--n_negative_samples', '256', '--batch_size', '32', '--unroll_steps', '20', '--dropout', '0.1']
STEPS = 300

# Held-out probe sentences (not in the training data): (word, sentence, sense).
PROBES = [
    ('bank', 'the heron walked along the muddy bank of the creek .', 'river'),
    ('bank', 'reeds grow thick on the grassy bank of the canal .', 'river'),
    ('bank', 'my uncle asked the bank for a loan on friday .', 'money'),
    ('bank', 'the banker deposited the cheque at the bank on payday .', 'money'),
    ('bat', 'at dusk a bat flew out of the barn and hunted moths .', 'animal'),
    ('bat', 'the bat hung upside down from the roof of the cave .', 'animal'),
    ('bat', 'his sister swung the bat and hit the ball in softball .', 'sport'),
    ('bat', 'the cricket player dropped the bat and ran .', 'sport'),
    ('spring', 'the daffodils appear every spring after the cold winter .', 'season'),
    ('spring', 'the lambs come back every spring to the meadow .', 'season'),
    ('spring', 'the tourist drank cold water from a spring under the rocks .', 'water'),
    ('spring', 'a clear spring feeds the stream below the hills .', 'water'),
]
# Training sentences that contain the word and a cue of exactly one sense define that sense.
CUES = {'bank': {'river': {'river', 'stream', 'lake', 'canal', 'creek', 'boat', 'reeds', 'muddy', 'grassy', 'flood'},
                 'money': {'loan', 'interest', 'deposited', 'cash', 'savings', 'account', 'cheque', 'refused'}},
        'bat': {'animal': {'cave', 'barn', 'insects', 'dusk', 'owl', 'fox', 'heron', 'tower', 'roof'},
                'sport': {'swung', 'ball', 'player', 'base', 'willow', 'cricket', 'baseball', 'softball'}},
        'spring': {'season': {'flowers', 'blossoms', 'daffodils', 'winter', 'warm', 'meadow', 'lambs', 'leaves'},
                   'water': {'water', 'drank', 'rocks', 'feeds', 'village', 'hills', 'mountain'}}}


def run(step, args):
    print(f'\n== {step}\n$ {" ".join(os.path.relpath(a, HERE) if a.startswith(HERE) else a for a in args)}', flush=True)
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    subprocess.run([sys.executable] + args, check=True, cwd=HERE, env=env)


def word_vectors(embedder, sentences, word):
    """All layers' vectors of `word` in each sentence -> [n_sentences, layers, dim]."""
    embs = embedder.encode([s.split() for s in sentences])
    return np.stack([e[:, s.split().index(word)] for e, s in zip(embs, sentences)])


def sense_centroids(embedder, train, word, senses):
    """Mean vectors of `word` per sense over training sentences with a cue of that sense only."""
    centroids = {}
    for sense, cues in senses.items():
        others = set().union(*(c for s, c in senses.items() if s != sense))
        chosen = [s for s in train if word in s.split() and cues & set(s.split()) and not others & set(s.split())]
        centroids[sense] = word_vectors(embedder, chosen[:20], word).mean(axis=0)  # [layers, dim]
    return centroids


def show_contexts(params_file, model_name):
    """Nearest sense centroid of each probe, per layer: context-free layer 0 can only guess.
    params_file None: the bundled model (pretrained/)."""
    from elmo import ELMoEmbedder
    print(f'\n== {model_name}: the same word, different vectors: which sense is each held-out use nearest to?',
          flush=True)
    embedder = ELMoEmbedder(params_file)
    with open(TRAIN, encoding='utf-8') as f:
        train = f.read().splitlines()
    n_layers = embedder.bilm.n_layers + 1
    correct = np.zeros(n_layers, dtype=int)
    for word, senses in CUES.items():
        centroids = sense_centroids(embedder, train, word, senses)
        probes = [p for p in PROBES if p[0] == word]
        vectors = word_vectors(embedder, [p[1] for p in probes], word)
        for (_, sentence, sense), v in zip(probes, vectors):
            guesses = []
            for layer in range(n_layers):
                cos = {s: v[layer] @ c[layer] / (np.linalg.norm(v[layer]) * np.linalg.norm(c[layer]) + 1e-12)
                       for s, c in centroids.items()}
                guesses.append(max(cos, key=cos.get))
            correct += [g == sense for g in guesses]
            print(f'  [{sense:>6}] {sentence:<62} layer 0: {guesses[0]:<6} top: {guesses[-1]}')
    for layer in range(n_layers):
        kind = 'char CNN, context-free' if layer == 0 else f'LSTM layer {layer}'
        print(f'  layer {layer} ({kind}): {correct[layer]}/{len(PROBES)} senses right')
    return correct


def main():
    t0 = time.time()
    os.makedirs(OUT, exist_ok=True)
    print('Pretraining a tiny ELMo on the bundled sample corpus (demo/sample_train.txt, our own sentences).')
    run('build the vocabulary', ['build_vocab.py', '--train_data_path', TRAIN, '--vocab_file', VOCAB])
    run(f'pretrain {STEPS} steps with sampled softmax', ['run_pretrain.py', '--train_data_path', TRAIN,
        '--vocab_file', VOCAB, '--save_dir', CKPT, '--max_steps', str(STEPS), '--log_freq', '50',
        '--save_freq', '1000', '--dev_data_path', HELDOUT, '--eval_freq', '100', '--seed', '1'] + MODEL_FLAGS)
    run('held-out perplexity (full softmax)', ['run_eval.py', '--dev_data_path', HELDOUT, '--vocab_file', VOCAB,
        '--init_from_ckpt', os.path.join(CKPT, 'final'), '--batch_size', '8'])
    show_contexts(os.path.join(CKPT, 'final'), 'the tiny model just trained')
    show_contexts(None, 'the bundled model (pretrained/, trained on lm-corpus; no sentence of the demo)')
    print(f'\nDone in {time.time() - t0:.0f} s. Checkpoint: {os.path.relpath(CKPT, HERE)}/final, '
          f'training curve: {os.path.relpath(CKPT, HERE)}/train_curve.png')


if __name__ == '__main__':
    main()
