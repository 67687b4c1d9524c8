"""A model's files: options.json, recipe.json and vocab.txt, bilm-tf's hdf5 layout, our checkpoints,
models by name, resolve_model and its LoadedModel. Imports model/, text/ and the basics.
"""
