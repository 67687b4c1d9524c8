import sys, time, numpy as np
sys.path.insert(0, 'benchmarks')
import common; common.set_threads(2)
import profile_pretrain as pp
from paddle_elmo.train.lm import train_step
import paddle
res = {}
for name in ('small', 'bundled'):
    model, opt, batches, config, neg = pp.build(name, 2)
    bilm = model.bilm
    bs = [next(batches) for _ in range(6)]
    chars = [np.concatenate([b['char_ids'], b['char_ids_reverse']]) for b in bs]
    B, T = bs[0]['char_ids'].shape[:2]
    from paddle_elmo.model.packing import distinct_tokens
    def once(c, chunk):
        x = bilm.token_embedding(c, chunk=chunk)
        (x * 0.001).sum().backward()
    times = {'after once': [], 'after per chunk': []}
    for rep in range(5):
        for c in chars:
            n = len(distinct_tokens(c.reshape(-1, c.shape[-1]), bilm.char_encoder.pad_id)[0])
            for label, chunk in (('after once', 2 * B * T), ('after per chunk', n - 1)):
                t = time.perf_counter(); once(c, chunk); times[label].append(time.perf_counter() - t)
    print(name, {k: round(1000 * float(np.median(v)), 1) for k, v in times.items()}, flush=True)
