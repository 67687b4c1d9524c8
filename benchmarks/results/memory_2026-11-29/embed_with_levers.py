"""`paddle-elmo embed ARGS` with the two levers not in the code: no kept LSTM packs (PACKS=0) and
keep_freed_memory's mmap threshold at MMAP_MB (stage_peaks.py's variables), for /usr/bin/time -v.

    PACKS=0 MMAP_MB=32 python embed_with_levers.py INPUT OUTPUT --options_file O --weight_file W ...
"""
import sys

from stage_peaks import apply_variant
from paddle_elmo.cli import main

apply_variant()
sys.exit(main(['embed', *sys.argv[1:]]))
