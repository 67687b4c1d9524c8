"""py-spy --native raw stacks of the main thread during train_step: leaf library, and for the
non-MKL leaves the innermost paddle_elmo frame + the innermost phi/paddle symbol."""
import sys, collections, re
lib, where, total = collections.Counter(), collections.Counter(), 0
def libof(f):
    m = re.search(r'\(([^()]*?)\)$', f)
    s = m.group(1) if m else f
    for k in ('mkl', 'iomp', 'elmo_kernels', 'libpython', 'libphi', 'libpaddle', 'libc.so', 'numpy', 'multiarray', 'kernel'):
        if k in s or k in f: return k
    if '.py:' in f: return 'python'
    return s[:40]
for line in open(sys.argv[1]):
    stack, n = line.rsplit(' ', 1); n = int(n)
    frames = stack.split(';')
    if not any('train_step' in f for f in frames): continue
    total += n
    L = libof(frames[-1]); lib[L] += n
    if L in ('mkl',): continue
    py = [f for f in frames if 'paddle_elmo' in f]
    nat = [f for f in frames if ('phi::' in f or 'paddle::' in f or 'egr::' in f)]
    key = (L, re.sub(r' \(.*', '', py[-1]) + ':' + (py[-1].split(':')[-1].rstrip(')') if py else '') if py else '-',
           (nat[-1][:90] if nat else '-'))
    where[key] += n
print('main-thread samples in train_step', total)
for k, v in lib.most_common(): print(f'{100*v/total:5.1f}%  {k}')
print()
for k, v in where.most_common(int(sys.argv[2])): print(f'{100*v/total:5.1f}%  {k}')
