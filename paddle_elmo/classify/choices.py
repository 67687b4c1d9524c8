"""The classifiers' choices that the commands offer as flags (--feature_norm, --oov), in a module
without Paddle (the head and the features are Paddle's), so that a command's --help answers in the
core install."""

FEATURE_NORMS = ('batchnorm', 'none')  # how the mean feature vector is normalised (head.BowHead)
OOV_MODES = ('unk', 'skip')  # what word2vec features do with a token the vectors lack (word2vec_features.lookup_table)
