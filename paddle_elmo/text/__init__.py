"""Text to model input: tokenizers, token and char ids, vocabularies, corpus files, the language
model's batches, word-vector files. Imports only the package's basics, and no Paddle.
"""
