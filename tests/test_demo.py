"""The sense demo's probes: none shares a word with the cue lists its sense centroids are built from,
so a sense it gets right comes from the rest of the context, not from a cue word."""
from paddle_elmo.cli import demo


def all_cues(cues):
    return set().union(*(c for senses in cues.values() for c in senses.values()))


def test_no_english_probe_has_a_cue_word_of_any_sense():
    cues = all_cues(demo.CUES)
    for word, sentence, sense in demo.PROBES:
        tokens = sentence.split()
        assert word in tokens and sense in demo.CUES[word], sentence
        assert not cues & set(tokens), (sentence, cues & set(tokens))


def test_no_chinese_probe_contains_a_cue_even_inside_a_longer_word():
    # Raw text (the model's tokenizer splits it): a cue anywhere in it counts, whatever the split.
    cues = all_cues(demo.CUES_ZH)
    for word, sentence, sense in demo.PROBES_ZH:
        assert word in sentence and sense in demo.CUES_ZH[word], sentence
        assert not [c for c in cues if c in sentence], (sentence, [c for c in cues if c in sentence])


def test_each_sense_has_probes():
    for probes, cues in ((demo.PROBES, demo.CUES), (demo.PROBES_ZH, demo.CUES_ZH)):
        assert {(w, s) for w, _, s in probes} == {(w, s) for w, senses in cues.items() for s in senses}
