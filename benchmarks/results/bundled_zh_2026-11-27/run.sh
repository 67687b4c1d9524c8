#!/usr/bin/env bash
# bundled-zh, slot 1: the budget preset (unigram-prior softmax bias) with word + char input, the word
# table from skip-gram word2vec on zh-open (frozen), cosine decay over 16,000 steps, one thread.
set -euo pipefail
cd "$(dirname "$0")"
SHARED=${SHARED:-../../shared}
paddle-elmo pretrain --preset budget --seed 1 --cpu_threads 1 --tokenizer jieba \
    --token_input word+char --word_dim 128 --word_vectors w2v-128.bin --freeze_word_embeddings \
    --train_data_path $SHARED/data/zh-open/train.txt --vocab_file vocab-30k.txt \
    --dev_data_path $SHARED/data/zh-open/heldout.txt --save_dir run1 \
    --max_steps 16000 --lr_decay cosine --save_freq 1000 --eval_minutes 30 --log_freq 100 --max_minutes 110
