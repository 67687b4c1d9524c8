import resource, subprocess, sys
import numpy as np
a = [np.full((1040 << 20) // 4, 1.0, dtype=np.float32) for _ in range(3)]
del a
child = 'import resource;print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024, open("/proc/self/status").read().split("VmHWM:")[1].split()[0])'
print('parent peak MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print('child ru_maxrss MB, VmHWM kB:', subprocess.run([sys.executable, '-c', child], capture_output=True, text=True).stdout)
