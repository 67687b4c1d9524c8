"""The classifier protocol that `paddle-elmo finetune` (ELMo features) and `paddle-elmo word2vec`
(word2vec features) share, so that the two accuracies they print are comparable: the labelled
sentences and their folds (`data`), the head (`head`), training and cross-validation (`training`),
the results (`report`), and the token features the head reads (`elmo_features`, `layer_cache`,
`word2vec_features`). Above use/: imports use/ and below, nothing of train/ or export/.
"""
