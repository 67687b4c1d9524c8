import sys, collections, re
f = sys.argv[1]
leafc = collections.Counter(); tot = 0
yin = yout = 0; youtc = collections.Counter(); iompc = collections.Counter()
for line in open(f):
    stack, n = line.rsplit(' ', 1); n = int(n); fr = stack.split(';')
    if not any('train_step' in x for x in fr): continue
    tot += n
    leaf = fr[-1]
    if 'libc.so' in leaf or 'sched_yield' in leaf:
        name = re.sub(r'0x[0-9a-f]+', 'ADDR', leaf)
        # parent context: first non-libc frame from the leaf upwards
        par = next((x for x in reversed(fr[:-1]) if 'libc.so' not in x), '-')
        key = (name[:40], re.sub(r'0x[0-9a-f]+', 'ADDR', par)[:70])
        leafc[key] += n
        if 'sched_yield' in leaf:
            if any('libmklml' in x for x in fr): yin += n
            else:
                youtc[re.sub(r'0x[0-9a-f]+', 'ADDR', par)[:70]] += n; yout += n
    if 'iomp' in leaf:
        inm = any('libmklml' in x for x in fr)
        iompc['in MKL' if inm else 'outside MKL'] += n
print(f, 'total', tot)
print(f'yields inside MKL {100*yin/tot:.1f}%, outside {100*yout/tot:.1f}%')
for k, v in youtc.most_common(12): print(f'   out {100*v/tot:4.1f}% {k}')
print('iomp leaves', {k: f'{100*v/tot:.1f}%' for k, v in iompc.items()})
print('libc leaves by (leaf, parent):')
for k, v in leafc.most_common(25): print(f'  {100*v/tot:4.1f}% {k}')
