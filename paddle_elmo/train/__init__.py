"""Pretraining: the softmax and its sampled form, the optimizers, the language model and its
loading, a run's plan (new, resumed, from weights) and the loop. Imports files/ and below.
"""
