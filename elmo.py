"""The design card's `elmo.py`, kept for checkouts: `from elmo import ELMoEmbedder, Elmo, ScalarMix, BiLM`.

The library is the package `paddle_elmo` (`pip install .`); new code imports from it:
`from paddle_elmo import ELMoEmbedder`.
"""
from paddle_elmo import *  # noqa: F401,F403
from paddle_elmo import __all__, __version__  # noqa: F401
