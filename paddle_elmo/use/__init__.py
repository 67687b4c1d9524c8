"""Using a model: Elmo and ScalarMix, the embedders (sentences, batches, files), prediction. Imports
files/ and below, nothing of train/; the classifiers built on it are classify/'s.
"""
