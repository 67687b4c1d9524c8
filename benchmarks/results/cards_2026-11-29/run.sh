#!/usr/bin/env bash
# The measured figures of the two model cards (paddle_elmo/pretrained/README.md and
# paddle_elmo/pretrained_zh/README.md), evaluated again on the shipped weights, one thread each.
# Quality figures, not timings. Run from a checkout: bash benchmarks/results/cards_2026-11-29/run.sh
# DATA: lm-corpus/heldout.txt, zh-open/heldout.txt, rt-polarity/, zh-sentiment/ (see the cards).
# P: the command (paddle-elmo, or python -m paddle_elmo in a checkout).
set -euo pipefail
OUT=benchmarks/results/cards_2026-11-29
DATA=${DATA:-data}
P=${P:-paddle-elmo}
export OMP_NUM_THREADS=1
TMP=$(mktemp -d)
git rev-parse HEAD > $OUT/commit.txt
sha256sum paddle_elmo/pretrained/weights.hdf5 paddle_elmo/pretrained_zh/weights.hdf5 > $OUT/weights.sha256
# the word table of each model as word vectors (its rows with vocab.txt's words: the word2vec vectors
# the frozen table was initialised from), for ELMo + word2vec
python - $TMP <<'PY'
import sys, h5py, numpy as np
for d, name in (('pretrained', 'en'), ('pretrained_zh', 'zh')):
    words = open(f'paddle_elmo/{d}/vocab.txt', encoding='utf-8').read().split('\n')[:-1]
    with h5py.File(f'paddle_elmo/{d}/weights.hdf5', 'r') as f:
        np.savez(f'{sys.argv[1]}/table-{name}.npz', words=np.array(words), vectors=f['word_embedding'][:])
PY
# the share of each corpus's tokens that the model's vocabulary holds (its word table and softmax rows):
# lm-corpus train.txt and rt-polarity (split by the model's moses tokenizer) for bundled, zh-open
# train.txt and heldout.txt for bundled-zh
python - $DATA $OUT/vocab_coverage.json <<'PY'
import json, sys
from paddle_elmo.text.encodings import read_text_file
from paddle_elmo.text.tokenizers import get_tokenizer

def share(vocab, lines):
    known = total = 0
    for tokens in lines:
        total += len(tokens)
        known += sum(t in vocab for t in tokens)
    return {'tokens': total, 'in_vocabulary': known, 'share': known / total}

def vocabulary(directory):
    with open(f'paddle_elmo/{directory}/vocab.txt', encoding='utf-8') as f:
        return set(f.read().split('\n')[:-1]) - {'<S>', '</S>', '<UNK>'}

def corpus(path):
    with open(path, encoding='utf-8') as f:
        for line in f:
            yield line.split()

data, out = sys.argv[1:]
en, zh, moses = vocabulary('pretrained'), vocabulary('pretrained_zh'), get_tokenizer('moses')
rt = [moses(s) for name in ('pos', 'neg') for s in read_text_file(f'{data}/rt-polarity/rt-polarity.{name}', 'moses')[0].splitlines() if s.strip()]
json.dump({'bundled': {'lm-corpus train.txt': share(en, corpus(f'{data}/lm-corpus/train.txt')),
                       'rt-polarity (moses)': share(en, rt)},
           'bundled-zh': {'zh-open train.txt': share(zh, corpus(f'{data}/zh-open/train.txt')),
                          'zh-open heldout.txt': share(zh, corpus(f'{data}/zh-open/heldout.txt'))}},
          open(out, 'w'), indent=1)
PY
# held-out perplexity: bundled on the first 51,200 targets and on the whole of lm-corpus heldout.txt;
# bundled-zh on the whole of zh-open heldout.txt
$P eval --model bundled --dev_data_path $DATA/lm-corpus/heldout.txt --eval_max_tokens 51200 --cpu_threads 1 \
    --no_progress --output_json $OUT/eval_bundled_51200.json > $OUT/eval_bundled_51200.txt
$P eval --model bundled --dev_data_path $DATA/lm-corpus/heldout.txt --cpu_threads 1 \
    --no_progress --output_json $OUT/eval_bundled_all.json > $OUT/eval_bundled_all.txt
$P eval --model bundled-zh --dev_data_path $DATA/zh-open/heldout.txt --cpu_threads 1 \
    --no_progress --output_json $OUT/eval_bundled_zh_all.json > $OUT/eval_bundled_zh_all.txt
# int8: the export's check on each model's own held-out sample (the default)
$P export-inference --model bundled-zh --quantize int8 --output_dir $TMP/int8-zh 2> $OUT/int8_bundled_zh.log
cp $TMP/int8-zh/export.json $OUT/int8_bundled_zh.json
$P export-inference --model bundled --quantize int8 --output_dir $TMP/int8-en 2> $OUT/int8_bundled.log
cp $TMP/int8-en/export.json $OUT/int8_bundled.json
# rt-polarity, frozen, 10 folds (seed 0, as the card's rows): ELMo, ELMo + the table's vectors, the table's
# vectors alone (word2vec + BoW), the int8 export
$P finetune --model bundled --data_dir $DATA/rt-polarity --cpu_threads 1 --quiet --seed 0 \
    --output_json $OUT/rt_elmo.json
$P finetune --model bundled --data_dir $DATA/rt-polarity --cpu_threads 1 --quiet --seed 0 \
    --word_vectors $TMP/table-en.npz --output_json $OUT/rt_concat.json
$P word2vec --data_dir $DATA/rt-polarity --word_vectors $TMP/table-en.npz --cpu_threads 1 --quiet --seed 0 \
    --output_json $OUT/rt_word2vec.json
$P finetune --inference_model $TMP/int8-en --inference_backend onnxruntime --data_dir $DATA/rt-polarity \
    --cpu_threads 1 --quiet --seed 0 --output_json $OUT/rt_int8.json
# online_shopping, frozen, 10 folds (seed 1, batches of 128, reviews cut to 128 with <S> and </S>)
$P finetune --model bundled-zh --data_dir $DATA/zh-sentiment --pos_file online_shopping.pos \
    --neg_file online_shopping.neg --batch_size 128 --max_seq_len 128 --cpu_threads 1 --quiet --seed 1 \
    --output_json $OUT/zh_elmo.json
rm -rf $TMP
