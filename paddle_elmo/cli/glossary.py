"""The vocabulary of flags: one name per concept across every command, one meaning per name.

docs/FLAGS.md's table is made from FLAGS (flag_table, `make flags-table`); tests/test_flags.py
holds every parser to it.
"""


# name -> (the concept, with its units; aliases: the PaddleNLP example's and allennlp elmo's names
# where ours differ). A switch is `--NAME` / `--no_NAME` (arguments.Switch); its table name is NAME.
# Every name and alias is spelt with `_`; every command also takes it with `-` (`--batch-size`,
# allennlp elmo's spelling: arguments.underscored), which no help shows.
FLAGS = {
    # the model
    'model': ('the model, in one value: a model name (bundled, bundled-zh, small, medium, original, '
              'original-5.5b, efml-<language>; AllenNLP\'s and ELMoForManyLangs\' downloaded once into the cache), a '
              'directory with options.json + weights.hdf5, an ELMoForManyLangs model directory, a checkpoint '
              'directory or a checkpoint prefix DIR/N', ()),
    'init_from_ckpt': ('a checkpoint of ours: DIR/N (DIR holds options.json), DIR/N.pdparams, or a run directory '
                       '(its latest checkpoint); pretrain resumes from it, the other commands load it', ()),
    'options_file': ('the model as bilm-tf / AllenNLP files: its options.json (with --weight_file); pretrain '
                     'starts a new run from it', ()),
    'weight_file': ('the model as bilm-tf / AllenNLP files: its weights.hdf5 (with --options_file)', ()),
    'vocab_file': ('the model\'s vocabulary file, one token per line, most frequent first (softmax rows and, for '
                   'word input, embedding rows); predict, eval and dump default to the one the model records', ()),
    'init_from_weights': ('pretrain: start a new run from the weights in this directory (options.json + '
                          'weights.hdf5, or an ELMoForManyLangs model directory) or of a model name (bundled, '
                          'bundled-zh, original, efml-<language>, ...)', ()),
    'inference_model': ('a directory written by export-inference, as the model', ()),
    'inference_backend': ('what runs an --inference_model: paddle or onnxruntime (default: onnxruntime for an '
                          'int8 export; paddle where it can be imported, else onnxruntime)', ()),
    'embedding_weight_file': ('an hdf5 of token embeddings (dump --output_file) used in place of the char CNN', ()),
    # data
    'train_data_path': ('training corpus files (a glob): one sentence per line, tokens separated by spaces', ()),
    'dev_data_path': ('held-out corpus files (a glob), for perplexity', ()),
    'data_dir': ('the classification data: a directory with the positive and negative files', ()),
    'pos_file': ('the positive sentences\' file in --data_dir', ()),
    'neg_file': ('the negative sentences\' file in --data_dir', ()),
    'word_vectors': ('a word-vector file (word2vec .bin/.txt, gensim KeyedVectors .kv, or .npz of words and '
                     'vectors), read alike by every command: pretrain initialises the word embedding from it, '
                     'finetune concatenates its vectors to ELMo\'s, word2vec classifies with them',
                     ('pretrained_word2vec_file',)),
    'prefix': ('a text for the LM to continue (repeatable)', ()),
    'prefix_file': ('a file of texts for the LM to continue, one per line', ()),
    'tokenizer': ('the tokenizer that turns raw text into the model\'s tokens: whitespace, moses, jieba or chars',
                  ()),
    # what a command writes
    'save_dir': ('pretrain\'s run directory: options.json, recipe.json, the checkpoints, the training log (a run '
                 'owns it: default a new checkpoints/DATE_TIME)', ()),
    'overwrite_save_dir': ('pretrain: a new run may take a --save_dir holding another run, whose files are removed '
                           'first', ()),
    'output_dir': ('the directory the command writes its files to', ()),
    'output_file': ('the file the command writes (build-vocab: the vocabulary; dump: the token-embedding hdf5; '
                    'embed: its second argument, the embeddings hdf5)', ()),
    'output_corpus': ('build-vocab: also write the corpus as counted (segmented), one sentence per line', ()),
    'output_word_vectors': ('word2vec: write the vectors it trained to this file (.bin)', ()),
    'output_json': ('also write the results to this JSON file', ()),
    'output_format': ('embed: which layers go into the hdf5 (all, top, average, or one layer by its index: 0 the '
                      'token layer, 1... the LSTM layers)', ()),
    'use_sentence_keys': ('embed: the sentence itself is its hdf5 key, not its line number (allennlp elmo\'s flag)',
                          ()),
    'forget_sentences': ('embed: no sentence_to_index dataset in the hdf5 (allennlp elmo\'s flag)', ()),
    # allennlp elmo's names for --output_format's three values (embed only)
    'all': ('embed: --output_format all (allennlp elmo\'s flag)', ()),
    'top': ('embed: --output_format top (allennlp elmo\'s flag)', ()),
    'average': ('embed: --output_format average (allennlp elmo\'s flag)', ()),
    'formats': ('export-inference: what to write (paddle, or paddle,onnx)', ()),
    'embeddings': ('dump: which .npy dumps (softmax, char_cnn)', ()),
    # the model's settings (pretrain; recorded in options.json)
    'preset': ('pretrain: a whole model and recipe (original, small, budget) that explicit flags override', ()),
    'token_input': ('how a token enters the biLM: char, word or word+char', ()),
    'word_dim': ('word+char input: the word embedding\'s size (floats)', ()),
    'projection_dim': ('the LSTM projection and token representation size (floats)', ()),
    'cell_dim': ('LSTM cells per layer', ()),
    'num_layers': ('LSTM layers per direction', ()),
    'cell_clip': ('clip LSTM cells to +- this value (0: no clipping)', ()),
    'proj_clip': ('clip projected LSTM states to +- this value (0: no clipping)', ()),
    'use_skip_connections': ('residual connections around the LSTM layers after the first', ()),
    'char_embed_dim': ('the char embedding\'s size (floats)', ()),
    'cnn_filters': ('the char CNN: a JSON list of [width in characters (UTF-8 bytes), filters]', ()),
    'num_highways': ('highway layers after the char CNN', ()),
    'activation': ('the char CNN\'s activation: relu or tanh', ()),
    'max_characters_per_token': ('characters (UTF-8 bytes) per token the char CNN reads, boundary marks included',
                                 ()),
    'dropout': ('dropout probability (pretrain: the biLM\'s; classifiers: on the features and the hidden layer)',
                ()),
    # training
    'batch_size': ('examples per batch: sentences, or for the LM rows of --unroll_steps tokens', ()),
    'unroll_steps': ('tokens per row of an LM batch (the BPTT window)', ()),
    'n_train_tokens': ('training tokens per epoch', ()),
    'n_negative_samples': ('sampled-softmax candidates per batch (words)', ()),
    'optimizer': ('pretrain\'s optimizer: adagrad or adam', ()),
    'lr': ('the learning rate (pretrain: the biLM\'s; classifiers: the head\'s and the scalar mix\'s)', ()),
    'warmup_steps': ('adam: linear learning-rate warm-up, in steps', ()),
    'adam_beta2': ("adam: the second moment's decay per update (0.999 as in Adam's paper)", ()),
    'lr_decay': ('learning-rate decay after warm-up: none (bilm-tf), linear or cosine', ()),
    'lr_decay_steps': ('updates over which the learning rate decays (0: the run\'s steps after warm-up)', ()),
    'lr_final': ('the learning rate at the end of its decay, as a share of --lr', ()),
    'from_weights_lr_scale': ('a run started from pretrained weights that trains them runs at --lr times this '
                              '(off or 1: the full rate)', ()),
    'max_grad_norm': ('clip the global gradient norm to this value', ()),
    'softmax_bias_init': ("a new run's softmax bias: zero (bilm-tf) or unigram (each word's log share of the "
                          'training targets)', ()),
    'reset_state_at_sentence_start': ('a row that starts a sentence starts from a zero LSTM state', ()),
    'freeze_word_embeddings': ('keep the word embedding as it starts', ()),
    'freeze_bilm': ('train the softmax only, the biLM fixed', ()),
    'seed': ('the random seed: the same seed repeats a run on one machine', ()),
    'epochs': ('passes over the training data (classifiers: at most, per fold)', ()),
    'max_steps': ('stop training after this many steps (batches) in all', ()),
    'max_minutes': ('stop this run after this many minutes of training, with a checkpoint that resumes', ()),
    'nproc_per_node': ('pretrain: launch this many processes on this machine (paddle.distributed.launch)', ()),
    'save_freq': ('write a checkpoint every N steps (batches)', ()),
    'log_freq': ('log the running training loss every N steps (batches)', ('logging_step',)),
    'quiet': ('log warnings and errors only (stderr): no progress lines or bars; results still go to stdout', ()),
    'verbose': ('log debug lines too (stderr): what is loaded from where', ()),
    'progress': ('draw progress bars on stderr (default: on a terminal only, not in a file or a pipe, unless '
                 '$PADDLE_ELMO_PROGRESS is 1 or 0); log lines are written above them; --quiet draws none', ()),
    # evaluation
    'eval_freq': ('evaluate on --dev_data_path every N steps (batches)', ()),
    'eval_minutes': ('evaluate on --dev_data_path every this many minutes of training', ()),
    'eval_max_tokens': ('target tokens of --dev_data_path an evaluation reads (0: all)', ()),
    # classification (finetune, word2vec)
    'folds': ('k of the k-fold cross-validation', ()),
    'run_folds': ('run only these folds (1-based) of --folds', ()),
    'dev_fraction': ('share (0 to 1) of each training fold held out for early stopping', ()),
    'patience': ('stop after this many epochs without a better dev accuracy', ()),
    'weight_decay': ('Adam\'s L2 regularisation coefficient', ()),
    'max_seq_len': ('cut each sentence to this many tokens, counting ELMo\'s <S> and </S>', ()),
    'hidden_dim': ('the classifier\'s hidden layer size (0: a linear classifier)', ('sent_embedding_dim',)),
    'feature_norm': ('how the mean feature vector is normalised before the classifier', ()),
    'trainable': ('fine-tune the biLM rather than keep it frozen', ()),
    'bilm_lr': ('the learning rate of the biLM when --trainable', ()),
    'layer_norm': ('layer-normalise each biLM layer before the scalar mix', ()),
    'elmo_layer': ('the ELMo feature: mix, top or one layer number', ()),
    'l2_coef': ('L2 penalty on the scalar-mix weights', ()),
    'cache': ('compute a frozen biLM\'s layers once and cache them on disk', ()),
    'cache_dir': ('the directory for the layer cache', ()),
    'bilm_batch_size': ('sentences per biLM batch when caching its layers', ()),
    # word2vec
    'min_count': ('drop words seen fewer than this many times in the corpus', ()),
    'max_vocab_size': ('build-vocab: keep at most this many words, the most frequent (0: no limit)', ()),
    'max_vectors': ('word2vec: read only the first N vectors of --word_vectors (0: all)', ()),
    'train_max_tokens': ('train on only the first N tokens of --train_data_path (0: all)', ()),
    'oov': ('word2vec: what tokens without a vector become (unk or skip)', ()),
    'w2v_dim': ('word2vec training: the vector size (floats)', ()),
    'w2v_window': ('word2vec training: the largest distance of a context word (tokens)', ()),
    'w2v_negative': ('word2vec training: negative samples per pair', ()),
    'w2v_sample': ('word2vec training: the frequent-word downsampling threshold', ()),
    'w2v_epochs': ('word2vec training: passes over the corpus', ()),
    # embedding, export, prediction, the demo
    'stateful': ('carry the LSTM state across batches, as allennlp elmo', ()),
    'onednn': ('the paddle backend runs oneDNN\'s CPU kernels', ()),
    'softmax': ('export-weights: write the checkpoint\'s softmax too', ()),
    'softmax_dtype': ('export-weights: how softmax/W and softmax/b are stored (float16: half the size, read back as '
                      'float32)', ()),
    'verify': ('export-inference: check the written models against ELMoEmbedder (off: the export records '
               '"unverified")', ()),
    'verify_file': ('export-inference: the sentences an int8 model is checked on, one per line (at least 200; '
                    'default: the held-out sample the model ships, else for an English tokenizer the English one; '
                    'required for others)', ()),
    'quantize': ('export-inference: int8 writes model.onnx dynamically quantized (its LSTMs\' products in int8, for '
                 'onnxruntime); default: float32', ()),
    'special_tokens': ('build-vocab: write <S>, </S>, <UNK> first', ()),
    'direction': ('which LM predicts: forward (the next word) or backward (the previous one)', ()),
    'top_k': ('the most likely words shown per prefix', ()),
    'unk': ('<UNK> may be predicted and sampled like any other word', ()),
    'sample': ('continuations sampled per prefix', ()),
    'temperature': ('the sampling temperature', ()),
    'sample_max_tokens': ('a sampled continuation stops after this many tokens', ()),
    'zh': ('demo: the Chinese sense demo with the --init_from_ckpt model', ()),
    # the process
    'device': ('cpu, gpu or gpu:N (allennlp elmo\'s --cuda-device N: N >= 0 is gpu:N, -1 the CPU)', ('cuda_device',)),
    'cpu_threads': ('threads per process on the CPU', ()),
}
# Option strings every parser has that are not flags of ours.
ARGPARSE_OPTIONS = ('-h', '--help')


def option_strings(name):
    """A flag's option strings: --NAME, then its aliases (accepted wherever NAME is, shown in --help)."""
    return [f'--{name}'] + [f'--{alias}' for alias in FLAGS[name][1]]
