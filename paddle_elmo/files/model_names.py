"""Models by name: the one table of the models a name stands for (`MODELS`), and the local files of
a name (`model_files`): the packaged ones from the package, AllenNLP's releases from the cache
directory, downloaded there once.

    model_files('small')   # -> (options.json, weights.hdf5), downloaded on first use
    ELMoEmbedder('small'); paddle-elmo embed IN OUT --model small; pretrain --init_from_weights small

A release downloads into `$PADDLE_ELMO_CACHE/models/elmo/` under its path on AllenNLP's server
(cache.py: the cache root and its default) with pooch, each file to a temporary name first and
renamed when complete, so that a killed or failed download leaves no file under a model's name
(and a failed one no directory it made empty): the pair is used when both names exist, and then
no network call is made. A failed download is a runtime failure (NetworkError, an OSError: exit
code 1 in the commands), not the user's input. Files put there by hand load the same way.
`PADDLE_ELMO_MODELS_URL` replaces the base URL up to and including `models/elmo/` (a mirror, or a
local server in the tests); the rest of each path stays. ELMoForManyLangs' releases (`efml-<language>`)
download as one zip each from the NLPL vectors repository (`PADDLE_ELMO_NLPL_URL` replaces its base),
unpacked once into `$PADDLE_ELMO_CACHE/models/efml/<NLPL id>/`.
"""
import logging
import os
from dataclasses import dataclass
from typing import Optional, Tuple

from paddle_elmo.cache import cache_dir, no_empty_directories_on_failure
from paddle_elmo.fileio import InputError, NetworkError
from paddle_elmo.logs import show_progress
from paddle_elmo.files.run_configs import OPTIONS_FILE, WEIGHTS_FILE

log = logging.getLogger(__name__)

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# AllenNLP's bucket. The paths below are the ones AllenNLP gives; its website lists them under the
# path-style host https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/, its later code and
# configs under this virtual-hosted one: the same bucket, the same keys.
MODELS_URL = 'https://allennlp.s3.amazonaws.com/models/elmo/'
MODELS_URL_VAR = 'PADDLE_ELMO_MODELS_URL'
# ELMoForManyLangs' releases (HIT-SCIR/ELMoForManyLangs, MIT licence) on the NLPL vectors repository,
# by the ids its README lists (commit b3de5f1); NLPL_URL_VAR replaces this base (a mirror, the tests).
NLPL_URL = 'http://vectors.nlpl.eu/repository/11/'
NLPL_URL_VAR = 'PADDLE_ELMO_NLPL_URL'
EFML_SOURCE = ('HIT-SCIR/ELMoForManyLangs README.md (commit b3de5f1), NLPL vectors repository id {id}; the '
               'terms of use are the publisher\'s')
# (name suffix, language, NLPL id, tokenizer): jieba for Chinese, moses for English, whitespace elsewhere
# (we have no segmenter for Japanese: a Japanese sentence without spaces would be one token).
EFML_RELEASES = (
    ('ar', 'Arabic', 136), ('bg', 'Bulgarian', 137), ('ca', 'Catalan', 138), ('cs', 'Czech', 139),
    ('cu', 'Old Church Slavonic', 140), ('da', 'Danish', 141), ('de', 'German', 142), ('el', 'Greek', 143),
    ('en', 'English', 144), ('es', 'Spanish', 145), ('et', 'Estonian', 146), ('eu', 'Basque', 147),
    ('fa', 'Persian', 148), ('fi', 'Finnish', 149), ('fr', 'French', 150), ('ga', 'Irish', 151),
    ('gl', 'Galician', 152), ('grc', 'Ancient Greek', 153), ('he', 'Hebrew', 154), ('hi', 'Hindi', 155),
    ('hr', 'Croatian', 156), ('hu', 'Hungarian', 157), ('id', 'Indonesian', 158), ('it', 'Italian', 159),
    ('ja', 'Japanese', 160), ('ko', 'Korean', 161), ('la', 'Latin', 162), ('lv', 'Latvian', 163),
    ('nl', 'Dutch', 164), ('nb', 'Norwegian Bokmål', 165), ('nn', 'Norwegian Nynorsk', 166), ('pl', 'Polish', 167),
    ('pt', 'Portuguese', 168), ('ro', 'Romanian', 169), ('ru', 'Russian', 170), ('sk', 'Slovak', 171),
    ('sl', 'Slovene', 172), ('sv', 'Swedish', 173), ('tr', 'Turkish', 174), ('ug', 'Uyghur', 175),
    ('uk', 'Ukrainian', 176), ('ur', 'Urdu', 177), ('vi', 'Vietnamese', 178), ('zh', 'Chinese (Traditional)', 179),
)
EFML_TOKENIZERS = {'zh': 'jieba', 'en': 'moses'}
ALLENNLP_PAGE = ('allenai/allennlp-website elmo.html (https://allennlp.org/elmo, "Pre-trained ELMo Models", '
                 'read at commit 04d542e9)')


@dataclass(frozen=True)
class NamedModel:
    """One row of the table.

    tokenizer: how raw text becomes its tokens (tokenizers.py's names; `moses` is the 1B Word /
        Moses tokenization the English models were trained on). A packaged model also records it
        in its options.json; AllenNLP's files record none, so this row is where theirs is kept.
    package_dir: a packaged model's directory inside the package (options.json + weights.hdf5).
    files: a release's (options, weights) paths under MODELS_URL, AllenNLP's names unchanged.
    archive: an ELMoForManyLangs release's zip under NLPL_URL (its NLPL repository id), unpacked
        once into the cache as the model directory efml_model.py reads.
    source: where the files, and for a release its URL and file names, come from.
    """
    name: str
    tokenizer: str
    about: str
    source: str
    package_dir: Optional[str] = None
    files: Optional[Tuple[str, str]] = None
    archive: Optional[str] = None


def _release(release):
    """AllenNLP's (options, weights) paths of a release: DIR/elmo_DIR_options.json, DIR/elmo_DIR_weights.hdf5."""
    return f'{release}/elmo_{release}_options.json', f'{release}/elmo_{release}_weights.hdf5'


MODELS = {m.name: m for m in (
    NamedModel('bundled', 'moses', 'English word + char biLM with its softmax, LSTM 256, projection 128, 33.6 MB; '
               'ships with the package', 'paddle_elmo/pretrained/ (its card: README.md there)', package_dir='pretrained'),
    # Trained on zh-open (laws, government reports, Dynamics 365 and Python documentation in Chinese),
    # whose terms allow shipping it with its attribution (NOTICE.txt beside it); not on zh-corpus,
    # whose terms forbid shipping a model trained on it.
    NamedModel('bundled-zh', 'jieba', 'Chinese word + char biLM with its softmax, LSTM 256, projection 128, 29.7 MB, '
               'trained on zh-open; ships with the package (raw text needs the [zh] extra: jieba)',
               'paddle_elmo/pretrained_zh/ (its card: README.md there)', package_dir='pretrained_zh'),
    # No sha256 is given: AllenNLP publishes no hashes of these files (not on its page, in its code
    # or configs), so pooch's known_hash is None and completeness rests on the transfer's length.
    NamedModel('small', 'moses', "AllenNLP's Small: LSTM 1024, output 128, 1 highway, 13.6M parameters, 1B Word",
               ALLENNLP_PAGE, files=_release('2x1024_128_2048cnn_1xhighway')),
    NamedModel('medium', 'moses', "AllenNLP's Medium: LSTM 2048, output 256, 1 highway, 28.0M parameters, 1B Word",
               ALLENNLP_PAGE, files=_release('2x2048_256_2048cnn_1xhighway')),
    NamedModel('original', 'moses', "the paper's model: LSTM 4096, output 512, 2 highways, 93.6M parameters, 1B Word",
               ALLENNLP_PAGE + '; allenai/allennlp allennlp/commands/elmo.py DEFAULT_OPTIONS_FILE / '
               'DEFAULT_WEIGHT_FILE (commit bbbae60e)', files=_release('2x4096_512_2048cnn_2xhighway')),
    NamedModel('original-5.5b', 'moses', "the original trained on 5.5B tokens (Wikipedia + WMT 2008-2012 news), "
               "93.6M parameters; AllenNLP's recommended default", ALLENNLP_PAGE + '; allenai/allennlp-models '
               'training_config/structured_prediction/srl_elmo_5.5B.jsonnet (commit 10b9db33)',
               files=_release('2x4096_512_2048cnn_2xhighway_5.5B')),
    *(NamedModel(f'efml-{code}', EFML_TOKENIZERS.get(code, 'whitespace'),
                 f"ELMoForManyLangs' {language}: LSTM 4096, output 512, word + char (Unicode), 20M words of CoNLL 2018's "
                 f'raw text', EFML_SOURCE.format(id=nlpl_id), archive=f'{nlpl_id}.zip')
      for code, language, nlpl_id in EFML_RELEASES),
)}


def listed_names():
    """The table's names for a message: each, but ELMoForManyLangs' 44 as one pattern."""
    efml = [name for name, m in MODELS.items() if m.archive]
    return ', '.join([name for name, m in MODELS.items() if not m.archive] +
                     [f'efml-<language> ({len(efml)}: {efml[0]} ... {efml[-1]})'])


def closest_model_names(name):
    """The names of the table closest to a misspelt `name` (difflib; at most 3, best first)."""
    import difflib
    return difflib.get_close_matches(name, MODELS, n=3, cutoff=0.6)


def did_you_mean(name):
    """' (did you mean small?)' for a name close to some of the table's, else ''."""
    close = closest_model_names(name)
    return f' (did you mean {" or ".join(close)}?)' if close else ''


def models_of_language(language):
    """The names of the table's models of `language` ('English', 'Chinese': their tokenizer's,
    tokenizers.TOKENIZER_LANGUAGES), in table order."""
    from paddle_elmo.text.tokenizers import TOKENIZER_LANGUAGES
    return [m.name for m in MODELS.values() if TOKENIZER_LANGUAGES.get(m.tokenizer) == language]


def packaged_model_of(path):
    """The name of the packaged model whose directory holds `path` (its vocab.txt, its options.json),
    else None."""
    directory = os.path.dirname(os.path.abspath(path))
    return next((m.name for m in MODELS.values()
                 if m.package_dir and directory == os.path.join(PACKAGE_DIR, m.package_dir)), None)


def is_model_name(name):
    """Whether `name` is a row of the table (a name wins over a directory of the same name in the
    working directory: './small' names the directory)."""
    return name in MODELS


def release_urls_as_name(options_file, weight_file):
    """AllenNLP's habit of naming a release by its two URLs (its ElmoEmbedder's defaults, its
    tutorials: either S3 host, or a mirror, the paths unchanged) -> (the release's name, None), which
    loads it from the cache; any other pair is returned as given."""
    for model in MODELS.values():
        if model.files and all(isinstance(f, str) and f.startswith(('https://', 'http://')) and f.endswith('/' + path)
                               for f, path in zip((options_file, weight_file), model.files)):
            return model.name, None
    return options_file, weight_file


def models_url():
    """The base URL of the releases: $PADDLE_ELMO_MODELS_URL (with a final '/'), else AllenNLP's."""
    base = os.environ.get(MODELS_URL_VAR) or MODELS_URL
    return base if base.endswith('/') else base + '/'


def model_files(name):
    """A model name -> (options_file, weight_file), local paths: a packaged model's files in the
    package, a release's in the cache directory (downloaded first when either is absent); for an
    ELMoForManyLangs release (an `archive`), its model directory (archive_directory) and None."""
    if name not in MODELS:
        raise InputError(f'{name}: not a model name{did_you_mean(name)}; expected one of {listed_names()}')
    model = MODELS[name]
    if model.archive:
        return archive_directory(model), None
    if model.package_dir:
        return packaged_files(model)
    paths = cached_files(model)
    for remote, path in zip(model.files, paths):
        if not os.path.isfile(path):
            download(model, models_url() + remote, path, paths)
    return paths


def packaged_files(model):
    """A packaged model's (options_file, weight_file) -> paths, checked to be there."""
    directory = os.path.join(PACKAGE_DIR, model.package_dir)
    if not os.path.isdir(directory):
        raise InputError(f'{model.name}: {directory} is not in this installation (reinstall the '
                         f'package); or give a model of your own: a directory with {OPTIONS_FILE} + {WEIGHTS_FILE} or '
                         f'a checkpoint')
    files = tuple(os.path.join(directory, n) for n in (OPTIONS_FILE, WEIGHTS_FILE))
    for path in files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f'{path}: the {model.name} model is missing from this installation; give a '
                                    f'model (a checkpoint prefix, or options + weight files)')
    return files


def cached_files(model):
    """Where a release's two files live in the cache: models/elmo/ + their paths on the server."""
    return tuple(cache_dir('models', 'elmo', *remote.split('/')) for remote in model.files)


def archive_directory(model):
    """An archive release's model directory in the cache, models/efml/<NLPL id>/ (downloaded and
    unpacked first when absent): the archive's own folder when it holds one, else that directory.
    The zip downloads beside it (download: whole or not at all), unpacks into a temporary
    directory renamed into place when complete, and is deleted."""
    directory = cache_dir('models', 'efml', model.archive[:-len('.zip')])
    if not os.path.isdir(directory):
        archive = directory + '.zip'
        if not os.path.isfile(archive):
            base = os.environ.get(NLPL_URL_VAR) or NLPL_URL
            download(model, (base if base.endswith('/') else base + '/') + model.archive, archive, (archive,))
        _unpack(archive, directory)
    inner = [os.path.join(directory, n) for n in sorted(os.listdir(directory))
             if os.path.isdir(os.path.join(directory, n)) and not n.startswith(('.', '__'))]
    return inner[0] if len(inner) == 1 and not os.path.isfile(os.path.join(directory, 'config.json')) else directory


def _unpack(archive, directory):
    """The zip `archive` -> `directory`, made whole or not at all; the zip is deleted after."""
    import shutil
    import tempfile
    import zipfile
    tmp = tempfile.mkdtemp(prefix='.unpacking.', dir=os.path.dirname(directory))
    try:
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():  # no member may land outside the directory
                target = os.path.realpath(os.path.join(tmp, member))
                if not target.startswith(os.path.realpath(tmp) + os.sep):
                    raise InputError(f'{archive}: member {member!r} points outside the archive\'s directory')
            z.extractall(tmp)
        os.rename(tmp, directory)
    except zipfile.BadZipFile as e:
        os.remove(archive)  # a damaged download: the next use fetches it again
        raise NetworkError(f'{archive}: not a whole zip archive ({e}); removed, so that the next use downloads it '
                           f'again') from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.remove(archive)


def download(model, url, path, paths):
    """One file of `model` from `url` to `path` with pooch: a temporary file in the same directory,
    moved to `path` once the whole body has arrived (pooch.core.stream_download), so a killed
    download leaves no `path`, and a failed one no directory it made empty. Any failure ->
    NetworkError naming the URL and where to put the files (`paths`) by hand."""
    import pooch
    import requests
    log.info('%s: downloading %s into %s', model.name, url, os.path.dirname(path))
    pooch_log = pooch.get_logger()
    level = pooch_log.level
    pooch_log.setLevel(logging.WARNING)  # its INFO lines advise on known_hash, which is ours to set
    try:
        with no_empty_directories_on_failure(os.path.dirname(path)):
            pooch.retrieve(url, known_hash=None, fname=os.path.basename(path), path=os.path.dirname(path),
                           downloader=pooch.HTTPDownloader(progressbar=show_progress(logger=log)))
    except (requests.exceptions.RequestException, OSError) as e:
        remotes, variable = ((model.archive,), NLPL_URL_VAR) if model.archive else (model.files, MODELS_URL_VAR)
        by_hand = ' and '.join(f'{remote} as {local}' for remote, local in zip(remotes, paths))
        raise NetworkError(f'{model.name}: could not download {url} ({_reason(e)}); without a network, put the '
                           f'files there by hand: {by_hand} (or set {variable} to a mirror)') from None
    finally:
        pooch_log.setLevel(level)


def _reason(error):
    """A download failure in a few words: the HTTP status, the system's words (a full disk), else the
    exception's kind."""
    response = getattr(error, 'response', None)
    if response is not None:
        return f'HTTP {response.status_code}'
    if getattr(error, 'strerror', None):
        return error.strerror
    kind = type(error).__name__
    return {'ConnectionError': 'no connection', 'ChunkedEncodingError': 'the transfer broke off'}.get(kind, kind)
