"""Embed a one-sentence-per-line file into hdf5, as AllenNLP's `allennlp elmo` command did.

    paddle-elmo embed sentences.txt out.hdf5              # the bundled model (pretrained/)
    paddle-elmo embed sentences.txt out.hdf5 --model original   # AllenNLP's, downloaded once into the cache
    paddle-elmo embed sentences.txt out.hdf5 --options_file options.json --weight_file weights.hdf5
    paddle-elmo embed sentences.txt out.hdf5 --init_from_ckpt checkpoints/final --output_format top
    paddle-elmo embed sentences.txt out.hdf5 --inference_model elmo_inference   # paddle-elmo export-inference's
    paddle-elmo embed reviews.txt out.hdf5 --init_from_ckpt zh/final   # raw Chinese, if zh/ records jieba
    cat sentences.txt | paddle-elmo embed - - > out.hdf5              # standard input and output

Lines are split into tokens by --tokenizer, by default the one the model records (moses for the
bundled model: raw English as its corpus was tokenized; whitespace for bilm-tf files).
Datasets: str(line index) -> the embedding of that line ('all': [3, n_tokens, dim];
'top' and 'average': [n_tokens, dim]), with its tokens, a JSON list, as the attribute 'tokens'
(json.loads(f['0'].attrs['tokens'])); and 'sentence_to_index', a JSON string {sentence: line index}.
allennlp elmo's flags work as there: --all / --top / --average, --batch-size, --cuda-device N (-1: the
CPU), --use-sentence-keys (the sentence is its key, no sentence_to_index), --forget-sentences (no
sentence_to_index, no tokens), and `-` as input_file reads standard input; here `-` as output_file also writes
the hdf5 to standard output (once complete: hdf5 is written by seeking). An input without a sentence
is an error: there would be nothing to embed.
"""
import argparse
import logging
import os
import sys

from paddle_elmo.cli.arguments import (Switch, add_device, add_tokenizer, file_or_stdin, file_or_stdout, parser,
                                       positive_int)
from paddle_elmo.cli.glossary import option_strings
from paddle_elmo.cli.model_flags import add_inference_model, add_model_source, model_source
from paddle_elmo.cli.runner import run
from paddle_elmo.text.corpus import check_has_sentence
from paddle_elmo.use.sentence_embedder import OUTPUT_FORMATS, layer_index
from paddle_elmo.fileio import STDIN_NAME, STDIO, InputError, input_path, output_path
from paddle_elmo.text.tokenizers import tokenizer_line

log = logging.getLogger(__name__)


def build_parser():
    p = parser(__doc__.split('\n')[0])
    p.add_argument('input_file', type=file_or_stdin,
                   help='one sentence per line (UTF-8; else Latin-1 for moses or whitespace), split into tokens by '
                   '--tokenizer (an empty line gives an empty embedding, so that the datasets keep the line numbers); '
                   '- reads standard input')
    p.add_argument('output_file', type=file_or_stdout, help='hdf5 file to write; - writes it to standard output')
    add_model_source(p, bundled_default=True)
    p.add_argument('--embedding_weight_file', help="hdf5 of dump_token_embeddings (dataset 'embedding', one row per "
                   'line of --vocab_file, or of the model\'s vocab.txt): those words skip the char CNN (bilm-tf\'s '
                   'use_character_inputs=False); for a word model, its embedding (bilm-tf\'s embedding_weight_file)')
    add_inference_model(p, 'or an exported model (paddle-elmo export-inference; stateless, CPU)',
                        'directory written by paddle-elmo export-inference (a word model\'s holds its vocab.txt)')
    add_device(p)
    p.add_argument('--output_format', type=output_format_value, metavar='{all,top,average,N}',
                   help='all layers, the top layer, the average of the layers, or layer N (0: the token layer, 1...: '
                   'the LSTM layers, as ELMoForManyLangs\' --output_layer) (default: all)')
    for value in OUTPUT_FORMATS:  # allennlp elmo's --all / --top / --average
        p.add_argument(f'--{value}', action='store_true', help=f'the same as --output_format {value} (allennlp elmo\'s '
                       'flag)')
    add_tokenizer(p)
    p.add_argument(*option_strings('batch_size'), type=positive_int, default=64, help='sentences per batch')
    p.add_argument('--stateful', action=Switch, default=False,
                   help='carry LSTM state across batches (as allennlp elmo did); off: each sentence from a zero state')
    p.add_argument(*option_strings('use_sentence_keys'), action='store_true',
                   help='key each dataset by its sentence (the stripped line) instead of its line number, and write no '
                   'sentence_to_index (allennlp elmo\'s flag); a repeated sentence, an empty one or one with "/" is '
                   'an error')
    p.add_argument(*option_strings('forget_sentences'), action='store_true',
                   help='write no sentence_to_index dataset, so that the file does not hold the text '
                   '(allennlp elmo\'s flag)')
    return p


def output_format_value(text):
    """argparse type of --output_format: a name of OUTPUT_FORMATS or a layer's index."""
    try:
        index = layer_index(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text if index is None else str(index)


def output_format(a):
    """The one output format --output_format and allennlp's --all / --top / --average name (default
    all); InputError when they name two."""
    chosen = [f'--{value}' for value in OUTPUT_FORMATS if getattr(a, value)]
    chosen += [f'--output_format {a.output_format}'] if a.output_format else []
    formats = {text.split()[-1].lstrip('-') for text in chosen}
    if len(formats) > 1:
        raise InputError(f'{" with ".join(chosen)}: give one output format')
    return formats.pop() if formats else 'all'


def check_input(path, name, tokenizer):
    """The input to embed (`name`: as the user gave it) is a file with a sentence, readable as text
    `tokenizer` splits (text.encodings); else one line."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{name}: ' + ('a directory; expected a file of sentences' if os.path.isdir(path)
                                               else 'input file not found'))
    check_has_sentence([path], name, tokenizer)


def input_tokenizer(a, model):
    """The tokenizer the input's lines are split by, known before a model loads: --tokenizer, else
    the model's (`model`: model_source's; for --inference_model, its export's options.json)."""
    if a.tokenizer or model:
        return a.tokenizer or model.config.tokenizer
    from paddle_elmo.files.run_configs import OPTIONS_FILE, read_model_config
    options = os.path.join(a.inference_model, OPTIONS_FILE)
    return read_model_config(options).tokenizer if os.path.isfile(options) else 'whitespace'  # else: not an export


def main(argv=None):
    a = build_parser().parse_args(argv)
    a.output_format = output_format(a)
    if a.inference_model:
        if a.model or a.init_from_ckpt or a.options_file or a.weight_file or a.vocab_file or a.embedding_weight_file:
            raise InputError('give either --inference_model (an export: its options.json and, for word input, '
                             'its vocab.txt) or a model to load (--model, --init_from_ckpt, --options_file/'
                             '--weight_file, --vocab_file, --embedding_weight_file), not both')
        if a.stateful:
            raise InputError('--stateful: an exported model is stateless (paddle-elmo export-inference writes one)')
        if a.device != 'cpu':
            raise InputError('--inference_model runs on the CPU here; use --device cpu')
    model = None if a.inference_model else model_source(a)  # a bad combination fails before the log starts
    with output_path(a.output_file, 'output_file') as output, input_path(a.input_file) as input_file:
        check_input(input_file, STDIN_NAME if a.input_file == STDIO else a.input_file,  # before a model loads
                    input_tokenizer(a, model))
        if a.inference_model:
            embedder = inference_embedder(a)
        else:
            from paddle_elmo import ELMoEmbedder, use_device
            use_device(a.device, cpu_threads=a.cpu_threads)
            embedder = ELMoEmbedder(model, batch_size=a.batch_size, stateful=a.stateful, tokenizer=a.tokenizer)
        log.info(tokenizer_line(embedder.tokenizer, a.tokenizer))
        n = embedder.embed_file(input_file, output, a.output_format, use_sentence_keys=a.use_sentence_keys,
                                forget_sentences=a.forget_sentences)
    if a.output_file == STDIO:  # stdout holds the hdf5: the result line goes to the log (stderr)
        log.info('wrote %d sentences to standard output', n)
    else:
        print(f'wrote {n} sentences to {a.output_file}')


def inference_embedder(a):
    """--inference_model's InferenceEmbedder (--inference_backend, else inference.choose_backend's). With
    onnxruntime nothing on the way imports Paddle, so an export serves where only the [serve] extra is
    installed (tests/test_structure.py)."""
    from paddle_elmo import runtime
    from paddle_elmo.export.inference import InferenceEmbedder, choose_backend
    backend = choose_backend(a.inference_model, a.inference_backend)
    if backend == 'paddle':
        # as for ELMoEmbedder: threads, MKL's fast path (the predictor without oneDNN multiplies with MKL), malloc
        runtime.use_device(a.device, cpu_threads=a.cpu_threads)
    else:
        runtime.keep_freed_memory()  # onnxruntime's threads: InferenceEmbedder's
    embedder = InferenceEmbedder(a.inference_model, backend=backend, batch_size=a.batch_size,
                                 onednn=a.onednn, threads=a.cpu_threads, tokenizer=a.tokenizer)
    if embedder.precision != 'float32':  # not ELMoEmbedder's numbers to 1e-4: say so
        print(f'{a.inference_model}: model.onnx is {embedder.precision}', file=sys.stderr)
    return embedder


if __name__ == '__main__':
    run(main)
