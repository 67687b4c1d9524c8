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
