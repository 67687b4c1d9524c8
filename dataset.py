"""The design card's `dataset.py`, kept for checkouts: text to tokens, char ids, vocabularies and the
language model's batch streams. They live in the package `paddle_elmo`.
"""
from paddle_elmo.dataset import *  # noqa: F401,F403
