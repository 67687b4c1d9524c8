"""The biLM: ModelConfig and its options.json codec, the pretraining Recipe and presets, the token
input modes, each layer's math, the model, the index plans that skip padding, the CPU kernels
(kernels.cc) and their build. Imports text/ and the basics.
"""
