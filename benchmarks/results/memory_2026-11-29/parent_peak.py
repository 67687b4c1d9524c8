"""The peak of bench_embed's parent process before it starts its workers, with STREAM's arrays at the
Intel VM's size (4 x its 260 MB L3 = 1040 MB each) and at this machine's default; and what a worker
it then starts reports as ru_maxrss and as VmHWM."""
import json, resource, sys
import common, stream
array_mb = int(sys.argv[1]) if len(sys.argv) > 1 else None
common.set_threads(2)
common.machine_info()  # as bench_embed: Paddle, the CPU kernels and MKL loaded
import paddle
paddle.set_device('cpu')
common.measure_matmul_gflops(4096, 0.1)
after_matmul = common.peak_rss_mb()
result = stream.measure_stream_gbs(2, array_mb, seconds=0.1)
worker = ("import json, resource, common; print(json.dumps({'ru_maxrss_mb': resource.getrusage(resource.RUSAGE_SELF)"
          ".ru_maxrss / 1024, 'VmHWM_mb': common.peak_rss_mb()}))")
print(json.dumps({'stream_array_mb': result['array_mb'], 'parent_peak_after_matmul_mb': after_matmul,
                  'parent_peak_after_stream_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  'worker': common.run_worker(['-c', worker])}))
