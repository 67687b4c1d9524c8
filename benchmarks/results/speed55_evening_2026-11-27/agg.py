"""Aggregate py-spy raw stacks: samples within train_step, by innermost paddle_elmo frame."""
import sys, collections, re
by_line, by_fn, total = collections.Counter(), collections.Counter(), 0
for line in open(sys.argv[1]):
    stack, n = line.rsplit(' ', 1); n = int(n)
    frames = stack.split(';')
    if not any('train_step' in f for f in frames): continue
    total += n
    inner = [f for f in frames if 'paddle_elmo' in f]
    key = inner[-1] if inner else 'none'
    by_line[re.sub(r'\(/work/main/', '(', key)] += n
print('samples in train_step', total)
for k, v in by_line.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    print(f'{100*v/total:5.1f}%  {k}')
