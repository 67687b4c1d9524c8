"""`paddle-elmo embed ARGS` with the two levers not in the code: no kept LSTM packs (PACKS=0) and
keep_freed_memory's mmap threshold at MMAP_MB (as stage_peaks.py's variables), for /usr/bin/time -v.

    PACKS=0 MMAP_MB=32 python embed_with_levers.py INPUT OUTPUT --options_file O --weight_file W ...
"""
import functools
import os
import sys

from paddle_elmo import runtime
from paddle_elmo.model import lstm

if os.environ.get('PACKS') == '0':
    def no_packs(self, max_rows, keep=True):
        self._packs = None
        return None
    lstm.LstmLayer.packed_weights = no_packs
if os.environ.get('MMAP_MB'):
    runtime.keep_freed_memory = functools.partial(runtime.keep_freed_memory, int(os.environ['MMAP_MB']))

from paddle_elmo.cli import main  # noqa: E402

sys.exit(main(['embed', *sys.argv[1:]]))
