"""Write the demo's sample corpus (our own templated sentences), deterministic.

    python demo/make_corpus.py   # -> demo/sample_train.txt, demo/sample_heldout.txt

Ambiguous words (bank, bat, spring, play, light) appear in two senses each, so the demo can show
that ELMo gives the same word different vectors in different contexts.
"""
import itertools
import os
import random

SLOTS = {
    'person': ['the fisherman', 'my uncle', 'a young girl', 'the old farmer', 'his sister', 'the teacher',
               'our neighbour', 'a tired hiker', 'the banker', 'my friend', 'the children', 'a tourist'],
    'water': ['river', 'stream', 'lake', 'canal', 'creek'],
    'money': ['salary', 'savings', 'cheque', 'cash', 'loan payment', 'pension'],
    'day': ['monday', 'friday', 'the weekend', 'tuesday morning', 'payday'],
    'animal': ['owl', 'fox', 'moth', 'bat', 'heron'],
    'sport': ['cricket', 'baseball', 'softball'],
    'instrument': ['piano', 'guitar', 'violin', 'drums', 'flute'],
    'game': ['football', 'chess', 'tennis', 'cards', 'hockey'],
    'season_thing': ['flowers', 'blossoms', 'daffodils', 'green leaves', 'lambs'],
}

TEMPLATES = [
    # bank: river side
    '{person} sat on the grassy bank of the {water} .',
    '{person} walked along the muddy bank and watched the {water} .',
    'the boat drifted toward the far bank of the {water} .',
    'reeds grow thick on the bank where the {water} bends .',
    'after the flood the {water} burst its bank near the village .',
    # bank: money
    '{person} deposited the {money} at the bank on {day} .',
    'the bank raised its interest rates again on {day} .',
    '{person} asked the bank for a loan to buy a house .',
    'the bank refused to cash the {money} without a signature .',
    '{person} opened a savings account at the bank .',
    # bat: animal vs sport
    'at dusk a bat flew out of the cave and hunted insects .',
    'the bat hung upside down from the roof of the barn .',
    '{person} saw a bat and an {animal} near the old tower .',
    '{person} swung the bat and hit the ball over the fence in {sport} .',
    'the {sport} player bought a new bat made of willow .',
    '{person} dropped the bat and ran toward first base .',
    # spring: season vs water source
    'in spring the {season_thing} appear all over the meadow .',
    '{person} loves the warm days of early spring .',
    'the {season_thing} come back every spring after the cold winter .',
    '{person} drank cold water from a spring in the hills .',
    'the village gets its water from a spring under the rocks .',
    'a clear spring feeds the {water} below the mountain .',
    # play: music vs games
    '{person} likes to play the {instrument} after dinner .',
    '{person} will play the {instrument} at the concert on {day} .',
    '{person} wants to play {game} with the children on {day} .',
    'the teams play {game} in the park every {day} .',
    # light: lamp vs weight
    '{person} turned on the light because the room was dark .',
    'the light from the window filled the kitchen .',
    'the bag was light enough for {person} to carry .',
    '{person} packed a light jacket for the trip .',
]


def expand(template, rng, n):
    names = [name for _, name, _, _ in __import__('string').Formatter().parse(template) if name]
    choices = [SLOTS[name] for name in names]
    combos = list(itertools.product(*choices))
    rng.shuffle(combos)
    return [template.format(**dict(zip(names, c))) for c in combos[:n]]


def main():
    rng = random.Random(1234)
    sentences = sorted({s for t in TEMPLATES for s in expand(t, rng, 60)})
    rng.shuffle(sentences)
    n_heldout = len(sentences) // 20
    here = os.path.dirname(os.path.abspath(__file__))
    for name, part in (('sample_heldout.txt', sentences[:n_heldout]), ('sample_train.txt', sentences[n_heldout:])):
        with open(os.path.join(here, name), 'w', encoding='utf-8') as f:
            f.write('\n'.join(part) + '\n')
        print(f'{name}: {len(part)} sentences')


if __name__ == '__main__':
    main()
