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
$PY - > $R/raw/inherit.txt <<'EOF'
import resource, subprocess, sys
import numpy as np
a = [np.full((1040 << 20) // 4, 1.0, dtype=np.float32) for _ in range(3)]
del a
child = 'import resource;print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024, open("/proc/self/status").read().split("VmHWM:")[1].split()[0])'
print('parent peak MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print('child ru_maxrss MB, VmHWM kB:', subprocess.run([sys.executable, '-c', child], capture_output=True, text=True).stdout)
EOF
#    bench_embed's parent before it starts its workers: the matmul rate, then STREAM with the Intel VM's
#    array size (4 x 260 MB L3 = 1040 MB) and with this machine's default (4 x 32 MB = 128 MB)
parent_peak() {  # $1: STREAM's array size in MB (none: the machine's default)
(cd benchmarks && PYTHONPATH=..:. $PY - $1 <<'EOF'
"""The peak of bench_embed's parent process before it starts its workers, with STREAM's arrays at the
Intel VM's size (4 x its 260 MB L3 = 1040 MB each) and at this machine's default; and what a worker
it then starts reports as ru_maxrss and as VmHWM."""
import json, resource, sys
import cpu_threads, machine, matmul_rates, stream, worker_runs
array_mb = int(sys.argv[1]) if len(sys.argv) > 1 else None
cpu_threads.set_threads(2)
machine.machine_info()  # as bench_embed: Paddle, the CPU kernels and MKL loaded
import paddle
paddle.set_device('cpu')
matmul_rates.measure_matmul_gflops(4096, 0.1)
after_matmul = machine.peak_rss_mb()
result = stream.measure_stream_gbs(2, array_mb, seconds=0.1)
worker = ("import json, resource, machine; print(json.dumps({'ru_maxrss_mb': resource.getrusage(resource.RUSAGE_SELF)"
          ".ru_maxrss / 1024, 'VmHWM_mb': machine.peak_rss_mb()}))")
print(json.dumps({'stream_array_mb': result['array_mb'], 'parent_peak_after_matmul_mb': after_matmul,
                  'parent_peak_after_stream_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  'worker': worker_runs.run_worker(['-c', worker])}))
EOF
)
}
(parent_peak 1040; parent_peak) > $R/raw/parent_peak.txt

# 2. The embedding's own peak: bench_embed.py's worker run by itself (the figure the benchmark prints
#    now that it reads VmHWM), batches of 64 and 256
for b in 64 256; do $PY benchmarks/bench_embed.py --worker "$(spec $b)" > $R/raw/worker_$(git rev-parse --short HEAD)_$b.txt; done

# 3. Peak per stage, and the levers (benchmarks/profile_memory.py, then this folder's stage_peaks.py).
#    The PACKS=0 variant (no kept LSTM packs) ran with the probe as of 544553c
#    (`git show 544553c:benchmarks/results/memory_2026-11-29/stage_peaks.py`); the packs are gone since.
for b in 64 256; do
  $PY benchmarks/profile_memory.py --spec "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_$b.txt
  MMAP_MB=32 $PY benchmarks/profile_memory.py --spec "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_mmap32_$b.txt
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
$PY - small 64,1,2 256 > $R/raw/groups_change_bits.txt <<'EOF'
"""Do the embeddings change when the inference gate groups are smaller (more kernel calls)?"""
import sys, numpy as np
sys.path.insert(0, 'benchmarks')
import bench_embed, paddle
from paddle_elmo import BiLM, ELMoEmbedder
from paddle_elmo.model import lstm
config = sys.argv[1]; mb = [float(x) for x in sys.argv[2].split(',')]
sentences, _ = bench_embed.read_sentences(bench_embed.DEFAULT_DATA, 600)
sentences = sorted(sentences, key=len)[-int(sys.argv[3]):]
paddle.seed(0)
bilm = BiLM(bench_embed.config_options(config))
outs = []
for m in mb:
    lstm.LstmStack.GATE_BUFFER_MB = int(m)
    e = ELMoEmbedder(bilm=bilm, batch_size=256, token_cache_size=0)
    outs.append(e.encode(sentences))
for m, o in zip(mb[1:], outs[1:]):
    same = all(np.array_equal(a, b) for a, b in zip(outs[0], o))
    diff = max(float(np.abs(a - b).max()) for a, b in zip(outs[0], o))
    print(config, 'GATE_BUFFER_MB', mb[0], 'vs', m, 'identical' if same else 'DIFFERENT', diff)
EOF

# 6. The outputs of step 4 at the parent commit (1da44be: /tmp/before{64,256}.hdf5, made the same way from a
#    checkout of it) and here (/tmp/out{64,256}.hdf5) compared dataset by dataset
for b in 64 256; do $PY -c "
import h5py, numpy as np, sys
with h5py.File('/tmp/before$b.hdf5') as x, h5py.File('/tmp/out$b.hdf5') as y:
    same = sorted(x) == sorted(y) and all(np.array_equal(x[k][()], y[k][()]) for k in x)
    print($b, len(x), 'datasets', 'identical' if same else 'DIFFERENT')"; done > $R/raw/embed_outputs_1da44be_vs_$(git rev-parse --short HEAD).txt

# 7. paddle-elmo embed with the lever that is not in the code (a 32 MB mmap threshold; with PACKS=0 as of 544553c)
for b in 64 256; do
  MMAP_MB=32 /usr/bin/time -v $PY -c "import sys; sys.path.insert(0, 'benchmarks'); from profile_memory import apply_variant; from paddle_elmo.cli import main; apply_variant(); sys.exit(main(['embed', *sys.argv[1:]]))" --options_file /tmp/original/options.json \
    --weight_file /tmp/original/weights.hdf5 --batch_size $b --cpu_threads 2 --no_progress /tmp/rt600.txt /tmp/lev$b.hdf5 \
    > $R/raw/time_embed_levers_$(git rev-parse --short HEAD)_$b.txt 2>&1
done

# 8. (second session) The streamed gate products: the worker, the probe and paddle-elmo embed at the
#    parent (becd48f, a `git archive` of it beside ../shared) and here, and the outputs compared
for b in 64 256; do
  $PY benchmarks/bench_embed.py --worker "$(spec $b)" > $R/raw/worker_$(git rev-parse --short HEAD)_$b.txt
  $PY benchmarks/profile_memory.py --spec "$(spec $b)" > $R/raw/stages_$(git rev-parse --short HEAD)_$b.txt
  /usr/bin/time -v $PY -m paddle_elmo embed --options_file /tmp/original/options.json --weight_file /tmp/original/weights.hdf5 \
    --batch_size $b --cpu_threads 2 --no_progress /tmp/rt600.txt /tmp/out$b.hdf5 > $R/raw/time_embed_$(git rev-parse --short HEAD)_$b.txt 2>&1
done
#    (the same at becd48f gave raw/worker_becd48f_*, raw/time_embed_becd48f_* and /tmp/before*.hdf5; step 6's
#    comparison then wrote raw/embed_outputs_becd48f_vs_ad2301f.txt, with the max abs difference and layer 0)
#    The benchmark's sentences, the 256 longest and the 64 shortest of 600, embedded at each commit and compared:
embed_npz() {  # $1 batch size, $2 output .npz
$PY - $1 $2 <<'PYEOF'
import sys, numpy as np
sys.path.insert(0, 'benchmarks')
import cpu_threads; cpu_threads.set_threads(2)
import bench_embed, paddle
from paddle_elmo import BiLM, ELMoEmbedder
sentences, _ = bench_embed.read_sentences('../shared/data/rt-polarity/rt-polarity.pos', 600)
sentences = sorted(sentences, key=len)[-256:] + sorted(sentences, key=len)[:64]
paddle.seed(0)
e = ELMoEmbedder(bilm=BiLM(bench_embed.config_options('original')), batch_size=int(sys.argv[1]), token_cache_size=0)
np.savez(sys.argv[2], *e.encode(sentences))
PYEOF
}
for b in 64 256; do embed_npz $b /tmp/streamed$b.npz; done  # and at becd48f: /tmp/grouped$b.npz
for b in 256 64; do $PY -c "
import numpy as np
a, b = np.load('/tmp/grouped$b.npz'), np.load('/tmp/streamed$b.npz')
same = all(np.array_equal(a[k], b[k]) for k in a)
print('batch', $b, len(a), 'sentences (the 256 longest and 64 shortest of 600)', 'identical' if same else 'DIFFERENT',
      'max abs diff', max(float(np.abs(a[k] - b[k]).max()) for k in a), 'largest |value|', max(float(np.abs(a[k]).max()) for k in a))"
done > $R/raw/streamed_vs_grouped_bits_$(git rev-parse --short HEAD).txt
