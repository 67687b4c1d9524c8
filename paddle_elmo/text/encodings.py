"""How the bytes of a user's text file become text: the one rule every reader of sentences follows
(the classifiers' polarity files, embed's and predict's input, the corpora of pretrain, eval,
build-vocab and word2vec).

A file is read as UTF-8 (a byte-order mark dropped) when all of it is UTF-8. Otherwise, for text a
Latin-script tokenizer splits (LATIN_SCRIPT_TOKENIZERS), the whole file is read as Latin-1
(LATIN_1, one WARNING line naming the file); for the others (jieba, chars: Chinese text, which
Latin-1 would garble) it is an InputError naming the file, the line and the byte. The decision is
made once per file, from all of its bytes (`text_encoding`), so a reader that starts at a byte offset
(a resumed training stream) decodes every line as a reader from the start does.
"""
import codecs
import logging
import os

from paddle_elmo.fileio import InputError, iter_lines, not_utf8, shown_name
from paddle_elmo.logs import warn_once

log = logging.getLogger(__name__)

UTF_8 = 'utf-8'
# Latin-1 as the web reads it (the WHATWG Encoding Standard's "iso-8859-1" and "latin1" labels):
# Windows-1252. The two agree on every byte but 0x80-0x9F, which ISO-8859-1 makes invisible C1
# control characters and Windows-1252 punctuation. rt-polarity as published is such a file: its
# en and em dashes, ellipses and opening quotes are the bytes 0x96, 0x97, 0x85 and 0x91 (the
# shared UTF-8 copy holds them as – — … ‘), which ISO-8859-1 would glue into words as controls.
# Windows-1252 leaves five bytes undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D): they keep their
# ISO-8859-1 meaning, so that every file decodes.
LATIN_1 = 'windows-1252'
# The tokenizers of Latin-script text (tokenizers.TOKENIZERS): whitespace, for text already split
# into tokens (English corpora, rt-polarity), and moses. jieba and chars read Chinese.
LATIN_SCRIPT_TOKENIZERS = ('whitespace', 'moses')


def _latin_1_table():
    """The 256 characters of LATIN_1's bytes, for codecs.charmap_decode."""
    def character(byte):
        try:
            return bytes([byte]).decode('cp1252')
        except UnicodeDecodeError:  # undefined in Windows-1252: ISO-8859-1's control character
            return chr(byte)
    return ''.join(map(character, range(256)))


_LATIN_1_TABLE = _latin_1_table()


def decode_latin_1(raw):
    """Bytes -> str as LATIN_1 reads them (never fails: every byte is a character)."""
    return codecs.charmap_decode(raw, 'strict', _LATIN_1_TABLE)[0]


def text_encoding(path, tokenizer='whitespace'):
    """The encoding `path` is read in for text that `tokenizer` splits -> UTF_8 or LATIN_1 (said in
    one WARNING line, once per file); InputError naming the file, the line and the byte for a file that
    is not UTF-8 when `tokenizer` is not a Latin-script one. The whole file is scanned once per process
    (while it keeps its size and modification time)."""
    bad = _first_bad_utf8(path)
    if bad is None:
        return UTF_8
    line_no, byte, reason, value = bad
    if tokenizer not in LATIN_SCRIPT_TOKENIZERS:
        raise InputError(f'{not_utf8(path, line_no, reason, byte)}; --tokenizer {tokenizer} reads UTF-8 only '
                         f'(convert the file, e.g. with iconv)')
    warn_once(log, 'read as Latin-1', os.path.realpath(path), '%s: not UTF-8 (byte 0x%02x on line %d); read as '
              'Latin-1 (Windows-1252)', shown_name(path), value, line_no)
    return LATIN_1


def read_text_file(path, tokenizer='whitespace'):
    """A whole text file of sentences -> (str, its encoding), decoded as `text_encoding` decides
    (a byte-order mark dropped)."""
    encoding = text_encoding(path, tokenizer)
    with open(path, 'rb') as f:
        raw = f.read()
    if encoding == UTF_8:
        return raw.decode(UTF_8).removeprefix('\ufeff'), encoding
    return decode_latin_1(raw), encoding


def iter_text_lines(path, tokenizer='whitespace', start_byte=0, start_line=0):
    """fileio.iter_lines of a file of sentences that `tokenizer` splits, each line decoded as
    `text_encoding` decides for the whole file: (0-based line number, length in bytes, text)."""
    latin = text_encoding(path, tokenizer) == LATIN_1
    return iter_lines(path, start_byte, start_line, decode=decode_latin_1 if latin else None)


# (real path, size, modification time) -> _scan's answer: a file is scanned once per process.
_SCANNED = {}
_BLOCK = 1 << 16  # blocks that stay in the CPU's cache


def _first_bad_utf8(path):
    """None when all of `path` is UTF-8, else where it is first not: (1-based line, byte of the line,
    the decoder's reason, the byte's value)."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    if key not in _SCANNED:
        _SCANNED[key] = _scan(path)
    return _SCANNED[key]


def _scan(path):
    decoder = codecs.getincrementaldecoder(UTF_8)()
    with open(path, 'rb') as f:
        try:
            while block := f.read(_BLOCK):
                decoder.decode(block)
            decoder.decode(b'', final=True)
            return None
        except UnicodeDecodeError:
            pass
        f.seek(0)  # found in a block: the line it is on, for the message
        for line_no, raw in enumerate(f, 1):
            try:
                raw.decode(UTF_8)
            except UnicodeDecodeError as e:
                return line_no, e.start, e.reason, raw[e.start]
    raise InputError(f'{path}: changed while it was read; run again')
