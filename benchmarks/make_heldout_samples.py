"""Write each bundled model's held-out sample (heldout_sample.txt beside its weights): real sentences of
its own corpus's held-out file that may be shipped, on which `export-inference --quantize int8`
checks that model by default (export_checks.default_verify_file). Deterministic.

    python benchmarks/make_heldout_samples.py --wikipedia_git /path/to/wikiVisual/.git

English (paddle_elmo/pretrained/): the first N sentences of lm-corpus's heldout.txt, in file order,
that come from its Wikipedia source (CC BY-SA 3.0, shippable with attribution); the IMDB, Reuters
and BBC sentences are left out (research terms: not to be redistributed). A sentence is
Wikipedia's when its letters and digits appear in the text of an article of the WikiExtractor files
lm-corpus read (jason-feng/wikiVisual at WIKI_COMMIT, text/AA/wiki_00 ... wiki_54); the articles
the sample draws on are printed with their URLs for the card's notice (pretrained/NOTICE.txt).
Chinese (paddle_elmo/pretrained_zh/): the first N lines of zh-open's heldout.txt (every source's
terms allow shipping it with the attribution of pretrained_zh/NOTICE.txt).
"""
import argparse
import os
import re
import subprocess

import places

WIKI_COMMIT = '1c0fac92f29f17c1603bfffbe864e0dfdff66897'
WIKI_FILES = [f'text/AA/wiki_{i:02d}' for i in range(55)]  # lm-corpus README: the first 55 of 400 files
DOC = re.compile(r'<doc id="(\d+)" url="([^"]+)" title="([^"]*)">\n(.*?)</doc>', re.S)
ZH_OPEN = os.path.join(places.SHARED, 'data', 'zh-open')
SAMPLE_FILE = 'heldout_sample.txt'


def letters(text):
    """Lower-case letters and digits only: a tokenized sentence and its raw source text compare equal."""
    return re.sub(r'[^0-9a-z]', '', text.lower())


def wikipedia_articles(git_dir):
    """-> [(url, title, text)] of every article of WIKI_FILES at WIKI_COMMIT."""
    articles = []
    for path in WIKI_FILES:
        text = subprocess.run(['git', '--git-dir', git_dir, 'show', f'{WIKI_COMMIT}:{path}'], check=True,
                              capture_output=True, text=True).stdout
        articles += [(m.group(2), m.group(3), m.group(4)) for m in DOC.finditer(text)]
    return articles


def wikipedia_sentences(heldout, articles, n):
    """The first n lines of `heldout` found in an article -> (lines, [(url, title)] of their articles).
    Only articles two of whose sentences are held-out lines are searched (held-out documents are whole)."""
    keys = {letters(line) for line in heldout}
    held = [a for a in articles if sum(len(letters(s)) > 30 and letters(s) in keys
                                       for s in re.split(r'(?<=[.!?])\s+', a[2])) >= 2]
    texts = [letters(a[2]) for a in held]
    chosen, sources = [], {}
    for line in heldout:
        key = letters(line)
        found = next((i for i, t in enumerate(texts) if len(key) > 20 and key in t), None)
        if found is not None:
            chosen.append(line)
            sources.setdefault(found, held[found][:2])
            if len(chosen) == n:
                break
    return chosen, [sources[i] for i in sorted(sources, key=lambda i: int(held[i][0].split('=')[-1]))]


def read_lines(path):
    with open(path, encoding='utf-8') as f:
        return [line.rstrip('\n') for line in f]


def write_lines(lines, path):
    with open(path, 'w', encoding='utf-8') as f:
        f.writelines(line + '\n' for line in lines)
    print(f'wrote {path}: {len(lines)} sentences')


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--wikipedia_git', required=True, help='a clone of jason-feng/wikiVisual holding WIKI_COMMIT')
    p.add_argument('--n', type=int, default=250, help='sentences per sample (export-inference needs >= 200)')
    a = p.parse_args()
    package = os.path.join(places.ROOT, 'paddle_elmo')
    english, sources = wikipedia_sentences(read_lines(os.path.join(places.LM_CORPUS, 'heldout.txt')),
                                           wikipedia_articles(a.wikipedia_git), a.n)
    write_lines(english, os.path.join(package, 'pretrained', SAMPLE_FILE))
    print(f'from {len(sources)} Wikipedia articles:')
    for url, title in sources:
        print(f'  {title} <{url.replace("http://", "https://")}>')
    write_lines(read_lines(os.path.join(ZH_OPEN, 'heldout.txt'))[:a.n], os.path.join(package, 'pretrained_zh',
                                                                                     SAMPLE_FILE))


if __name__ == '__main__':
    main()
