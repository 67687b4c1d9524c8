"""The classifier head's choices that the commands offer as flags (--feature_norm), in a module without
Paddle (classifier.py, the head itself, is Paddle's), so that a command's --help answers in the core
install."""

FEATURE_NORMS = ('batchnorm', 'none')  # how the mean feature vector is normalised (classifier.BowHead)
