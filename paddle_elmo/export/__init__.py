"""Exports: the biLM in static ops, what an export holds, writing one (Paddle Inference, ONNX,
int8), its directory and its checks, and InferenceEmbedder. Imports use/ and below.
"""
