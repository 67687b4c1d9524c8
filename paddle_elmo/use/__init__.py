"""Using a model: Elmo and ScalarMix, the embedders (sentences, batches, files), features for the
classifiers, the classifier, prediction. Imports files/ and below, nothing of train/.
"""
