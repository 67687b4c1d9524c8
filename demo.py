"""`make demo`: pretrain a tiny ELMo on the bundled sample corpus, measure it, and embed with it.

Runs the real scripts end to end (build_vocab.py, run_pretrain.py, run_eval.py) on
demo/sample_train.txt (our own sentences), then shows with ELMoEmbedder that the same word gets
different vectors in different contexts: each ambiguous word is closer to itself in a sentence of
the same sense than in one of the other sense. Takes about two minutes on 2 CPU cores.
"""
import os
import subprocess
import sys
import time

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

# (word, sentence, sense): two sentences per sense, none of them in the training data.
PROBES = [
    ('bank', 'the ducks swam near the bank of the quiet river .', 'river'),
    ('bank', 'we had a picnic on the bank of the stream .', 'river'),
    ('bank', 'my mother paid the loan at the bank on monday .', 'money'),
    ('bank', 'the bank sent a letter about the savings account .', 'money'),
    ('bat', 'a bat flew over the barn at night .', 'animal'),
    ('bat', 'the small bat slept in the dark cave .', 'animal'),
    ('bat', 'he swung the bat and hit the ball in baseball .', 'sport'),
    ('bat', 'the player lost his bat before the cricket match .', 'sport'),
    ('spring', 'the flowers return every spring after winter .', 'season'),
    ('spring', 'in early spring the meadow is green .', 'season'),
    ('spring', 'they drank water from a cold spring in the rocks .', 'water'),
    ('spring', 'a spring feeds the lake below the hills .', 'water'),
]


def run(step, args):
    print(f'\n== {step}\n$ {" ".join(os.path.relpath(a, HERE) if a.startswith(HERE) else a for a in args)}', flush=True)
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    subprocess.run([sys.executable] + args, check=True, cwd=HERE, env=env)


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def show_contexts(params_file):
    from elmo import ELMoEmbedder
    embedder = ELMoEmbedder(params_file)
    vectors = []
    for word, sentence, _ in PROBES:
        tokens = sentence.split()
        top = embedder.embed_sentence(tokens)[2]  # [n_tokens, dim], top biLM layer
        vectors.append(top[tokens.index(word)])
    print('\n== the same word, different vectors (cosine similarity of the top layer)')
    ok = 0
    for word in dict.fromkeys(w for w, _, _ in PROBES):
        idx = [i for i, p in enumerate(PROBES) if p[0] == word]
        same = [cosine(vectors[i], vectors[j]) for i in idx for j in idx if i < j and PROBES[i][2] == PROBES[j][2]]
        other = [cosine(vectors[i], vectors[j]) for i in idx for j in idx if i < j and PROBES[i][2] != PROBES[j][2]]
        senses = sorted({PROBES[i][2] for i in idx})
        verdict = 'yes' if min(same) > max(other) else 'not yet'
        ok += verdict == 'yes'
        print(f'  {word!r}: same sense ({" / ".join(senses)}) {np.mean(same):.3f}, other sense {np.mean(other):.3f}'
              f' -> senses separated: {verdict}')
        for i in idx:
            print(f'      [{PROBES[i][2]:>6}] {PROBES[i][1]}')
    layer0 = embedder.embed_sentence(PROBES[0][1].split())[0][PROBES[0][1].split().index('bank')]
    layer0b = embedder.embed_sentence(PROBES[2][1].split())[0][PROBES[2][1].split().index('bank')]
    print(f'  (layer 0, the context-free char-CNN vector, is identical in both senses: '
          f'cosine {cosine(layer0, layer0b):.3f})')
    return ok


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
    show_contexts(os.path.join(CKPT, 'final'))
    print(f'\nDone in {time.time() - t0:.0f} s. Checkpoint: {os.path.relpath(CKPT, HERE)}/final, '
          f'training curve: {os.path.relpath(CKPT, HERE)}/train_curve.png')


if __name__ == '__main__':
    main()
