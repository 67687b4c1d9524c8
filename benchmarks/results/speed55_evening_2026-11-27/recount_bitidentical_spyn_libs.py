import sys, collections, re
for f in sys.argv[1:]:
    phi = collections.Counter(); ker = collections.Counter(); pyl = collections.Counter(); tot = 0
    for line in open(f):
        stack, n = line.rsplit(' ', 1); n = int(n); fr = stack.split(';')
        if not any('train_step' in x for x in fr): continue
        tot += n
        leaf = fr[-1]
        if 'libphi' in leaf:
            sym = next((x for x in reversed(fr) if re.search(r'phi::\w+Kernel|phi::funcs|Functor|phi::\w+Grad', x)), leaf)
            phi[re.sub(r'<.*', '', sym)[:60]] += n
        elif 'kernels.cc' in leaf:
            fn = next((x for x in reversed(fr) if re.match(r'(LstmForward|LstmBackward|MaxOverPositions\w*|SampledSoftmax\w*|Highway\w*|Adagrad\w*|Dropout|ColumnSums|AddBias)\b', x.split(' ')[0])), leaf)
            ker[fn.split(' ')[0]] += n
        elif re.search(r'\.py:\d+\)$', leaf) or 'libpython' in leaf:
            pyl['python'] += n
    print(f, tot)
    print(' libphi by kernel:'); [print(f'   {100*v/tot:4.2f}% {k}') for k, v in phi.most_common(16)]
    print(' kernels.cc leaves by function:'); [print(f'   {100*v/tot:4.2f}% {k}') for k, v in ker.most_common(16)]
