#!/bin/bash
# The memory measurements of this folder, from the checkout's root, on the AMD EPYC (AVX2, MKL path 5,
# 2 cores shared with other jobs: memory does not depend on the load; nothing here is timed).
# Outputs go to raw/. PY: the project's python.
set -e
PY=${PY:-python}
R=benchmarks/results/memory_2026-11-29
export OMP_NUM_THREADS=2
spec() {  # bench_embed.py's embed worker spec: original size, stateless, cache off, 600 sentences, batch $1
  echo '{"kind":"embed","config":"original","stateful":false,"cache":"off","data_file":"../shared/data/rt-polarity/rt-polarity.pos","n_sentences":600,"batch_size":'$1',"threads":2,"device":"cpu","seed":0}'
}

# 1. Why the Intel VM printed 3,531 MB: a process started by fork+exec keeps its parent's peak as ru_maxrss.
$PY $R/inherit.py > $R/raw/inherit.txt
#    bench_embed's parent before it starts its workers: the matmul rate, then STREAM with the Intel VM's
#    array size (4 x 260 MB L3 = 1040 MB) and with this machine's default (4 x 32 MB = 128 MB)
(cd benchmarks && PYTHONPATH=..:. $PY ../$R/parent_peak.py 1040; PYTHONPATH=..:. $PY ../$R/parent_peak.py) > $R/raw/parent_peak.txt

# 2. The embedding's own peak: bench_embed.py's worker run by itself (the figure the benchmark prints
#    now that it reads VmHWM), batches of 64 and 256
for b in 64 256; do $PY benchmarks/bench_embed.py --worker "$(spec $b)" > $R/raw/worker_$(git rev-parse --short HEAD)_$b.txt; done

# 3. Peak per stage, and the levers (stage_peaks.py's variables)
for b in 64 256; do
  $PY $R/stage_peaks.py "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_$b.txt
  PACKS=0 $PY $R/stage_peaks.py "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_nopacks_$b.txt
  PACKS=0 MMAP_MB=32 $PY $R/stage_peaks.py "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_nopacks_mmap32_$b.txt
done
# (the probe runs at the earlier commits were made the same way, checked out at those commits)

# 4. `paddle-elmo embed`'s maximum RSS (its defaults: stateless, word cache on) on an original-size
#    model (bench_embed's random weights, seed 0, exported to bilm-tf files), 600 lines of rt-polarity
$PY benchmarks/bench_embed.py --worker '{"kind":"export","config":"original","output_dir":"/tmp/original","seed":0,"threads":2}'
head -600 ../shared/data/rt-polarity/rt-polarity.pos > /tmp/rt600.txt
for b in 64 256; do
  /usr/bin/time -v $PY -m paddle_elmo embed --options_file /tmp/original/options.json --weight_file /tmp/original/weights.hdf5 \
    --batch_size $b --cpu_threads 2 --no_progress /tmp/rt600.txt /tmp/out$b.hdf5 > $R/raw/time_embed_$(git rev-parse --short HEAD)_$b.txt 2>&1
done

# 5. A smaller gate group changes the outputs' last bits (MKL's packed products depend on the rows a pack is made for)
$PY $R/groups_change_bits.py small 64,1,2 256 > $R/raw/groups_change_bits.txt

# 6. The outputs of step 4 at the parent commit (1da44be: /tmp/before{64,256}.hdf5, made the same way from a
#    checkout of it) and here (/tmp/out{64,256}.hdf5) compared dataset by dataset
for b in 64 256; do $PY -c "
import h5py, numpy as np, sys
with h5py.File('/tmp/before$b.hdf5') as x, h5py.File('/tmp/out$b.hdf5') as y:
    same = sorted(x) == sorted(y) and all(np.array_equal(x[k][()], y[k][()]) for k in x)
    print($b, len(x), 'datasets', 'identical' if same else 'DIFFERENT')"; done > $R/raw/embed_outputs_1da44be_vs_$(git rev-parse --short HEAD).txt

# 7. paddle-elmo embed with both levers that are not in the code (no kept packs, 32 MB mmap threshold)
for b in 64 256; do
  PACKS=0 MMAP_MB=32 /usr/bin/time -v $PY $R/embed_with_levers.py --options_file /tmp/original/options.json \
    --weight_file /tmp/original/weights.hdf5 --batch_size $b --cpu_threads 2 --no_progress /tmp/rt600.txt /tmp/lev$b.hdf5 \
    > $R/raw/time_embed_levers_$(git rev-parse --short HEAD)_$b.txt 2>&1
done
