#!/usr/bin/env bash
# Get the pretraining and downstream data into the layout of the PaddleNLP ELMo example:
#
#   DATA_DIR/1-billion-word/training-tokenized-shuffled/    1B Word training shards
#   DATA_DIR/1-billion-word/heldout-tokenized-shuffled/     1B Word held-out shards
#   DATA_DIR/1-billion-word/vocab-15w.txt                   <S> </S> <UNK> + the 150,000 most
#                                                           frequent training words (paddle-elmo build-vocab)
#   DATA_DIR/sentence-polarity-dataset-v1/rt-polarity.pos, rt-polarity.neg   (Latin-1, as published)
#   DATA_DIR/sentence-polarity-dataset-v1/GoogleNews-vectors-negative300.bin (word2vec baseline)
#
# Usage: bash download_data.sh [--data_dir DIR] [--from DIR] [--only LIST] [--remove_archives]
#
# - Idempotent: a step whose output is there is skipped. Outputs are renamed into place only when
#   complete, so an interrupted run leaves no half-made output behind.
# - Resumable: archives download into DATA_DIR/downloads/NAME.part (curl -C -) and are renamed to
#   NAME once complete and verified.
# - Checksummed:
#     1B Word: sha256 published by TensorFlow Datasets (tensorflow_datasets/url_checksums/lm1b.txt,
#       1,792,209,805 bytes).
#     GoogleNews vectors: md5 published by the deeplearning4j examples for this S3 copy.
#     rt-polarity: no checksum is published for the Cornell URL, so its sha256 is recorded on the
#       first download in DATA_DIR/downloads/recorded.sha256 and every later download must match.
# - Offline: fetch the archives elsewhere, put them in one directory and pass --from DIR.
# - Mirrors and tests: LM1B_URL, POLARITY_URL, WORD2VEC_URL override the URLs (file:// works);
#   LM1B_SUM, POLARITY_SUM, WORD2VEC_SUM override the checksums as sha256:HEX or md5:HEX
#   ("record" = record on first download). PYTHON picks the interpreter for build-vocab.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_DIR=$ROOT/data
FROM=
ONLY=1b,polarity,word2vec
REMOVE_ARCHIVES=0
VOCAB_SIZE=150000

LM1B_NAME=1-billion-word-language-modeling-benchmark-r13output.tar.gz
LM1B_URL=${LM1B_URL:-http://www.statmt.org/lm-benchmark/$LM1B_NAME}
LM1B_SUM=${LM1B_SUM:-sha256:01ba60381110baf7f189dfd2b8374de371e8c9a340835793f190bdae9e90a34e}
POLARITY_NAME=rt-polaritydata.tar.gz
POLARITY_URL=${POLARITY_URL:-https://www.cs.cornell.edu/people/pabo/movie-review-data/$POLARITY_NAME}
POLARITY_SUM=${POLARITY_SUM:-record}
WORD2VEC_NAME=GoogleNews-vectors-negative300.bin.gz
WORD2VEC_URL=${WORD2VEC_URL:-https://s3.amazonaws.com/dl4j-distribution/$WORD2VEC_NAME}
WORD2VEC_SUM=${WORD2VEC_SUM:-md5:1c892c4707a8a1a508b01a01735c0339}

usage() {
  cat <<EOF
usage: bash download_data.sh [--data_dir DIR] [--from DIR] [--only LIST] [--remove_archives]

  --data_dir DIR       where the data goes (default: $ROOT/data)
  --from DIR           take the archives from DIR instead of downloading them
                       ($LM1B_NAME, $POLARITY_NAME, $WORD2VEC_NAME)
  --only LIST          comma-separated steps among 1b, polarity, word2vec (default: all)
  --remove_archives    delete each downloaded archive once its step is done (never those of --from)
EOF
}
usage_error() { echo "error: $*" >&2; exit 2; }
fail() { echo "error: $*" >&2; exit 1; }
note() { echo "[download_data] $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --data_dir|--from|--only)
      [ $# -ge 2 ] || usage_error "$1 needs a value (see --help)"
      case $1 in --data_dir) DATA_DIR=$2 ;; --from) FROM=$2 ;; --only) ONLY=$2 ;; esac
      shift 2 ;;
    --remove_archives) REMOVE_ARCHIVES=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown option $1 (see --help)" ;;
  esac
done
for step in ${ONLY//,/ }; do
  case $step in 1b|polarity|word2vec) ;; *) usage_error "--only: unknown step '$step' (expected 1b, polarity, word2vec)" ;; esac
done
for var in LM1B_SUM POLARITY_SUM WORD2VEC_SUM; do
  case ${!var} in
    record|sha256:?*|md5:?*) ;;
    *) usage_error "$var=${!var}: expected sha256:HEX, md5:HEX or record" ;;
  esac
done
[ -z "$FROM" ] || [ -d "$FROM" ] || usage_error "--from $FROM: not a directory"
for tool in tar gzip sha256sum md5sum; do
  command -v "$tool" >/dev/null || fail "$tool is needed but not installed"
done
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON=$ROOT/.venv/bin/python; else PYTHON=python3; fi
fi
DOWNLOADS=$DATA_DIR/downloads
RECORDED=$DOWNLOADS/recorded.sha256

wants() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

checksum() {  # ALGO FILE -> hex digest
  case $1 in
    sha256) sha256sum "$2" | cut -d' ' -f1 ;;
    md5) md5sum "$2" | cut -d' ' -f1 ;;
    *) echo "unknown checksum algorithm $1" >&2; return 1 ;;
  esac
}

# verify FILE NAME SUM: succeed when FILE has the expected checksum; SUM "record" records the
# sha256 of NAME's first download and checks later downloads against it.
verify() {
  local file=$1 name=$2 sum=$3 algo expected actual
  if [ "$sum" = record ]; then
    algo=sha256
    expected=$(awk -v n="$name" '$2 == n { print $1 }' "$RECORDED" 2>/dev/null | tail -n 1)
    if [ -z "$expected" ]; then
      actual=$(checksum sha256 "$file")
      mkdir -p "$DOWNLOADS"
      echo "$actual  $name" >> "$RECORDED"
      note "$name: no published checksum; recorded sha256 $actual in $RECORDED"
      return 0
    fi
  else
    algo=${sum%%:*}
    expected=${sum#*:}
  fi
  note "verifying $name ($algo)"
  actual=$(checksum "$algo" "$file")
  if [ "$actual" != "$expected" ]; then
    MISMATCH="$algo checksum mismatch (expected $expected, got $actual)"
    return 1
  fi
}

# fetch NAME URL SUM: set ARCHIVE to a verified copy of NAME (from --from, or downloaded).
fetch() {
  local name=$1 url=$2 sum=$3
  if [ -n "$FROM" ]; then
    ARCHIVE=$FROM/$name
    [ -f "$ARCHIVE" ] || fail "$ARCHIVE not found (--from $FROM): put $name there (from $url)"
    verify "$ARCHIVE" "$name" "$sum" || fail "$ARCHIVE: $MISMATCH; is it the right file?"
    return 0
  fi
  ARCHIVE=$DOWNLOADS/$name
  if [ -f "$ARCHIVE" ]; then
    note "have $ARCHIVE (verified when downloaded)"
    return 0
  fi
  command -v curl >/dev/null || fail "curl is needed to download $url (or use --from DIR)"
  mkdir -p "$DOWNLOADS"
  note "downloading $url -> $ARCHIVE.part (resumes if interrupted)"
  curl -fL --retry 3 --retry-delay 5 -C - -o "$ARCHIVE.part" "$url" ||
    fail "could not download $url (offline?): fetch $name elsewhere and rerun with --from DIR_WITH_ARCHIVES (a partial download stays in $ARCHIVE.part and resumes)"
  if ! verify "$ARCHIVE.part" "$name" "$sum"; then
    rm -f "$ARCHIVE.part"
    fail "$url: $MISMATCH; the corrupt download was removed, run again"
  fi
  mv "$ARCHIVE.part" "$ARCHIVE"
}

done_with() {  # ARCHIVE: delete it after its step under --remove_archives (never a --from file)
  if [ "$REMOVE_ARCHIVES" = 1 ] && [ -z "$FROM" ] && [ -f "$1" ]; then
    note "removing $1"
    rm -f "$1"
  fi
}

extract() {  # ARCHIVE DIR: a fresh DIR holding the archive's contents
  rm -rf "$2"
  mkdir -p "$2"
  note "extracting $1"
  tar -xzf "$1" -C "$2" || fail "$1: could not be extracted (corrupt archive?)"
}

step_1b() {
  local dest=$DATA_DIR/1-billion-word
  local train=$dest/training-tokenized-shuffled held=$dest/heldout-tokenized-shuffled
  local vocab=$dest/vocab-15w.txt tmp=$dest/.extract.tmp
  if [ -d "$train" ]; then  # moved into place last, so its presence means the step finished
    note "skip 1B Word: $train is there"
  else
    fetch "$LM1B_NAME" "$LM1B_URL" "$LM1B_SUM"
    extract "$ARCHIVE" "$tmp"
    local top=$tmp/1-billion-word-language-modeling-benchmark-r13output
    [ -d "$top/training-monolingual.tokenized.shuffled" ] && [ -d "$top/heldout-monolingual.tokenized.shuffled" ] ||
      fail "$ARCHIVE: expected 1-billion-word-language-modeling-benchmark-r13output/{training,heldout}-monolingual.tokenized.shuffled/ inside"
    rm -rf "$held"
    mv "$top/heldout-monolingual.tokenized.shuffled" "$held"
    mv "$top/training-monolingual.tokenized.shuffled" "$train"
    rm -rf "$tmp"
    done_with "$ARCHIVE"
  fi
  if [ -f "$vocab" ]; then
    note "skip vocabulary: $vocab is there"
  else
    note "building $vocab from $train (a few minutes for 1B Word)"
    # the checkout's package, with or without an install
    PYTHONPATH="$ROOT" "$PYTHON" -m paddle_elmo build-vocab --train_data_path "$train/*" --output_file "$vocab" \
      --max_vocab_size "$VOCAB_SIZE" || fail "paddle-elmo build-vocab failed (see above)"
  fi
}

step_polarity() {
  local dest=$DATA_DIR/sentence-polarity-dataset-v1
  local tmp=$dest/.extract.tmp
  if [ -f "$dest/rt-polarity.pos" ] && [ -f "$dest/rt-polarity.neg" ]; then
    note "skip rt-polarity: $dest/rt-polarity.pos and .neg are there"
    return 0
  fi
  fetch "$POLARITY_NAME" "$POLARITY_URL" "$POLARITY_SUM"
  extract "$ARCHIVE" "$tmp"
  for f in rt-polarity.neg rt-polarity.pos; do
    [ -f "$tmp/rt-polaritydata/$f" ] || fail "$ARCHIVE: expected rt-polaritydata/$f inside"
  done
  mv "$tmp/rt-polaritydata/rt-polarity.neg" "$dest/rt-polarity.neg"
  mv "$tmp/rt-polaritydata/rt-polarity.pos" "$dest/rt-polarity.pos"
  rm -rf "$tmp"
  done_with "$ARCHIVE"
}

step_word2vec() {
  local dest=$DATA_DIR/sentence-polarity-dataset-v1
  local out=$dest/GoogleNews-vectors-negative300.bin
  if [ -f "$out" ]; then
    note "skip word2vec: $out is there"
    return 0
  fi
  fetch "$WORD2VEC_NAME" "$WORD2VEC_URL" "$WORD2VEC_SUM"
  mkdir -p "$dest"
  note "decompressing $ARCHIVE -> $out (3.6 GB for the real file)"
  gzip -dc "$ARCHIVE" > "$out.part" || { rm -f "$out.part"; fail "$ARCHIVE: could not be decompressed"; }
  mv "$out.part" "$out"
  done_with "$ARCHIVE"
}

mkdir -p "$DATA_DIR"
if wants 1b; then step_1b; fi
if wants polarity; then step_polarity; fi
if wants word2vec; then step_word2vec; fi
note "done; data in $DATA_DIR"
if wants 1b; then
  note "pretrain with: --train_data_path '$DATA_DIR/1-billion-word/training-tokenized-shuffled/*' --vocab_file $DATA_DIR/1-billion-word/vocab-15w.txt"
fi
