#!/usr/bin/env bash
# A separate venv with AllenNLP 2.10.1's ELMo on a CPU torch, only to time the reference next to us
# (benchmarks/allennlp_worker.py). Nothing of it is committed but this script; the venv lives outside
# the repo. Idempotent: run it again to repair or confirm.
#
#   bash benchmarks/setup_allennlp.sh [VENV]      # default: ../allennlp-venv beside the repo
#
# allennlp 2.10.1 pins torch<1.13 (no Python 3.11 wheels), so everything goes in with --no-deps:
# torch 2.13.0 (CPU wheel; plain `torch` from PyPI is the multi-GB CUDA build), then exactly what
# `from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids` imports. `import allennlp` itself loads
# spacy and transformers, allennlp.data loads torchvision, and allennlp.common loads cached_path,
# whose import needs boto3 and google-cloud-storage. torchvision 0.16.2: PyPI's builds are CUDA builds
# whose compiled ops cannot load on a CPU torch; 0.16's import tolerates that (0.28/0.29's do not),
# and ELMo never calls it. transformers 4.25.1: allennlp wants <4.21, but those need tokenizers<0.13,
# which has no Python 3.11 wheel; 4.25 takes tokenizers 0.13.3, which has one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/../allennlp-venv}"

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
VENV="$(cd "$VENV" && pwd)"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check --quiet --only-binary=:all:)

if ! "$PY" -c 'import torch' 2>/dev/null; then
  url=$("$PY" -m pip install --disable-pip-version-check --quiet --dry-run --no-deps --report - 'torch==2.13.0' |
        "$PY" -c 'import json, sys; print(json.load(sys.stdin)["install"][0]["download_info"]["url"])')
  case "$url" in
    *+cpu*|*%2Bcpu*|*%2bcpu*) ;;
    *) echo "setup_allennlp.sh: no CPU wheel of torch 2.13.0 here ($url); not installing the CUDA build" >&2
       exit 1 ;;
  esac
fi
"${PIP[@]}" 'torch==2.13.0'

"${PIP[@]}" --no-deps \
  allennlp==2.10.1 numpy==2.4.6 h5py==3.16.0 torchvision==0.16.2 pillow==13.0.0 \
  transformers==4.25.1 tokenizers==0.13.3 huggingface-hub==0.10.1 \
  packaging==26.3 PyYAML==6.0.3 regex==2026.11.15 tqdm==4.70.1 \
  requests==2.34.2 urllib3==2.8.0 idna==3.20 charset-normalizer==3.5.2 certifi==2026.10.18 \
  spacy==3.8.16 thinc==8.3.14 blis==1.3.4 cymem==2.0.16 preshed==3.0.15 murmurhash==1.0.16 \
  srsly==2.5.6 catalogue==2.0.10 confection==1.3.4 wasabi==1.1.3 weasel==1.0.1 httpx==0.28.1 \
  pydantic==2.14.3 pydantic_core==2.50.4 typing-inspection==0.4.5 annotated-types==0.8.0 \
  typer==0.29.2 click==8.5.1 shellingham==1.5.4 annotated-doc==0.0.7 \
  cached-path==1.1.6 rich==12.6.0 boto3==1.44.5 botocore==1.44.5 s3transfer==0.19.3 \
  jmespath==1.1.0 python-dateutil==2.9.0.post0 six==1.17.0 \
  google-cloud-storage==2.19.0 google-cloud-core==2.8.0 google-api-core==2.44.0 \
  google-auth==2.62.2 googleapis-common-protos==1.76.0 protobuf==7.36.2 \
  google-resumable-media==2.11.0 cryptography==50.0.2 cffi==2.1.1 \
  lmdb==3.0.0 dill==0.4.1 base58==2.1.1 more-itertools==11.2.1
# fairscale (imported by allennlp.nn) is published as a source archive only.
"$PY" -m pip install --disable-pip-version-check --quiet --no-deps fairscale==0.4.13

"$PY" -W ignore -c 'from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids
import allennlp, torch; print("allennlp", allennlp.__version__, "torch", torch.__version__)'
echo "run: $PY $ROOT/benchmarks/allennlp_worker.py --help"
