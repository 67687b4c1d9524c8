#!/bin/bash
# The raw output of the figures README.md quotes that had none (tests/test_doc_figures.py checks README
# against these files). One thread; each command takes seconds (the int8 exports ~15 s each) but the last.
# RT: the rt-polarity directory (data/sentence-polarity-dataset-v1 of download_data.sh).
set -e
export OMP_NUM_THREADS=1
OUT=benchmarks/results/readme_2026-11-27
RT=${RT:-data/sentence-polarity-dataset-v1}
TMP=$(mktemp -d)
# Quick start: the bundled model's next word after "The stock market"
paddle-elmo predict --prefix "The stock market" --top_k 5 --output_json $OUT/predict_bundled.json
# Deploying: int8's check on the bundled model's own held-out sample (the default), then on 1,000
# rt-polarity sentences (the first 500 of each file; the download is Latin-1, a converted copy UTF-8)
paddle-elmo export-inference --model bundled --quantize int8 --output_dir $TMP/int8
cp $TMP/int8/export.json $OUT/int8_bundled_heldout_sample.json
python3 - "$RT" > $TMP/rt1000.txt <<'PY'
import sys
for name in ('pos', 'neg'):
    raw = open(f'{sys.argv[1]}/rt-polarity.{name}', 'rb').read()
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError:
        text = raw.decode('latin-1')
    sys.stdout.write(''.join(text.splitlines(True)[:500]))
PY
paddle-elmo export-inference --model bundled --quantize int8 --verify_file $TMP/rt1000.txt --output_dir $TMP/int8-rt
cp $TMP/int8-rt/export.json $OUT/int8_bundled_rt_polarity_1000.json
rm -rf $TMP
# Install: the size of each documented install (fresh venvs from pip's cache: a few minutes on a loaded
# machine, so not under a minute like the rest; run from the checkout, with pip's cache filled)
python benchmarks/install_sizes.py --output_json $OUT/install_sizes.json
