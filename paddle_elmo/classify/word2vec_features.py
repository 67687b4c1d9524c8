"""word2vec's token features for the classifier: a dataset's tokens looked up in word vectors
(`lookup_table`: a small table of the words the sentences use, and each sentence's row ids) and the
frozen vectors of a batch (`Word2VecFeatures`), word2vec_base.py's features and those finetune
concatenates to ELMo's.

Token lookup: the token itself, else its lower-case, Capitalised or UPPER-case form (rt-polarity
is lower-cased; the corpus and GoogleNews are not).
"""
import numpy as np

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_elmo.classify.choices import OOV_MODES
from paddle_elmo.fileio import InputError

UNK = 0  # row of the lookup table shared by OOV tokens; word vectors start at row 1 (features are packed: no padding row)


def vector_key(token, kv):
    """The key of `token` in `kv`: itself, else lower / Capitalised / UPPER form; None if absent."""
    for candidate in (token, token.lower(), token.capitalize(), token.upper()):
        if candidate in kv.key_to_index:
            return candidate
    return None


def lookup_table(sentences, kv, oov='unk'):
    """-> (table float32 [1 + known words, dim], token ids per sentence (int64 arrays), OOV stats).

    Only the words the sentences use are kept, so the table is small whatever the vocabulary.
    Row UNK is zero; with oov='unk' OOV tokens get id UNK, with 'skip' they are left out.
    """
    if oov not in OOV_MODES:
        raise InputError(f'oov must be one of {OOV_MODES}, got {oov!r}')
    rows, keys, ids = {}, [], []
    n_tokens = n_oov = n_empty = 0
    oov_types = set()
    for sentence in sentences:
        row_ids = []
        for token in sentence:
            key = vector_key(token, kv)
            if key is None:
                n_oov += 1
                oov_types.add(token)
                if oov == 'unk':
                    row_ids.append(UNK)
                continue
            if key not in rows:
                rows[key] = UNK + 1 + len(keys)
                keys.append(key)
            row_ids.append(rows[key])
        n_tokens += len(sentence)
        n_empty += all(i == UNK for i in row_ids)  # no known token (an empty list counts too)
        ids.append(np.array(row_ids, dtype=np.int64))
    table = np.zeros((UNK + 1 + len(keys), kv.vector_size), dtype=np.float32)
    if keys:
        table[UNK + 1:] = kv[keys]
    stats = {'tokens': n_tokens, 'oov_tokens': n_oov, 'oov_rate': n_oov / max(n_tokens, 1),
             'oov_types': len(oov_types), 'sentences_without_known_tokens': int(n_empty),
             'known_types': len(keys)}
    return table, ids, stats


class Word2VecFeatures(nn.Layer):
    """Sentence indices -> (frozen word vectors [tokens, dim] packed sentence after sentence,
    lengths [batch]): a features module of head.SentenceClassifier."""

    def __init__(self, table, token_ids, oov='unk'):
        super().__init__()
        self.register_buffer('table', paddle.to_tensor(table), persistable=False)
        self.token_ids = token_ids
        self.dim = table.shape[1]
        # One learned vector for all OOV tokens; zero at the start, so it begins as "no information".
        self.unk = self.create_parameter([self.dim], default_initializer=nn.initializer.Constant(0.0)) \
            if oov == 'unk' else None

    def forward(self, indices):
        rows = [self.token_ids[i] for i in indices]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        ids = paddle.to_tensor(np.concatenate(rows) if rows else np.zeros(0, np.int64))
        x = F.embedding(ids, self.table)  # [tokens, dim]
        if self.unk is not None:
            x = x + (ids == UNK).astype(x.dtype).unsqueeze(-1) * self.unk
        return x, lengths
