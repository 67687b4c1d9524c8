"""The design card's `dataset.py`, kept for checkouts: text to tokens, char and word ids,
vocabularies, corpus files and the language model's batches. Each lives in a module of the package
`paddle_elmo` (tokenizers, token_ids, vocabulary, corpus, batches); new code imports from there.
"""
from paddle_elmo.text.corpus import COUNTS_CACHE_NAME, count_tokens  # noqa: F401
from paddle_elmo.text.batches import (EVAL_BATCH_SIZE, EVAL_UNROLL_STEPS, LMStream, SentenceSource,  # noqa: F401
                                      iter_eval_batches, target_statistics)
from paddle_elmo.text.token_ids import (BOS_TOKEN, EOS_TOKEN, N_CHARACTERS, CharMapper, InputMapper,  # noqa: F401
                                        batch_to_char_ids, token_to_char_ids, tokens_to_char_ids)
from paddle_elmo.text.tokenizers import TOKENIZERS, as_token_lists, get_tokenizer, model_tokenizer  # noqa: F401
from paddle_elmo.text.vocabulary import (SPECIAL_TOKENS, UNK_TOKEN, Vocabulary, build_vocabulary,  # noqa: F401
                                         count_words, read_vocabulary_file, write_vocabulary)
