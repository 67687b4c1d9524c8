"""Runs `paddle-elmo pretrain` (its main()) and records, for the tests, what this rank read and its final weights.

Used as the launched script in test_pretrain.py (not a test itself): writes
$ELMO_TEST_OUT/seen.RANK.json (sentences the rank's stream read) and weights.RANK.pdparams.
"""
import json
import os
import sys

import paddle

from paddle_elmo.text import batches
from paddle_elmo.train import start
from paddle_elmo.cli import pretrain

seen, models = [], []
_next_sentence = batches.SentenceSource.next_sentence
_LanguageModel = start.LanguageModel


def recording_next_sentence(self):
    sentence = _next_sentence(self)
    seen.append(' '.join(sentence))
    return sentence


def recording_model(*args, **kwargs):
    models.append(_LanguageModel(*args, **kwargs))
    return models[-1]


batches.SentenceSource.next_sentence = recording_next_sentence
start.LanguageModel = recording_model
if __name__ == '__main__':
    code = pretrain.main()
    rank, out = paddle.distributed.get_rank(), os.environ['ELMO_TEST_OUT']
    with open(os.path.join(out, f'seen.{rank}.json'), 'w') as f:
        json.dump(seen, f)
    paddle.save(models[0].state_dict(), os.path.join(out, f'weights.{rank}.pdparams'))
    sys.exit(code)
