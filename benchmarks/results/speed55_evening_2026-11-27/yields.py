import collections,re,sys
ctx=collections.Counter(); tot=0; ys=0
for line in open(sys.argv[1]):
    stack,n=line.rsplit(' ',1); n=int(n); fr=stack.split(';')
    if not any('train_step' in f for f in fr): continue
    tot+=n
    if 'sched_yield' not in fr[-1]: continue
    ys+=n
    py=[f for f in fr if 'paddle_elmo' in f or 'kernels.cc' in f]
    nat=[f for f in fr if re.search(r'phi::|mkl|Kernel|Lstm|MaxOver|Sampled|Highway|Adagrad|Column', f)]
    ctx[(re.sub(r' \(/work/main/',' (',py[-1])[:80] if py else '-', nat[-1][:70] if nat else '-')]+=n
print('yield share of main-thread train_step samples', ys, tot, f'{100*ys/tot:.1f}%')
for k,v in ctx.most_common(25): print(f'{100*v/tot:5.1f}%', k)
