"""Dive into Deep Learning (d2l-ai/d2l-en), its PyTorch code of the natural language
processing chapters, run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in
its text and in the book's library (tests/d2l_port.py builds ``d2l/torch.py``; ``EXTRA`` holds
the later parts these chapters call, in the book's order: ``Vocab``, ``show_list_len_pair_hist``,
``masked_softmax`` to ``TransformerEncoderBlock``, ``train_batch_ch13``/``train_ch13``, the PTB,
GloVe, BERT, WikiText-2, IMDb and SNLI parts and ``truncate_pad``): docs/pytorch.md's promise,
the method of tests/test_d2l_basics.py.

- chapter_natural-language-processing-pretraining: word-embedding-dataset (``Vocab``, the
  subsampling, skip-gram's centers and contexts, negative sampling, ``batchify`` as a
  ``DataLoader``'s ``collate_fn``), word2vec-pretraining (``nn.Embedding``, ``torch.bmm``, the
  masked ``binary_cross_entropy_with_logits(weight=mask, reduction="none")``, Adam, the nearest
  words by ``torch.mv`` and ``topk``), bert (``BERTEncoder`` over the book's
  ``TransformerEncoderBlock`` with a learnt ``nn.Parameter`` of positions, ``MaskLM`` with
  ``repeat_interleave`` and fancy indexing, ``NextSentencePred``, ``BERTModel``), bert-dataset
  (the next-sentence and masked-token examples, padded) and bert-pretraining (eight steps of
  ``_get_batch_loss_bert`` through ``nn.DataParallel``, then the encodings of a sentence and a
  pair);
- chapter_natural-language-processing-applications: sentiment-analysis-and-dataset,
  sentiment-analysis-rnn (a two-layer bidirectional ``nn.LSTM``, its weights initialised
  through ``_flat_weights_names``/``_parameters``, a frozen embedding copied in with
  ``.data.copy_``), sentiment-analysis-cnn (``corr1d`` by hand, ``nn.Conv1d``,
  ``AdaptiveAvgPool1d``, two embeddings, one frozen), natural-language-inference-and-dataset
  and natural-language-inference-attention (the decomposable attention model, its
  ``Flatten(start_dim=1)``, ``predict_snli``), each trained by the book's ``train_ch13``.

The code is the book's PyTorch tab (``#@tab pytorch`` and ``#@tab all`` cells); each changed
line ends in ``# port:`` and says why: no download (the test writes small stand-ins where the
book's ``download_extract`` would put the data, in each data set's layout: tinyshakespeare's
first lines as PTB (skipped without /work/shared/data/tinyshakespeare.txt), made-up WikiText-2
paragraphs, IMDb reviews and SNLI pairs, random 16-dimensional vectors as GloVe); sizes,
batches and epochs shrunk (a faster rate where one epoch must show learning); a layer's
``weight`` taken by position (tricycle's is ``weights``: documented); ``[d2l.try_gpu()]`` for
``d2l.try_all_gpus()`` (the book's is [] without a GPU, on which ``train_ch13`` fails in both
libraries); SNLI's examples a list (tricycle's ``default_collate`` gives a tuple where torch's
gives the list that ``train_ch13`` asks for: reported). The book's ``Animator`` records its
points without drawing them (``build``: it redraws its figure at each point). Each section
runs under torch (skipped without it), then under tricycle, seeded, on the CPU, on one thread;
both print the same lines (numbers, documented reprs and the trained models' answers aside;
the data sections' numbers too: their data come from Python's ``random``), both learn (the
loss curves the ``Animator`` is given fall), and the book's own numbers hold (the masked
loss's 0.9352 and 1.8462, ``corr1d``'s outputs, ``batchify``'s example). Then each model is
given torch's weights (``nn.from_torch``) and gives torch's outputs, losses and gradients of
every parameter (the skip-gram pair of embeddings, a whole ``BERTModel`` under
``_get_batch_loss_bert``, ``BiRNN``, ``TextCNN``, ``DecomposableAttention``) and torch's
predictions. The one fix the chapters needed: ``nn.CrossEntropyLoss`` takes torch's
``reduction``, ``weight`` and ``label_smoothing`` (tricycle/nn/losses.py, tested in
tests/test_catalogue_losses.py). The last test checks that the texts held here are the book's
(d2l/torch.py and the chapters at commit 23d7a5ae), but for their ``# port:`` lines.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests import d2l_port
from tests.test_d2l_attention import ATTENTION
from tests.test_d2l_rnn import EXTRA as RNN_LIBRARY
from tests.test_d2l_vision import D2L_VISION
from tests.test_torch_examples_b import numbers
from tests.test_torch_vision_tutorials import host
from tests.test_uvadlc_intro import kinds

pytestmark = [  # torch's, of the book's metric.add(l.sum(), ...) as it writes it
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar"),
    pytest.mark.filterwarnings("ignore:Lazy modules are a new feature"),
]

# d2l/torch.py (commit 23d7a5ae), in its order, the chapters' own parts: from PTB to ``truncate_pad``
NLP = r'''
d2l.DATA_HUB['ptb'] = (d2l.DATA_URL + 'ptb.zip',
                       '319d85e578af0cdc590547f26231e4e31cdf1e42')

def read_ptb():
    """Load the PTB dataset into a list of text lines.

    Defined in :numref:`sec_word2vec_data`"""
    data_dir = '../data/ptb'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    # Read the training set
    with open(os.path.join(data_dir, 'ptb.train.txt')) as f:
        raw_text = f.read()
    return [line.split() for line in raw_text.split('\n')]

def subsample(sentences, vocab):
    """Subsample high-frequency words.

    Defined in :numref:`sec_word2vec_data`"""
    # Exclude unknown tokens ('<unk>')
    sentences = [[token for token in line if vocab[token] != vocab.unk]
                 for line in sentences]
    counter = collections.Counter([
        token for line in sentences for token in line])
    num_tokens = sum(counter.values())

    # Return True if `token` is kept during subsampling
    def keep(token):
        return(random.uniform(0, 1) <
               math.sqrt(1e-4 / counter[token] * num_tokens))

    return ([[token for token in line if keep(token)] for line in sentences],
            counter)

def get_centers_and_contexts(corpus, max_window_size):
    """Return center words and context words in skip-gram.

    Defined in :numref:`sec_word2vec_data`"""
    centers, contexts = [], []
    for line in corpus:
        # To form a "center word--context word" pair, each sentence needs to
        # have at least 2 words
        if len(line) < 2:
            continue
        centers += line
        for i in range(len(line)):  # Context window centered at `i`
            window_size = random.randint(1, max_window_size)
            indices = list(range(max(0, i - window_size),
                                 min(len(line), i + 1 + window_size)))
            # Exclude the center word from the context words
            indices.remove(i)
            contexts.append([line[idx] for idx in indices])
    return centers, contexts

class RandomGenerator:
    """Randomly draw among {1, ..., n} according to n sampling weights."""
    def __init__(self, sampling_weights):
        """Defined in :numref:`sec_word2vec_data`"""
        # Exclude
        self.population = list(range(1, len(sampling_weights) + 1))
        self.sampling_weights = sampling_weights
        self.candidates = []
        self.i = 0

    def draw(self):
        if self.i == len(self.candidates):
            # Cache `k` random sampling results
            self.candidates = random.choices(
                self.population, self.sampling_weights, k=10000)
            self.i = 0
        self.i += 1
        return self.candidates[self.i - 1]

def get_negatives(all_contexts, vocab, counter, K):
    """Return noise words in negative sampling.

    Defined in :numref:`sec_word2vec_data`"""
    # Sampling weights for words with indices 1, 2, ... (index 0 is the
    # excluded unknown token) in the vocabulary
    sampling_weights = [counter[vocab.to_tokens(i)]**0.75
                        for i in range(1, len(vocab))]
    all_negatives, generator = [], RandomGenerator(sampling_weights)
    for contexts in all_contexts:
        negatives = []
        while len(negatives) < len(contexts) * K:
            neg = generator.draw()
            # Noise words cannot be context words
            if neg not in contexts:
                negatives.append(neg)
        all_negatives.append(negatives)
    return all_negatives

def batchify(data):
    """Return a minibatch of examples for skip-gram with negative sampling.

    Defined in :numref:`sec_word2vec_data`"""
    max_len = max(len(c) + len(n) for _, c, n in data)
    centers, contexts_negatives, masks, labels = [], [], [], []
    for center, context, negative in data:
        cur_len = len(context) + len(negative)
        centers += [center]
        contexts_negatives += [context + negative + [0] * (max_len - cur_len)]
        masks += [[1] * cur_len + [0] * (max_len - cur_len)]
        labels += [[1] * len(context) + [0] * (max_len - len(context))]
    return (d2l.reshape(d2l.tensor(centers), (-1, 1)), d2l.tensor(
        contexts_negatives), d2l.tensor(masks), d2l.tensor(labels))

def load_data_ptb(batch_size, max_window_size, num_noise_words):
    """Download the PTB dataset and then load it into memory.

    Defined in :numref:`subsec_word2vec-minibatch-loading`"""
    num_workers = d2l.get_dataloader_workers()
    sentences = read_ptb()
    vocab = d2l.Vocab(sentences, min_freq=10)
    subsampled, counter = subsample(sentences, vocab)
    corpus = [vocab[line] for line in subsampled]
    all_centers, all_contexts = get_centers_and_contexts(
        corpus, max_window_size)
    all_negatives = get_negatives(
        all_contexts, vocab, counter, num_noise_words)

    class PTBDataset(torch.utils.data.Dataset):
        def __init__(self, centers, contexts, negatives):
            assert len(centers) == len(contexts) == len(negatives)
            self.centers = centers
            self.contexts = contexts
            self.negatives = negatives

        def __getitem__(self, index):
            return (self.centers[index], self.contexts[index],
                    self.negatives[index])

        def __len__(self):
            return len(self.centers)

    dataset = PTBDataset(all_centers, all_contexts, all_negatives)

    data_iter = torch.utils.data.DataLoader(dataset, batch_size, shuffle=True,
                                      collate_fn=batchify,
                                      num_workers=num_workers)
    return data_iter, vocab

d2l.DATA_HUB['glove.6b.50d'] = (d2l.DATA_URL + 'glove.6B.50d.zip',
                                '0b8703943ccdb6eb788e6f091b8946e82231bc4d')

d2l.DATA_HUB['glove.6b.100d'] = (d2l.DATA_URL + 'glove.6B.100d.zip',
                                 'cd43bfb07e44e6f27cbcc7bc9ae3d80284fdaf5a')

d2l.DATA_HUB['glove.42b.300d'] = (d2l.DATA_URL + 'glove.42B.300d.zip',
                                  'b5116e234e9eb9076672cfeabf5469f3eec904fa')

d2l.DATA_HUB['wiki.en'] = (d2l.DATA_URL + 'wiki.en.zip',
                           'c1816da3821ae9f43899be655002f6c723e91b88')

class TokenEmbedding:
    """Token Embedding."""
    def __init__(self, embedding_name):
        """Defined in :numref:`sec_synonyms`"""
        self.idx_to_token, self.idx_to_vec = self._load_embedding(
            embedding_name)
        self.unknown_idx = 0
        self.token_to_idx = {token: idx for idx, token in
                             enumerate(self.idx_to_token)}

    def _load_embedding(self, embedding_name):
        idx_to_token, idx_to_vec = ['<unk>'], []
        data_dir = os.path.join('../data', embedding_name)  # port: no download: the test wrote a small stand-in there, in the data set's layout (random vectors in GloVe's place)
        # GloVe website: https://nlp.stanford.edu/projects/glove/
        # fastText website: https://fasttext.cc/
        with open(os.path.join(data_dir, 'vec.txt'), 'r') as f:
            for line in f:
                elems = line.rstrip().split(' ')
                token, elems = elems[0], [float(elem) for elem in elems[1:]]
                # Skip header information, such as the top row in fastText
                if len(elems) > 1:
                    idx_to_token.append(token)
                    idx_to_vec.append(elems)
        idx_to_vec = [[0] * len(idx_to_vec[0])] + idx_to_vec
        return idx_to_token, d2l.tensor(idx_to_vec)

    def __getitem__(self, tokens):
        indices = [self.token_to_idx.get(token, self.unknown_idx)
                   for token in tokens]
        vecs = self.idx_to_vec[d2l.tensor(indices)]
        return vecs

    def __len__(self):
        return len(self.idx_to_token)

def get_tokens_and_segments(tokens_a, tokens_b=None):
    """Get tokens of the BERT input sequence and their segment IDs.

    Defined in :numref:`sec_bert`"""
    tokens = ['<cls>'] + tokens_a + ['<sep>']
    # 0 and 1 are marking segment A and B, respectively
    segments = [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += tokens_b + ['<sep>']
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments

class BERTEncoder(nn.Module):
    """BERT encoder.

    Defined in :numref:`subsec_bert_input_rep`"""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
                 num_blks, dropout, max_len=1000, **kwargs):
        super(BERTEncoder, self).__init__(**kwargs)
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.segment_embedding = nn.Embedding(2, num_hiddens)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(f"{i}", d2l.TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, True))
        # In BERT, positional embeddings are learnable, thus we create a
        # parameter of positional embeddings that are long enough
        self.pos_embedding = nn.Parameter(torch.randn(1, max_len,
                                                      num_hiddens))

    def forward(self, tokens, segments, valid_lens):
        # Shape of `X` remains unchanged in the following code snippet:
        # (batch size, max sequence length, `num_hiddens`)
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, :X.shape[1], :]
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X

class MaskLM(nn.Module):
    """The masked language model task of BERT.

    Defined in :numref:`subsec_bert_input_rep`"""
    def __init__(self, vocab_size, num_hiddens, **kwargs):
        super(MaskLM, self).__init__(**kwargs)
        self.mlp = nn.Sequential(nn.LazyLinear(num_hiddens),
                                 nn.ReLU(),
                                 nn.LayerNorm(num_hiddens),
                                 nn.LazyLinear(vocab_size))

    def forward(self, X, pred_positions):
        num_pred_positions = pred_positions.shape[1]
        pred_positions = pred_positions.reshape(-1)
        batch_size = X.shape[0]
        batch_idx = torch.arange(0, batch_size)
        # Suppose that `batch_size` = 2, `num_pred_positions` = 3, then
        # `batch_idx` is `torch.tensor([0, 0, 0, 1, 1, 1])`
        batch_idx = torch.repeat_interleave(batch_idx, num_pred_positions)
        masked_X = X[batch_idx, pred_positions]
        masked_X = masked_X.reshape((batch_size, num_pred_positions, -1))
        mlm_Y_hat = self.mlp(masked_X)
        return mlm_Y_hat

class NextSentencePred(nn.Module):
    """The next sentence prediction task of BERT.

    Defined in :numref:`subsec_mlm`"""
    def __init__(self, **kwargs):
        super(NextSentencePred, self).__init__(**kwargs)
        self.output = nn.LazyLinear(2)

    def forward(self, X):
        # `X` shape: (batch size, `num_hiddens`)
        return self.output(X)

class BERTModel(nn.Module):
    """The BERT model.

    Defined in :numref:`subsec_nsp`"""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens,
                 num_heads, num_blks, dropout, max_len=1000):
        super(BERTModel, self).__init__()
        self.encoder = BERTEncoder(vocab_size, num_hiddens, ffn_num_hiddens,
                                   num_heads, num_blks, dropout,
                                   max_len=max_len)
        self.hidden = nn.Sequential(nn.LazyLinear(num_hiddens),
                                    nn.Tanh())
        self.mlm = MaskLM(vocab_size, num_hiddens)
        self.nsp = NextSentencePred()

    def forward(self, tokens, segments, valid_lens=None, pred_positions=None):
        encoded_X = self.encoder(tokens, segments, valid_lens)
        if pred_positions is not None:
            mlm_Y_hat = self.mlm(encoded_X, pred_positions)
        else:
            mlm_Y_hat = None
        # The hidden layer of the MLP classifier for next sentence prediction.
        # 0 is the index of the '<cls>' token
        nsp_Y_hat = self.nsp(self.hidden(encoded_X[:, 0, :]))
        return encoded_X, mlm_Y_hat, nsp_Y_hat

d2l.DATA_HUB['wikitext-2'] = (
    'https://s3.amazonaws.com/research.metamind.io/wikitext/'
    'wikitext-2-v1.zip', '3c914d17d80b1459be871a5039ac23e752a53cbe')

def _read_wiki(data_dir):
    """Defined in :numref:`sec_bert-dataset`"""
    file_name = os.path.join(data_dir, 'wiki.train.tokens')
    with open(file_name, 'r') as f:
        lines = f.readlines()
    # Uppercase letters are converted to lowercase ones
    paragraphs = [line.strip().lower().split(' . ')
                  for line in lines if len(line.split(' . ')) >= 2]
    random.shuffle(paragraphs)
    return paragraphs

def _get_next_sentence(sentence, next_sentence, paragraphs):
    """Defined in :numref:`sec_bert-dataset`"""
    if random.random() < 0.5:
        is_next = True
    else:
        # `paragraphs` is a list of lists of lists
        next_sentence = random.choice(random.choice(paragraphs))
        is_next = False
    return sentence, next_sentence, is_next

def _get_nsp_data_from_paragraph(paragraph, paragraphs, vocab, max_len):
    """Defined in :numref:`sec_bert-dataset`"""
    nsp_data_from_paragraph = []
    for i in range(len(paragraph) - 1):
        tokens_a, tokens_b, is_next = _get_next_sentence(
            paragraph[i], paragraph[i + 1], paragraphs)
        # Consider 1 '<cls>' token and 2 '<sep>' tokens
        if len(tokens_a) + len(tokens_b) + 3 > max_len:
            continue
        tokens, segments = d2l.get_tokens_and_segments(tokens_a, tokens_b)
        nsp_data_from_paragraph.append((tokens, segments, is_next))
    return nsp_data_from_paragraph

def _replace_mlm_tokens(tokens, candidate_pred_positions, num_mlm_preds,
                        vocab):
    """Defined in :numref:`sec_bert-dataset`"""
    # For the input of a masked language model, make a new copy of tokens and
    # replace some of them by '<mask>' or random tokens
    mlm_input_tokens = [token for token in tokens]
    pred_positions_and_labels = []
    # Shuffle for getting 15% random tokens for prediction in the masked
    # language modeling task
    random.shuffle(candidate_pred_positions)
    for mlm_pred_position in candidate_pred_positions:
        if len(pred_positions_and_labels) >= num_mlm_preds:
            break
        masked_token = None
        # 80% of the time: replace the word with the '<mask>' token
        if random.random() < 0.8:
            masked_token = '<mask>'
        else:
            # 10% of the time: keep the word unchanged
            if random.random() < 0.5:
                masked_token = tokens[mlm_pred_position]
            # 10% of the time: replace the word with a random word
            else:
                masked_token = random.choice(vocab.idx_to_token)
        mlm_input_tokens[mlm_pred_position] = masked_token
        pred_positions_and_labels.append(
            (mlm_pred_position, tokens[mlm_pred_position]))
    return mlm_input_tokens, pred_positions_and_labels

def _get_mlm_data_from_tokens(tokens, vocab):
    """Defined in :numref:`subsec_prepare_mlm_data`"""
    candidate_pred_positions = []
    # `tokens` is a list of strings
    for i, token in enumerate(tokens):
        # Special tokens are not predicted in the masked language modeling
        # task
        if token in ['<cls>', '<sep>']:
            continue
        candidate_pred_positions.append(i)
    # 15% of random tokens are predicted in the masked language modeling task
    num_mlm_preds = max(1, round(len(tokens) * 0.15))
    mlm_input_tokens, pred_positions_and_labels = _replace_mlm_tokens(
        tokens, candidate_pred_positions, num_mlm_preds, vocab)
    pred_positions_and_labels = sorted(pred_positions_and_labels,
                                       key=lambda x: x[0])
    pred_positions = [v[0] for v in pred_positions_and_labels]
    mlm_pred_labels = [v[1] for v in pred_positions_and_labels]
    return vocab[mlm_input_tokens], pred_positions, vocab[mlm_pred_labels]

def _pad_bert_inputs(examples, max_len, vocab):
    """Defined in :numref:`subsec_prepare_mlm_data`"""
    max_num_mlm_preds = round(max_len * 0.15)
    all_token_ids, all_segments, valid_lens,  = [], [], []
    all_pred_positions, all_mlm_weights, all_mlm_labels = [], [], []
    nsp_labels = []
    for (token_ids, pred_positions, mlm_pred_label_ids, segments,
         is_next) in examples:
        all_token_ids.append(torch.tensor(token_ids + [vocab['<pad>']] * (
            max_len - len(token_ids)), dtype=torch.long))
        all_segments.append(torch.tensor(segments + [0] * (
            max_len - len(segments)), dtype=torch.long))
        # `valid_lens` excludes count of '<pad>' tokens
        valid_lens.append(torch.tensor(len(token_ids), dtype=torch.float32))
        all_pred_positions.append(torch.tensor(pred_positions + [0] * (
            max_num_mlm_preds - len(pred_positions)), dtype=torch.long))
        # Predictions of padded tokens will be filtered out in the loss via
        # multiplication of 0 weights
        all_mlm_weights.append(
            torch.tensor([1.0] * len(mlm_pred_label_ids) + [0.0] * (
                max_num_mlm_preds - len(pred_positions)),
                dtype=torch.float32))
        all_mlm_labels.append(torch.tensor(mlm_pred_label_ids + [0] * (
            max_num_mlm_preds - len(mlm_pred_label_ids)), dtype=torch.long))
        nsp_labels.append(torch.tensor(is_next, dtype=torch.long))
    return (all_token_ids, all_segments, valid_lens, all_pred_positions,
            all_mlm_weights, all_mlm_labels, nsp_labels)

class _WikiTextDataset(torch.utils.data.Dataset):
    """Defined in :numref:`subsec_prepare_mlm_data`"""
    def __init__(self, paragraphs, max_len):
        # Input `paragraphs[i]` is a list of sentence strings representing a
        # paragraph; while output `paragraphs[i]` is a list of sentences
        # representing a paragraph, where each sentence is a list of tokens
        paragraphs = [d2l.tokenize(
            paragraph, token='word') for paragraph in paragraphs]
        sentences = [sentence for paragraph in paragraphs
                     for sentence in paragraph]
        self.vocab = d2l.Vocab(sentences, min_freq=5, reserved_tokens=[
            '<pad>', '<mask>', '<cls>', '<sep>'])
        # Get data for the next sentence prediction task
        examples = []
        for paragraph in paragraphs:
            examples.extend(_get_nsp_data_from_paragraph(
                paragraph, paragraphs, self.vocab, max_len))
        # Get data for the masked language model task
        examples = [(_get_mlm_data_from_tokens(tokens, self.vocab)
                      + (segments, is_next))
                     for tokens, segments, is_next in examples]
        # Pad inputs
        (self.all_token_ids, self.all_segments, self.valid_lens,
         self.all_pred_positions, self.all_mlm_weights,
         self.all_mlm_labels, self.nsp_labels) = _pad_bert_inputs(
            examples, max_len, self.vocab)

    def __getitem__(self, idx):
        return (self.all_token_ids[idx], self.all_segments[idx],
                self.valid_lens[idx], self.all_pred_positions[idx],
                self.all_mlm_weights[idx], self.all_mlm_labels[idx],
                self.nsp_labels[idx])

    def __len__(self):
        return len(self.all_token_ids)

def load_data_wiki(batch_size, max_len):
    """Load the WikiText-2 dataset.

    Defined in :numref:`subsec_prepare_mlm_data`"""
    num_workers = d2l.get_dataloader_workers()
    data_dir = '../data/wikitext-2'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    paragraphs = _read_wiki(data_dir)
    train_set = _WikiTextDataset(paragraphs, max_len)
    train_iter = torch.utils.data.DataLoader(train_set, batch_size,
                                        shuffle=True, num_workers=num_workers)
    return train_iter, train_set.vocab

def _get_batch_loss_bert(net, loss, vocab_size, tokens_X,
                         segments_X, valid_lens_x,
                         pred_positions_X, mlm_weights_X,
                         mlm_Y, nsp_y):
    """Defined in :numref:`sec_bert-pretraining`"""
    # Forward pass
    _, mlm_Y_hat, nsp_Y_hat = net(tokens_X, segments_X,
                                  valid_lens_x.reshape(-1),
                                  pred_positions_X)
    # Compute masked language model loss
    mlm_l = loss(mlm_Y_hat.reshape(-1, vocab_size), mlm_Y.reshape(-1)) *\
    mlm_weights_X.reshape(-1, 1)
    mlm_l = mlm_l.sum() / (mlm_weights_X.sum() + 1e-8)
    # Compute next sentence prediction loss
    nsp_l = loss(nsp_Y_hat, nsp_y)
    l = mlm_l + nsp_l
    return mlm_l, nsp_l, l

d2l.DATA_HUB['aclImdb'] = (d2l.DATA_URL + 'aclImdb_v1.tar.gz',
                          '01ada507287d82875905620988597833ad4e0903')

def read_imdb(data_dir, is_train):
    """Read the IMDb review dataset text sequences and labels.

    Defined in :numref:`sec_sentiment`"""
    data, labels = [], []
    for label in ('pos', 'neg'):
        folder_name = os.path.join(data_dir, 'train' if is_train else 'test',
                                   label)
        for file in os.listdir(folder_name):
            with open(os.path.join(folder_name, file), 'rb') as f:
                review = f.read().decode('utf-8').replace('\n', '')
                data.append(review)
                labels.append(1 if label == 'pos' else 0)
    return data, labels

def load_data_imdb(batch_size, num_steps=500):
    """Return data iterators and the vocabulary of the IMDb review dataset.

    Defined in :numref:`sec_sentiment`"""
    data_dir = '../data/aclImdb'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    train_data = read_imdb(data_dir, True)
    test_data = read_imdb(data_dir, False)
    train_tokens = d2l.tokenize(train_data[0], token='word')
    test_tokens = d2l.tokenize(test_data[0], token='word')
    vocab = d2l.Vocab(train_tokens, min_freq=5)
    train_features = torch.tensor([d2l.truncate_pad(
        vocab[line], num_steps, vocab['<pad>']) for line in train_tokens])
    test_features = torch.tensor([d2l.truncate_pad(
        vocab[line], num_steps, vocab['<pad>']) for line in test_tokens])
    train_iter = d2l.load_array((train_features, torch.tensor(train_data[1])),
                                batch_size)
    test_iter = d2l.load_array((test_features, torch.tensor(test_data[1])),
                               batch_size,
                               is_train=False)
    return train_iter, test_iter, vocab

def predict_sentiment(net, vocab, sequence):
    """Predict the sentiment of a text sequence.

    Defined in :numref:`sec_sentiment_rnn`"""
    sequence = torch.tensor(vocab[sequence.split()], device=d2l.try_gpu())
    label = torch.argmax(net(sequence.reshape(1, -1)), dim=1)
    return 'positive' if label == 1 else 'negative'

d2l.DATA_HUB['SNLI'] = (
    'https://nlp.stanford.edu/projects/snli/snli_1.0.zip',
    '9fcde07509c7e87ec61c640c1b2753d9041758e4')

def read_snli(data_dir, is_train):
    """Read the SNLI dataset into premises, hypotheses, and labels.

    Defined in :numref:`sec_natural-language-inference-and-dataset`"""
    def extract_text(s):
        # Remove information that will not be used by us
        s = re.sub('\\(', '', s)
        s = re.sub('\\)', '', s)
        # Substitute two or more consecutive whitespace with space
        s = re.sub('\\s{2,}', ' ', s)
        return s.strip()
    label_set = {'entailment': 0, 'contradiction': 1, 'neutral': 2}
    file_name = os.path.join(data_dir, 'snli_1.0_train.txt'
                             if is_train else 'snli_1.0_test.txt')
    with open(file_name, 'r') as f:
        rows = [row.split('\t') for row in f.readlines()[1:]]
    premises = [extract_text(row[1]) for row in rows if row[0] in label_set]
    hypotheses = [extract_text(row[2]) for row in rows if row[0] in label_set]
    labels = [label_set[row[0]] for row in rows if row[0] in label_set]
    return premises, hypotheses, labels

class SNLIDataset(torch.utils.data.Dataset):
    """A customized dataset to load the SNLI dataset.

    Defined in :numref:`sec_natural-language-inference-and-dataset`"""
    def __init__(self, dataset, num_steps, vocab=None):
        self.num_steps = num_steps
        all_premise_tokens = d2l.tokenize(dataset[0])
        all_hypothesis_tokens = d2l.tokenize(dataset[1])
        if vocab is None:
            self.vocab = d2l.Vocab(all_premise_tokens + all_hypothesis_tokens,
                                   min_freq=5, reserved_tokens=['<pad>'])
        else:
            self.vocab = vocab
        self.premises = self._pad(all_premise_tokens)
        self.hypotheses = self._pad(all_hypothesis_tokens)
        self.labels = torch.tensor(dataset[2])
        print('read ' + str(len(self.premises)) + ' examples')

    def _pad(self, lines):
        return torch.tensor([d2l.truncate_pad(
            self.vocab[line], self.num_steps, self.vocab['<pad>'])
                         for line in lines])

    def __getitem__(self, idx):
        return [self.premises[idx], self.hypotheses[idx]], self.labels[idx]  # port: a list: tricycle's default_collate gives a tuple of a tuple where torch's gives a list, which train_ch13 asks for (reported)

    def __len__(self):
        return len(self.premises)

def load_data_snli(batch_size, num_steps=50):
    """Download the SNLI dataset and return data iterators and vocabulary.

    Defined in :numref:`sec_natural-language-inference-and-dataset`"""
    num_workers = d2l.get_dataloader_workers()
    data_dir = '../data/snli_1.0'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    train_data = read_snli(data_dir, True)
    test_data = read_snli(data_dir, False)
    train_set = SNLIDataset(train_data, num_steps)
    test_set = SNLIDataset(test_data, num_steps, train_set.vocab)
    train_iter = torch.utils.data.DataLoader(train_set, batch_size,
                                             shuffle=True,
                                             num_workers=num_workers)
    test_iter = torch.utils.data.DataLoader(test_set, batch_size,
                                            shuffle=False,
                                            num_workers=num_workers)
    return train_iter, test_iter, train_set.vocab

def predict_snli(net, vocab, premise, hypothesis):
    """Predict the logical relationship between the premise and hypothesis.

    Defined in :numref:`sec_natural-language-inference-attention`"""
    net.eval()
    premise = torch.tensor(vocab[premise], device=d2l.try_gpu())
    hypothesis = torch.tensor(vocab[hypothesis], device=d2l.try_gpu())
    label = torch.argmax(net([premise.reshape((1, -1)),
                           hypothesis.reshape((1, -1))]), dim=1)
    return 'entailment' if label == 0 else 'contradiction' if label == 1 \
            else 'neutral'

def truncate_pad(line, num_steps, padding_token):
    """Truncate or pad sequences.

    Defined in :numref:`sec_utils`"""
    if len(line) > num_steps:
        return line[:num_steps]  # Truncate
    return line + [padding_token] * (num_steps - len(line))  # Pad

'''

# d2l/torch.py's parts these chapters call, in its order: ``Vocab`` and ``show_list_len_pair_hist``
# as tests/test_d2l_rnn.py holds them, the attention and Transformer encoder parts as
# tests/test_d2l_attention.py does, ``train_ch13`` as tests/test_d2l_vision.py does, then ``NLP``
EXTRA = (
    "\n"
    + d2l_port.parts(RNN_LIBRARY, "Vocab", "show_list_len_pair_hist")
    + d2l_port.parts(
        ATTENTION,
        "masked_softmax",
        "DotProductAttention",
        "MultiHeadAttention",
        "PositionWiseFFN",
        "AddNorm",
        "TransformerEncoderBlock",
    )
    + d2l_port.parts(D2L_VISION, "train_batch_ch13", "train_ch13")
    + NLP
)


WORD_EMBEDDING_DATASET = r'''
import collections
from d2l import torch as d2l
import math
import torch
import os
import random
# %%
#@save
d2l.DATA_HUB['ptb'] = (d2l.DATA_URL + 'ptb.zip',
                       '319d85e578af0cdc590547f26231e4e31cdf1e42')

#@save
def read_ptb():
    """Load the PTB dataset into a list of text lines."""
    data_dir = '../data/ptb'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    # Read the training set
    with open(os.path.join(data_dir, 'ptb.train.txt')) as f:
        raw_text = f.read()
    return [line.split() for line in raw_text.split('\n')]

sentences = read_ptb()
f'# sentences: {len(sentences)}'
# %%
vocab = d2l.Vocab(sentences, min_freq=10)
f'vocab size: {len(vocab)}'
# %%
#@save
def subsample(sentences, vocab):
    """Subsample high-frequency words."""
    # Exclude unknown tokens ('<unk>')
    sentences = [[token for token in line if vocab[token] != vocab.unk]
                 for line in sentences]
    counter = collections.Counter([
        token for line in sentences for token in line])
    num_tokens = sum(counter.values())

    # Return True if `token` is kept during subsampling
    def keep(token):
        return(random.uniform(0, 1) <
               math.sqrt(1e-4 / counter[token] * num_tokens))

    return ([[token for token in line if keep(token)] for line in sentences],
            counter)

subsampled, counter = subsample(sentences, vocab)
# %%
d2l.show_list_len_pair_hist(['origin', 'subsampled'], '# tokens per sentence',
                            'count', sentences, subsampled);
# %%
def compare_counts(token):
    return (f'# of "{token}": '
            f'before={sum([l.count(token) for l in sentences])}, '
            f'after={sum([l.count(token) for l in subsampled])}')

compare_counts('the')
# %%
compare_counts('join')
# %%
corpus = [vocab[line] for line in subsampled]
corpus[:3]
# %%
#@save
def get_centers_and_contexts(corpus, max_window_size):
    """Return center words and context words in skip-gram."""
    centers, contexts = [], []
    for line in corpus:
        # To form a "center word--context word" pair, each sentence needs to
        # have at least 2 words
        if len(line) < 2:
            continue
        centers += line
        for i in range(len(line)):  # Context window centered at `i`
            window_size = random.randint(1, max_window_size)
            indices = list(range(max(0, i - window_size),
                                 min(len(line), i + 1 + window_size)))
            # Exclude the center word from the context words
            indices.remove(i)
            contexts.append([line[idx] for idx in indices])
    return centers, contexts
# %%
tiny_dataset = [list(range(7)), list(range(7, 10))]
print('dataset', tiny_dataset)
for center, context in zip(*get_centers_and_contexts(tiny_dataset, 2)):
    print('center', center, 'has contexts', context)
# %%
all_centers, all_contexts = get_centers_and_contexts(corpus, 5)
f'# center-context pairs: {sum([len(contexts) for contexts in all_contexts])}'
# %%
#@save
class RandomGenerator:
    """Randomly draw among {1, ..., n} according to n sampling weights."""
    def __init__(self, sampling_weights):
        # Exclude 
        self.population = list(range(1, len(sampling_weights) + 1))
        self.sampling_weights = sampling_weights
        self.candidates = []
        self.i = 0

    def draw(self):
        if self.i == len(self.candidates):
            # Cache `k` random sampling results
            self.candidates = random.choices(
                self.population, self.sampling_weights, k=10000)
            self.i = 0
        self.i += 1
        return self.candidates[self.i - 1]
# %%
#@save
def get_negatives(all_contexts, vocab, counter, K):
    """Return noise words in negative sampling."""
    # Sampling weights for words with indices 1, 2, ... (index 0 is the
    # excluded unknown token) in the vocabulary
    sampling_weights = [counter[vocab.to_tokens(i)]**0.75
                        for i in range(1, len(vocab))]
    all_negatives, generator = [], RandomGenerator(sampling_weights)
    for contexts in all_contexts:
        negatives = []
        while len(negatives) < len(contexts) * K:
            neg = generator.draw()
            # Noise words cannot be context words
            if neg not in contexts:
                negatives.append(neg)
        all_negatives.append(negatives)
    return all_negatives

all_negatives = get_negatives(all_contexts, vocab, counter, 5)
# %%
#@save
def batchify(data):
    """Return a minibatch of examples for skip-gram with negative sampling."""
    max_len = max(len(c) + len(n) for _, c, n in data)
    centers, contexts_negatives, masks, labels = [], [], [], []
    for center, context, negative in data:
        cur_len = len(context) + len(negative)
        centers += [center]
        contexts_negatives += [context + negative + [0] * (max_len - cur_len)]
        masks += [[1] * cur_len + [0] * (max_len - cur_len)]
        labels += [[1] * len(context) + [0] * (max_len - len(context))]
    return (d2l.reshape(d2l.tensor(centers), (-1, 1)), d2l.tensor(
        contexts_negatives), d2l.tensor(masks), d2l.tensor(labels))
# %%
x_1 = (1, [2, 2], [3, 3, 3, 3])
x_2 = (1, [2, 2, 2], [3, 3])
batch = batchify((x_1, x_2))

names = ['centers', 'contexts_negatives', 'masks', 'labels']
for name, data in zip(names, batch):
    print(name, '=', data)
# %%
#@save
def load_data_ptb(batch_size, max_window_size, num_noise_words):
    """Download the PTB dataset and then load it into memory."""
    num_workers = d2l.get_dataloader_workers()
    sentences = read_ptb()
    vocab = d2l.Vocab(sentences, min_freq=10)
    subsampled, counter = subsample(sentences, vocab)
    corpus = [vocab[line] for line in subsampled]
    all_centers, all_contexts = get_centers_and_contexts(
        corpus, max_window_size)
    all_negatives = get_negatives(
        all_contexts, vocab, counter, num_noise_words)

    class PTBDataset(torch.utils.data.Dataset):
        def __init__(self, centers, contexts, negatives):
            assert len(centers) == len(contexts) == len(negatives)
            self.centers = centers
            self.contexts = contexts
            self.negatives = negatives

        def __getitem__(self, index):
            return (self.centers[index], self.contexts[index],
                    self.negatives[index])

        def __len__(self):
            return len(self.centers)

    dataset = PTBDataset(all_centers, all_contexts, all_negatives)

    data_iter = torch.utils.data.DataLoader(dataset, batch_size, shuffle=True,
                                      collate_fn=batchify,
                                      num_workers=num_workers)
    return data_iter, vocab
# %%
data_iter, vocab = load_data_ptb(512, 5, 5)
for batch in data_iter:
    for name, data in zip(names, batch):
        print(name, 'shape:', data.shape)
    break
'''


WORD2VEC_PRETRAINING = r"""
from d2l import torch as d2l
import math
import torch
from torch import nn

batch_size, max_window_size, num_noise_words = 64, 5, 5  # port: batches shrunk (a small corpus)
data_iter, vocab = d2l.load_data_ptb(batch_size, max_window_size,
                                     num_noise_words)
# %%
embed = nn.Embedding(num_embeddings=20, embedding_dim=4)
print(f'Parameter embedding_weight ({next(embed.parameters()).shape}, '  # port: a layer's weight by position: tricycle's is weights (documented)
      f'dtype={next(embed.parameters()).dtype})')  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
x = d2l.tensor([[1, 2, 3], [4, 5, 6]])
embed(x)
# %%
def skip_gram(center, contexts_and_negatives, embed_v, embed_u):
    v = embed_v(center)
    u = embed_u(contexts_and_negatives)
    pred = torch.bmm(v, u.permute(0, 2, 1))
    return pred
# %%
skip_gram(torch.ones((2, 1), dtype=torch.long),
          torch.ones((2, 4), dtype=torch.long), embed, embed).shape
# %%
class SigmoidBCELoss(nn.Module):
    # Binary cross-entropy loss with masking
    def __init__(self):
        super().__init__()

    def forward(self, inputs, target, mask=None):
        out = nn.functional.binary_cross_entropy_with_logits(
            inputs, target, weight=mask, reduction="none")
        return out.mean(dim=1)

loss = SigmoidBCELoss()
# %%
pred = d2l.tensor([[1.1, -2.2, 3.3, -4.4]] * 2)
label = d2l.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
mask = d2l.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
loss(pred, label, mask) * mask.shape[1] / mask.sum(axis=1)
# %%
def sigmd(x):
    return -math.log(1 / (1 + math.exp(-x)))

print(f'{(sigmd(1.1) + sigmd(2.2) + sigmd(-3.3) + sigmd(4.4)) / 4:.4f}')
print(f'{(sigmd(-1.1) + sigmd(-2.2)) / 2:.4f}')
# %%
embed_size = 16  # port: sizes shrunk
net = nn.Sequential(nn.Embedding(num_embeddings=len(vocab),
                                 embedding_dim=embed_size),
                    nn.Embedding(num_embeddings=len(vocab),
                                 embedding_dim=embed_size))
# %%
def train(net, data_iter, lr, num_epochs, device=d2l.try_gpu()):
    def init_weights(module):
        if type(module) == nn.Embedding:
            nn.init.xavier_uniform_(next(module.parameters()))  # port: a layer's weight by position: tricycle's is weights (documented)
    net.apply(init_weights)
    net = net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[1, num_epochs])
    # Sum of normalized losses, no. of normalized losses
    metric = d2l.Accumulator(2)
    for epoch in range(num_epochs):
        timer, num_batches = d2l.Timer(), len(data_iter)
        for i, batch in enumerate(data_iter):
            optimizer.zero_grad()
            center, context_negative, mask, label = [
                data.to(device) for data in batch]

            pred = skip_gram(center, context_negative, net[0], net[1])
            l = (loss(pred.reshape(label.shape).float(), label.float(), mask)
                     / mask.sum(axis=1) * mask.shape[1])
            l.sum().backward()
            optimizer.step()
            metric.add(l.sum(), l.numel())
            if (i + 1) % (num_batches // 5) == 0 or i == num_batches - 1:
                animator.add(epoch + (i + 1) / num_batches,
                             (metric[0] / metric[1],))
    print(f'loss {metric[0] / metric[1]:.3f}, '
          f'{metric[1] / timer.stop():.1f} tokens/sec on {str(device)}')
# %%
lr, num_epochs = 0.05, 1  # port: one epoch (a faster rate)
train(net, data_iter, lr, num_epochs)
# %%
def get_similar_tokens(query_token, k, embed):
    W = next(embed.parameters()).data  # port: a layer's weight by position: tricycle's is weights (documented)
    x = W[vocab[query_token]]
    # Compute the cosine similarity. Add 1e-9 for numerical stability
    cos = torch.mv(W, x) / torch.sqrt(torch.sum(W * W, dim=1) *
                                      torch.sum(x * x) + 1e-9)
    topk = torch.topk(cos, k=k+1)[1].cpu().numpy().astype('int32')
    for i in topk[1:]:  # Remove the input words
        print(f'cosine sim={float(cos[i]):.3f}: {vocab.to_tokens(i)}')

get_similar_tokens('citizen', 3, net[0])  # port: a word of the corpus
"""


BERT = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
#@save
def get_tokens_and_segments(tokens_a, tokens_b=None):
    """Get tokens of the BERT input sequence and their segment IDs."""
    tokens = ['<cls>'] + tokens_a + ['<sep>']
    # 0 and 1 are marking segment A and B, respectively
    segments = [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += tokens_b + ['<sep>']
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments
# %%
#@save
class BERTEncoder(nn.Module):
    """BERT encoder."""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
                 num_blks, dropout, max_len=1000, **kwargs):
        super(BERTEncoder, self).__init__(**kwargs)
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.segment_embedding = nn.Embedding(2, num_hiddens)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(f"{i}", d2l.TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, True))
        # In BERT, positional embeddings are learnable, thus we create a
        # parameter of positional embeddings that are long enough
        self.pos_embedding = nn.Parameter(torch.randn(1, max_len,
                                                      num_hiddens))

    def forward(self, tokens, segments, valid_lens):
        # Shape of `X` remains unchanged in the following code snippet:
        # (batch size, max sequence length, `num_hiddens`)
        X = self.token_embedding(tokens) + self.segment_embedding(segments)
        X = X + self.pos_embedding[:, :X.shape[1], :]
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X
# %%
vocab_size, num_hiddens, ffn_num_hiddens, num_heads = 100, 16, 32, 4  # port: sizes shrunk
ffn_num_input, num_blks, dropout = 16, 2, 0.2  # port: sizes shrunk
encoder = BERTEncoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
                      num_blks, dropout)
# %%
tokens = torch.randint(0, vocab_size, (2, 8))
segments = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]])
encoded_X = encoder(tokens, segments, None)
encoded_X.shape
# %%
#@save
class MaskLM(nn.Module):
    """The masked language model task of BERT."""
    def __init__(self, vocab_size, num_hiddens, **kwargs):
        super(MaskLM, self).__init__(**kwargs)
        self.mlp = nn.Sequential(nn.LazyLinear(num_hiddens),
                                 nn.ReLU(),
                                 nn.LayerNorm(num_hiddens),
                                 nn.LazyLinear(vocab_size))

    def forward(self, X, pred_positions):
        num_pred_positions = pred_positions.shape[1]
        pred_positions = pred_positions.reshape(-1)
        batch_size = X.shape[0]
        batch_idx = torch.arange(0, batch_size)
        # Suppose that `batch_size` = 2, `num_pred_positions` = 3, then
        # `batch_idx` is `torch.tensor([0, 0, 0, 1, 1, 1])`
        batch_idx = torch.repeat_interleave(batch_idx, num_pred_positions)
        masked_X = X[batch_idx, pred_positions]
        masked_X = masked_X.reshape((batch_size, num_pred_positions, -1))
        mlm_Y_hat = self.mlp(masked_X)
        return mlm_Y_hat
# %%
mlm = MaskLM(vocab_size, num_hiddens)
mlm_positions = torch.tensor([[1, 5, 2], [6, 1, 5]])
mlm_Y_hat = mlm(encoded_X, mlm_positions)
mlm_Y_hat.shape
# %%
mlm_Y = torch.tensor([[7, 8, 9], [10, 20, 30]])
loss = nn.CrossEntropyLoss(reduction='none')
mlm_l = loss(mlm_Y_hat.reshape((-1, vocab_size)), mlm_Y.reshape(-1))
mlm_l.shape
# %%
#@save
class NextSentencePred(nn.Module):
    """The next sentence prediction task of BERT."""
    def __init__(self, **kwargs):
        super(NextSentencePred, self).__init__(**kwargs)
        self.output = nn.LazyLinear(2)

    def forward(self, X):
        # `X` shape: (batch size, `num_hiddens`)
        return self.output(X)
# %%
# PyTorch by default will not flatten the tensor as seen in mxnet where, if
# flatten=True, all but the first axis of input data are collapsed together
encoded_X = torch.flatten(encoded_X, start_dim=1)
# input_shape for NSP: (batch size, `num_hiddens`)
nsp = NextSentencePred()
nsp_Y_hat = nsp(encoded_X)
nsp_Y_hat.shape
# %%
nsp_y = torch.tensor([0, 1])
nsp_l = loss(nsp_Y_hat, nsp_y)
nsp_l.shape
# %%
#@save
class BERTModel(nn.Module):
    """The BERT model."""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, 
                 num_heads, num_blks, dropout, max_len=1000):
        super(BERTModel, self).__init__()
        self.encoder = BERTEncoder(vocab_size, num_hiddens, ffn_num_hiddens,
                                   num_heads, num_blks, dropout,
                                   max_len=max_len)
        self.hidden = nn.Sequential(nn.LazyLinear(num_hiddens),
                                    nn.Tanh())
        self.mlm = MaskLM(vocab_size, num_hiddens)
        self.nsp = NextSentencePred()

    def forward(self, tokens, segments, valid_lens=None, pred_positions=None):
        encoded_X = self.encoder(tokens, segments, valid_lens)
        if pred_positions is not None:
            mlm_Y_hat = self.mlm(encoded_X, pred_positions)
        else:
            mlm_Y_hat = None
        # The hidden layer of the MLP classifier for next sentence prediction.
        # 0 is the index of the '<cls>' token
        nsp_Y_hat = self.nsp(self.hidden(encoded_X[:, 0, :]))
        return encoded_X, mlm_Y_hat, nsp_Y_hat
'''


BERT_DATASET = r'''
from d2l import torch as d2l
import os
import random
import torch
# %%
#@save
d2l.DATA_HUB['wikitext-2'] = (
    'https://s3.amazonaws.com/research.metamind.io/wikitext/'
    'wikitext-2-v1.zip', '3c914d17d80b1459be871a5039ac23e752a53cbe')

#@save
def _read_wiki(data_dir):
    file_name = os.path.join(data_dir, 'wiki.train.tokens')
    with open(file_name, 'r') as f:
        lines = f.readlines()
    # Uppercase letters are converted to lowercase ones
    paragraphs = [line.strip().lower().split(' . ')
                  for line in lines if len(line.split(' . ')) >= 2]
    random.shuffle(paragraphs)
    return paragraphs
# %%
#@save
def _get_next_sentence(sentence, next_sentence, paragraphs):
    if random.random() < 0.5:
        is_next = True
    else:
        # `paragraphs` is a list of lists of lists
        next_sentence = random.choice(random.choice(paragraphs))
        is_next = False
    return sentence, next_sentence, is_next
# %%
#@save
def _get_nsp_data_from_paragraph(paragraph, paragraphs, vocab, max_len):
    nsp_data_from_paragraph = []
    for i in range(len(paragraph) - 1):
        tokens_a, tokens_b, is_next = _get_next_sentence(
            paragraph[i], paragraph[i + 1], paragraphs)
        # Consider 1 '<cls>' token and 2 '<sep>' tokens
        if len(tokens_a) + len(tokens_b) + 3 > max_len:
            continue
        tokens, segments = d2l.get_tokens_and_segments(tokens_a, tokens_b)
        nsp_data_from_paragraph.append((tokens, segments, is_next))
    return nsp_data_from_paragraph
# %%
#@save
def _replace_mlm_tokens(tokens, candidate_pred_positions, num_mlm_preds,
                        vocab):
    # For the input of a masked language model, make a new copy of tokens and
    # replace some of them by '<mask>' or random tokens
    mlm_input_tokens = [token for token in tokens]
    pred_positions_and_labels = []
    # Shuffle for getting 15% random tokens for prediction in the masked
    # language modeling task
    random.shuffle(candidate_pred_positions)
    for mlm_pred_position in candidate_pred_positions:
        if len(pred_positions_and_labels) >= num_mlm_preds:
            break
        masked_token = None
        # 80% of the time: replace the word with the '<mask>' token
        if random.random() < 0.8:
            masked_token = '<mask>'
        else:
            # 10% of the time: keep the word unchanged
            if random.random() < 0.5:
                masked_token = tokens[mlm_pred_position]
            # 10% of the time: replace the word with a random word
            else:
                masked_token = random.choice(vocab.idx_to_token)
        mlm_input_tokens[mlm_pred_position] = masked_token
        pred_positions_and_labels.append(
            (mlm_pred_position, tokens[mlm_pred_position]))
    return mlm_input_tokens, pred_positions_and_labels
# %%
#@save
def _get_mlm_data_from_tokens(tokens, vocab):
    candidate_pred_positions = []
    # `tokens` is a list of strings
    for i, token in enumerate(tokens):
        # Special tokens are not predicted in the masked language modeling
        # task
        if token in ['<cls>', '<sep>']:
            continue
        candidate_pred_positions.append(i)
    # 15% of random tokens are predicted in the masked language modeling task
    num_mlm_preds = max(1, round(len(tokens) * 0.15))
    mlm_input_tokens, pred_positions_and_labels = _replace_mlm_tokens(
        tokens, candidate_pred_positions, num_mlm_preds, vocab)
    pred_positions_and_labels = sorted(pred_positions_and_labels,
                                       key=lambda x: x[0])
    pred_positions = [v[0] for v in pred_positions_and_labels]
    mlm_pred_labels = [v[1] for v in pred_positions_and_labels]
    return vocab[mlm_input_tokens], pred_positions, vocab[mlm_pred_labels]
# %%
#@save
def _pad_bert_inputs(examples, max_len, vocab):
    max_num_mlm_preds = round(max_len * 0.15)
    all_token_ids, all_segments, valid_lens,  = [], [], []
    all_pred_positions, all_mlm_weights, all_mlm_labels = [], [], []
    nsp_labels = []
    for (token_ids, pred_positions, mlm_pred_label_ids, segments,
         is_next) in examples:
        all_token_ids.append(torch.tensor(token_ids + [vocab['<pad>']] * (
            max_len - len(token_ids)), dtype=torch.long))
        all_segments.append(torch.tensor(segments + [0] * (
            max_len - len(segments)), dtype=torch.long))
        # `valid_lens` excludes count of '<pad>' tokens
        valid_lens.append(torch.tensor(len(token_ids), dtype=torch.float32))
        all_pred_positions.append(torch.tensor(pred_positions + [0] * (
            max_num_mlm_preds - len(pred_positions)), dtype=torch.long))
        # Predictions of padded tokens will be filtered out in the loss via
        # multiplication of 0 weights
        all_mlm_weights.append(
            torch.tensor([1.0] * len(mlm_pred_label_ids) + [0.0] * (
                max_num_mlm_preds - len(pred_positions)),
                dtype=torch.float32))
        all_mlm_labels.append(torch.tensor(mlm_pred_label_ids + [0] * (
            max_num_mlm_preds - len(mlm_pred_label_ids)), dtype=torch.long))
        nsp_labels.append(torch.tensor(is_next, dtype=torch.long))
    return (all_token_ids, all_segments, valid_lens, all_pred_positions,
            all_mlm_weights, all_mlm_labels, nsp_labels)
# %%
#@save
class _WikiTextDataset(torch.utils.data.Dataset):
    def __init__(self, paragraphs, max_len):
        # Input `paragraphs[i]` is a list of sentence strings representing a
        # paragraph; while output `paragraphs[i]` is a list of sentences
        # representing a paragraph, where each sentence is a list of tokens
        paragraphs = [d2l.tokenize(
            paragraph, token='word') for paragraph in paragraphs]
        sentences = [sentence for paragraph in paragraphs
                     for sentence in paragraph]
        self.vocab = d2l.Vocab(sentences, min_freq=5, reserved_tokens=[
            '<pad>', '<mask>', '<cls>', '<sep>'])
        # Get data for the next sentence prediction task
        examples = []
        for paragraph in paragraphs:
            examples.extend(_get_nsp_data_from_paragraph(
                paragraph, paragraphs, self.vocab, max_len))
        # Get data for the masked language model task
        examples = [(_get_mlm_data_from_tokens(tokens, self.vocab)
                      + (segments, is_next))
                     for tokens, segments, is_next in examples]
        # Pad inputs
        (self.all_token_ids, self.all_segments, self.valid_lens,
         self.all_pred_positions, self.all_mlm_weights,
         self.all_mlm_labels, self.nsp_labels) = _pad_bert_inputs(
            examples, max_len, self.vocab)

    def __getitem__(self, idx):
        return (self.all_token_ids[idx], self.all_segments[idx],
                self.valid_lens[idx], self.all_pred_positions[idx],
                self.all_mlm_weights[idx], self.all_mlm_labels[idx],
                self.nsp_labels[idx])

    def __len__(self):
        return len(self.all_token_ids)
# %%
#@save
def load_data_wiki(batch_size, max_len):
    """Load the WikiText-2 dataset."""
    num_workers = d2l.get_dataloader_workers()
    data_dir = '../data/wikitext-2'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    paragraphs = _read_wiki(data_dir)
    train_set = _WikiTextDataset(paragraphs, max_len)
    train_iter = torch.utils.data.DataLoader(train_set, batch_size,
                                        shuffle=True, num_workers=num_workers)
    return train_iter, train_set.vocab
# %%
batch_size, max_len = 8, 16  # port: sizes shrunk (a small corpus)
train_iter, vocab = load_data_wiki(batch_size, max_len)

for (tokens_X, segments_X, valid_lens_x, pred_positions_X, mlm_weights_X,
     mlm_Y, nsp_y) in train_iter:
    print(tokens_X.shape, segments_X.shape, valid_lens_x.shape,
          pred_positions_X.shape, mlm_weights_X.shape, mlm_Y.shape,
          nsp_y.shape)
    break
# %%
len(vocab)
'''


BERT_PRETRAINING = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
batch_size, max_len = 8, 16  # port: sizes shrunk (a small corpus)
train_iter, vocab = d2l.load_data_wiki(batch_size, max_len)
# %%
net = d2l.BERTModel(len(vocab), num_hiddens=16,   # port: sizes shrunk
                    ffn_num_hiddens=32, num_heads=2, num_blks=2, dropout=0.2)  # port: sizes shrunk
devices = [d2l.try_gpu()]  # port: the book's try_all_gpus is [] without a GPU (its docstring says [cpu()]): the CPU
loss = nn.CrossEntropyLoss()
# %%
#@save
def _get_batch_loss_bert(net, loss, vocab_size, tokens_X,
                         segments_X, valid_lens_x,
                         pred_positions_X, mlm_weights_X,
                         mlm_Y, nsp_y):
    # Forward pass
    _, mlm_Y_hat, nsp_Y_hat = net(tokens_X, segments_X,
                                  valid_lens_x.reshape(-1),
                                  pred_positions_X)
    # Compute masked language model loss
    mlm_l = loss(mlm_Y_hat.reshape(-1, vocab_size), mlm_Y.reshape(-1)) *\
    mlm_weights_X.reshape(-1, 1)
    mlm_l = mlm_l.sum() / (mlm_weights_X.sum() + 1e-8)
    # Compute next sentence prediction loss
    nsp_l = loss(nsp_Y_hat, nsp_y)
    l = mlm_l + nsp_l
    return mlm_l, nsp_l, l
# %%
def train_bert(train_iter, net, loss, vocab_size, devices, num_steps):
    net(*next(iter(train_iter))[:4])
    net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    trainer = torch.optim.Adam(net.parameters(), lr=0.01)
    step, timer = 0, d2l.Timer()
    animator = d2l.Animator(xlabel='step', ylabel='loss',
                            xlim=[1, num_steps], legend=['mlm', 'nsp'])
    # Sum of masked language modeling losses, sum of next sentence prediction
    # losses, no. of sentence pairs, count
    metric = d2l.Accumulator(4)
    num_steps_reached = False
    while step < num_steps and not num_steps_reached:
        for tokens_X, segments_X, valid_lens_x, pred_positions_X,\
            mlm_weights_X, mlm_Y, nsp_y in train_iter:
            tokens_X = tokens_X.to(devices[0])
            segments_X = segments_X.to(devices[0])
            valid_lens_x = valid_lens_x.to(devices[0])
            pred_positions_X = pred_positions_X.to(devices[0])
            mlm_weights_X = mlm_weights_X.to(devices[0])
            mlm_Y, nsp_y = mlm_Y.to(devices[0]), nsp_y.to(devices[0])
            trainer.zero_grad()
            timer.start()
            mlm_l, nsp_l, l = _get_batch_loss_bert(
                net, loss, vocab_size, tokens_X, segments_X, valid_lens_x,
                pred_positions_X, mlm_weights_X, mlm_Y, nsp_y)
            l.backward()
            trainer.step()
            metric.add(mlm_l, nsp_l, tokens_X.shape[0], 1)
            timer.stop()
            animator.add(step + 1,
                         (metric[0] / metric[3], metric[1] / metric[3]))
            step += 1
            if step == num_steps:
                num_steps_reached = True
                break

    print(f'MLM loss {metric[0] / metric[3]:.3f}, '
          f'NSP loss {metric[1] / metric[3]:.3f}')
    print(f'{metric[2] / timer.sum():.1f} sentence pairs/sec on '
          f'{str(devices)}')
# %%
train_bert(train_iter, net, loss, len(vocab), devices, 8)  # port: 8 steps
# %%
def get_bert_encoding(net, tokens_a, tokens_b=None):
    tokens, segments = d2l.get_tokens_and_segments(tokens_a, tokens_b)
    token_ids = torch.tensor(vocab[tokens], device=devices[0]).unsqueeze(0)
    segments = torch.tensor(segments, device=devices[0]).unsqueeze(0)
    valid_len = torch.tensor(len(tokens), device=devices[0]).unsqueeze(0)
    encoded_X, _, _ = net(token_ids, segments, valid_len)
    return encoded_X
# %%
tokens_a = ['a', 'crane', 'is', 'flying']
encoded_text = get_bert_encoding(net, tokens_a)
# Tokens: '<cls>', 'a', 'crane', 'is', 'flying', '<sep>'
encoded_text_cls = encoded_text[:, 0, :]
encoded_text_crane = encoded_text[:, 2, :]
encoded_text.shape, encoded_text_cls.shape, encoded_text_crane[0][:3]
# %%
tokens_a, tokens_b = ['a', 'crane', 'driver', 'came'], ['he', 'just', 'left']
encoded_pair = get_bert_encoding(net, tokens_a, tokens_b)
# Tokens: '<cls>', 'a', 'crane', 'driver', 'came', '<sep>', 'he', 'just',
# 'left', '<sep>'
encoded_pair_cls = encoded_pair[:, 0, :]
encoded_pair_crane = encoded_pair[:, 2, :]
encoded_pair.shape, encoded_pair_cls.shape, encoded_pair_crane[0][:3]
"""


SENTIMENT_DATASET = r'''
from d2l import torch as d2l
import torch
from torch import nn
import os
# %%
#@save
d2l.DATA_HUB['aclImdb'] = (d2l.DATA_URL + 'aclImdb_v1.tar.gz', 
                          '01ada507287d82875905620988597833ad4e0903')

data_dir = '../data/aclImdb'  # port: no download: the test wrote a small stand-in there, in the data set's layout
# %%
#@save
def read_imdb(data_dir, is_train):
    """Read the IMDb review dataset text sequences and labels."""
    data, labels = [], []
    for label in ('pos', 'neg'):
        folder_name = os.path.join(data_dir, 'train' if is_train else 'test',
                                   label)
        for file in os.listdir(folder_name):
            with open(os.path.join(folder_name, file), 'rb') as f:
                review = f.read().decode('utf-8').replace('\n', '')
                data.append(review)
                labels.append(1 if label == 'pos' else 0)
    return data, labels

train_data = read_imdb(data_dir, is_train=True)
print('# trainings:', len(train_data[0]))
for x, y in zip(train_data[0][:3], train_data[1][:3]):
    print('label:', y, 'review:', x[:60])
# %%
train_tokens = d2l.tokenize(train_data[0], token='word')
vocab = d2l.Vocab(train_tokens, min_freq=5, reserved_tokens=['<pad>'])
# %%
d2l.set_figsize()
d2l.plt.xlabel('# tokens per review')
d2l.plt.ylabel('count')
d2l.plt.hist([len(line) for line in train_tokens], bins=range(0, 1000, 50));
# %%
num_steps = 20  # sequence length  # port: shorter reviews
train_features = d2l.tensor([d2l.truncate_pad(
    vocab[line], num_steps, vocab['<pad>']) for line in train_tokens])
print(train_features.shape)
# %%
train_iter = d2l.load_array((train_features, torch.tensor(train_data[1])), 8)  # port: batches shrunk (a small set)

for X, y in train_iter:
    print('X:', X.shape, ', y:', y.shape)
    break
print('# batches:', len(train_iter))
# %%
#@save
def load_data_imdb(batch_size, num_steps=500):
    """Return data iterators and the vocabulary of the IMDb review dataset."""
    data_dir = '../data/aclImdb'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    train_data = read_imdb(data_dir, True)
    test_data = read_imdb(data_dir, False)
    train_tokens = d2l.tokenize(train_data[0], token='word')
    test_tokens = d2l.tokenize(test_data[0], token='word')
    vocab = d2l.Vocab(train_tokens, min_freq=5)
    train_features = torch.tensor([d2l.truncate_pad(
        vocab[line], num_steps, vocab['<pad>']) for line in train_tokens])
    test_features = torch.tensor([d2l.truncate_pad(
        vocab[line], num_steps, vocab['<pad>']) for line in test_tokens])
    train_iter = d2l.load_array((train_features, torch.tensor(train_data[1])),
                                batch_size)
    test_iter = d2l.load_array((test_features, torch.tensor(test_data[1])),
                               batch_size,
                               is_train=False)
    return train_iter, test_iter, vocab
'''


SENTIMENT_RNN = r'''
from d2l import torch as d2l
import torch
from torch import nn

batch_size = 8  # port: batches shrunk (a small set)
train_iter, test_iter, vocab = d2l.load_data_imdb(batch_size, 20)  # port: shorter reviews
# %%
class BiRNN(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens,
                 num_layers, **kwargs):
        super(BiRNN, self).__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # Set `bidirectional` to True to get a bidirectional RNN
        self.encoder = nn.LSTM(embed_size, num_hiddens, num_layers=num_layers,
                                bidirectional=True)
        self.decoder = nn.Linear(4 * num_hiddens, 2)

    def forward(self, inputs):
        # The shape of `inputs` is (batch size, no. of time steps). Because
        # LSTM requires its input's first dimension to be the temporal
        # dimension, the input is transposed before obtaining token
        # representations. The output shape is (no. of time steps, batch size,
        # word vector dimension)
        embeddings = self.embedding(inputs.T)
        self.encoder.flatten_parameters()
        # Returns hidden states of the last hidden layer at different time
        # steps. The shape of `outputs` is (no. of time steps, batch size,
        # 2 * no. of hidden units)
        outputs, _ = self.encoder(embeddings)
        # Concatenate the hidden states at the initial and final time steps as
        # the input of the fully connected layer. Its shape is (batch size,
        # 4 * no. of hidden units)
        encoding = torch.cat((outputs[0], outputs[-1]), dim=1) 
        outs = self.decoder(encoding)
        return outs
# %%
embed_size, num_hiddens, num_layers, devices = 16, 8, 2, [d2l.try_gpu()]  # port: sizes shrunk; the book's try_all_gpus is [] without a GPU: the CPU
net = BiRNN(len(vocab), embed_size, num_hiddens, num_layers)
# %%
def init_weights(module):
    if type(module) == nn.Linear:
        nn.init.xavier_uniform_(next(module.parameters()))  # port: a layer's weight by position: tricycle's is weights (documented)
    if type(module) == nn.LSTM:
        for param in module._flat_weights_names:
            if "weight" in param:
                nn.init.xavier_uniform_(module._parameters[param])
net.apply(init_weights);
# %%
glove_embedding = d2l.TokenEmbedding('glove.6b.100d')
# %%
embeds = glove_embedding[vocab.idx_to_token]
embeds.shape
# %%
next(net.embedding.parameters()).data.copy_(embeds)  # port: a layer's weight by position: tricycle's is weights (documented)
next(net.embedding.parameters()).requires_grad = False  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
lr, num_epochs = 0.01, 2  # port: two epochs
trainer = torch.optim.Adam(net.parameters(), lr=lr)
loss = nn.CrossEntropyLoss(reduction="none")
d2l.train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs, devices)
# %%
#@save
def predict_sentiment(net, vocab, sequence):
    """Predict the sentiment of a text sequence."""
    sequence = torch.tensor(vocab[sequence.split()], device=d2l.try_gpu())
    label = torch.argmax(net(sequence.reshape(1, -1)), dim=1)
    return 'positive' if label == 1 else 'negative'
# %%
predict_sentiment(net, vocab, 'this movie is so great')
# %%
predict_sentiment(net, vocab, 'this movie is so bad')
'''


SENTIMENT_CNN = r"""
from d2l import torch as d2l
import torch
from torch import nn

batch_size = 8  # port: batches shrunk (a small set)
train_iter, test_iter, vocab = d2l.load_data_imdb(batch_size, 20)  # port: shorter reviews
# %%
def corr1d(X, K):
    w = K.shape[0]
    Y = d2l.zeros((X.shape[0] - w + 1))
    for i in range(Y.shape[0]):
        Y[i] = (X[i: i + w] * K).sum()
    return Y
# %%
X, K = d2l.tensor([0, 1, 2, 3, 4, 5, 6]), d2l.tensor([1, 2])
corr1d(X, K)
# %%
def corr1d_multi_in(X, K):
    # First, iterate through the 0th dimension (channel dimension) of `X` and
    # `K`. Then, add them together
    return sum(corr1d(x, k) for x, k in zip(X, K))

X = d2l.tensor([[0, 1, 2, 3, 4, 5, 6],
              [1, 2, 3, 4, 5, 6, 7],
              [2, 3, 4, 5, 6, 7, 8]])
K = d2l.tensor([[1, 2], [3, 4], [-1, -3]])
corr1d_multi_in(X, K)
# %%
class TextCNN(nn.Module):
    def __init__(self, vocab_size, embed_size, kernel_sizes, num_channels,
                 **kwargs):
        super(TextCNN, self).__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        # The embedding layer not to be trained
        self.constant_embedding = nn.Embedding(vocab_size, embed_size)
        self.dropout = nn.Dropout(0.5)
        self.decoder = nn.Linear(sum(num_channels), 2)
        # The max-over-time pooling layer has no parameters, so this instance
        # can be shared
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.relu = nn.ReLU()
        # Create multiple one-dimensional convolutional layers
        self.convs = nn.ModuleList()
        for c, k in zip(num_channels, kernel_sizes):
            self.convs.append(nn.Conv1d(2 * embed_size, c, k))

    def forward(self, inputs):
        # Concatenate two embedding layer outputs with shape (batch size, no.
        # of tokens, token vector dimension) along vectors
        embeddings = torch.cat((
            self.embedding(inputs), self.constant_embedding(inputs)), dim=2)
        # Per the input format of one-dimensional convolutional layers,
        # rearrange the tensor so that the second dimension stores channels
        embeddings = embeddings.permute(0, 2, 1)
        # For each one-dimensional convolutional layer, after max-over-time
        # pooling, a tensor of shape (batch size, no. of channels, 1) is
        # obtained. Remove the last dimension and concatenate along channels
        encoding = torch.cat([
            torch.squeeze(self.relu(self.pool(conv(embeddings))), dim=-1)
            for conv in self.convs], dim=1)
        outputs = self.decoder(self.dropout(encoding))
        return outputs
# %%
embed_size, kernel_sizes, nums_channels = 16, [3, 4, 5], [8, 8, 8]  # port: sizes shrunk
devices = [d2l.try_gpu()]  # port: the book's try_all_gpus is [] without a GPU (its docstring says [cpu()]): the CPU
net = TextCNN(len(vocab), embed_size, kernel_sizes, nums_channels)

def init_weights(module):
    if type(module) in (nn.Linear, nn.Conv1d):
        nn.init.xavier_uniform_(next(module.parameters()))  # port: a layer's weight by position: tricycle's is weights (documented)

net.apply(init_weights);
# %%
glove_embedding = d2l.TokenEmbedding('glove.6b.100d')
embeds = glove_embedding[vocab.idx_to_token]
next(net.embedding.parameters()).data.copy_(embeds)  # port: a layer's weight by position: tricycle's is weights (documented)
next(net.constant_embedding.parameters()).data.copy_(embeds)  # port: a layer's weight by position: tricycle's is weights (documented)
next(net.constant_embedding.parameters()).requires_grad = False  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
lr, num_epochs = 0.01, 2  # port: two epochs (a faster rate)
trainer = torch.optim.Adam(net.parameters(), lr=lr)
loss = nn.CrossEntropyLoss(reduction="none")
d2l.train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs, devices)
# %%
d2l.predict_sentiment(net, vocab, 'this movie is so great')
# %%
d2l.predict_sentiment(net, vocab, 'this movie is so bad')
"""


NLI_DATASET = r'''
from d2l import torch as d2l
import torch
from torch import nn
import os
import re

#@save
d2l.DATA_HUB['SNLI'] = (
    'https://nlp.stanford.edu/projects/snli/snli_1.0.zip',
    '9fcde07509c7e87ec61c640c1b2753d9041758e4')

data_dir = '../data/snli_1.0'  # port: no download: the test wrote a small stand-in there, in the data set's layout
# %%
#@save
def read_snli(data_dir, is_train):
    """Read the SNLI dataset into premises, hypotheses, and labels."""
    def extract_text(s):
        # Remove information that will not be used by us
        s = re.sub('\\(', '', s) 
        s = re.sub('\\)', '', s)
        # Substitute two or more consecutive whitespace with space
        s = re.sub('\\s{2,}', ' ', s)
        return s.strip()
    label_set = {'entailment': 0, 'contradiction': 1, 'neutral': 2}
    file_name = os.path.join(data_dir, 'snli_1.0_train.txt'
                             if is_train else 'snli_1.0_test.txt')
    with open(file_name, 'r') as f:
        rows = [row.split('\t') for row in f.readlines()[1:]]
    premises = [extract_text(row[1]) for row in rows if row[0] in label_set]
    hypotheses = [extract_text(row[2]) for row in rows if row[0] in label_set]
    labels = [label_set[row[0]] for row in rows if row[0] in label_set]
    return premises, hypotheses, labels
# %%
train_data = read_snli(data_dir, is_train=True)
for x0, x1, y in zip(train_data[0][:3], train_data[1][:3], train_data[2][:3]):
    print('premise:', x0)
    print('hypothesis:', x1)
    print('label:', y)
# %%
test_data = read_snli(data_dir, is_train=False)
for data in [train_data, test_data]:
    print([[row for row in data[2]].count(i) for i in range(3)])
# %%
#@save
class SNLIDataset(torch.utils.data.Dataset):
    """A customized dataset to load the SNLI dataset."""
    def __init__(self, dataset, num_steps, vocab=None):
        self.num_steps = num_steps
        all_premise_tokens = d2l.tokenize(dataset[0])
        all_hypothesis_tokens = d2l.tokenize(dataset[1])
        if vocab is None:
            self.vocab = d2l.Vocab(all_premise_tokens + all_hypothesis_tokens,
                                   min_freq=5, reserved_tokens=['<pad>'])
        else:
            self.vocab = vocab
        self.premises = self._pad(all_premise_tokens)
        self.hypotheses = self._pad(all_hypothesis_tokens)
        self.labels = torch.tensor(dataset[2])
        print('read ' + str(len(self.premises)) + ' examples')

    def _pad(self, lines):
        return torch.tensor([d2l.truncate_pad(
            self.vocab[line], self.num_steps, self.vocab['<pad>'])
                         for line in lines])

    def __getitem__(self, idx):
        return [self.premises[idx], self.hypotheses[idx]], self.labels[idx]  # port: a list: tricycle's default_collate gives a tuple of a tuple where torch's gives a list, which train_ch13 asks for (reported)

    def __len__(self):
        return len(self.premises)
# %%
#@save
def load_data_snli(batch_size, num_steps=50):
    """Download the SNLI dataset and return data iterators and vocabulary."""
    num_workers = d2l.get_dataloader_workers()
    data_dir = '../data/snli_1.0'  # port: no download: the test wrote a small stand-in there, in the data set's layout
    train_data = read_snli(data_dir, True)
    test_data = read_snli(data_dir, False)
    train_set = SNLIDataset(train_data, num_steps)
    test_set = SNLIDataset(test_data, num_steps, train_set.vocab)
    train_iter = torch.utils.data.DataLoader(train_set, batch_size,
                                             shuffle=True,
                                             num_workers=num_workers)
    test_iter = torch.utils.data.DataLoader(test_set, batch_size,
                                            shuffle=False,
                                            num_workers=num_workers)
    return train_iter, test_iter, train_set.vocab
# %%
train_iter, test_iter, vocab = load_data_snli(8, 10)  # port: sizes shrunk (a small set)
len(vocab)
# %%
for X, Y in train_iter:
    print(X[0].shape)
    print(X[1].shape)
    print(Y.shape)
    break
'''


NLI_ATTENTION = r'''
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
def mlp(num_inputs, num_hiddens, flatten):
    net = []
    net.append(nn.Dropout(0.2))
    net.append(nn.Linear(num_inputs, num_hiddens))
    net.append(nn.ReLU())
    if flatten:
        net.append(nn.Flatten(start_dim=1))
    net.append(nn.Dropout(0.2))
    net.append(nn.Linear(num_hiddens, num_hiddens))
    net.append(nn.ReLU())
    if flatten:
        net.append(nn.Flatten(start_dim=1))
    return nn.Sequential(*net)
# %%
class Attend(nn.Module):
    def __init__(self, num_inputs, num_hiddens, **kwargs):
        super(Attend, self).__init__(**kwargs)
        self.f = mlp(num_inputs, num_hiddens, flatten=False)

    def forward(self, A, B):
        # Shape of `A`/`B`: (`batch_size`, no. of tokens in sequence A/B,
        # `embed_size`)
        # Shape of `f_A`/`f_B`: (`batch_size`, no. of tokens in sequence A/B,
        # `num_hiddens`)
        f_A = self.f(A)
        f_B = self.f(B)
        # Shape of `e`: (`batch_size`, no. of tokens in sequence A,
        # no. of tokens in sequence B)
        e = torch.bmm(f_A, f_B.permute(0, 2, 1))
        # Shape of `beta`: (`batch_size`, no. of tokens in sequence A,
        # `embed_size`), where sequence B is softly aligned with each token
        # (axis 1 of `beta`) in sequence A
        beta = torch.bmm(F.softmax(e, dim=-1), B)
        # Shape of `alpha`: (`batch_size`, no. of tokens in sequence B,
        # `embed_size`), where sequence A is softly aligned with each token
        # (axis 1 of `alpha`) in sequence B
        alpha = torch.bmm(F.softmax(e.permute(0, 2, 1), dim=-1), A)
        return beta, alpha
# %%
class Compare(nn.Module):
    def __init__(self, num_inputs, num_hiddens, **kwargs):
        super(Compare, self).__init__(**kwargs)
        self.g = mlp(num_inputs, num_hiddens, flatten=False)

    def forward(self, A, B, beta, alpha):
        V_A = self.g(torch.cat([A, beta], dim=2))
        V_B = self.g(torch.cat([B, alpha], dim=2))
        return V_A, V_B
# %%
class Aggregate(nn.Module):
    def __init__(self, num_inputs, num_hiddens, num_outputs, **kwargs):
        super(Aggregate, self).__init__(**kwargs)
        self.h = mlp(num_inputs, num_hiddens, flatten=True)
        self.linear = nn.Linear(num_hiddens, num_outputs)

    def forward(self, V_A, V_B):
        # Sum up both sets of comparison vectors
        V_A = V_A.sum(dim=1)
        V_B = V_B.sum(dim=1)
        # Feed the concatenation of both summarization results into an MLP
        Y_hat = self.linear(self.h(torch.cat([V_A, V_B], dim=1)))
        return Y_hat
# %%
class DecomposableAttention(nn.Module):
    def __init__(self, vocab, embed_size, num_hiddens, num_inputs_attend=100,
                 num_inputs_compare=200, num_inputs_agg=400, **kwargs):
        super(DecomposableAttention, self).__init__(**kwargs)
        self.embedding = nn.Embedding(len(vocab), embed_size)
        self.attend = Attend(num_inputs_attend, num_hiddens)
        self.compare = Compare(num_inputs_compare, num_hiddens)
        # There are 3 possible outputs: entailment, contradiction, and neutral
        self.aggregate = Aggregate(num_inputs_agg, num_hiddens, num_outputs=3)

    def forward(self, X):
        premises, hypotheses = X
        A = self.embedding(premises)
        B = self.embedding(hypotheses)
        beta, alpha = self.attend(A, B)
        V_A, V_B = self.compare(A, B, beta, alpha)
        Y_hat = self.aggregate(V_A, V_B)
        return Y_hat
# %%
batch_size, num_steps = 8, 10  # port: sizes shrunk (a small set)
train_iter, test_iter, vocab = d2l.load_data_snli(batch_size, num_steps)
# %%
embed_size, num_hiddens, devices = 16, 16, [d2l.try_gpu()]  # port: sizes shrunk; the book's try_all_gpus is [] without a GPU: the CPU
net = DecomposableAttention(vocab, embed_size, num_hiddens, 16, 32, 32)  # port: the inputs' sizes of the shrunk embedding and layers
glove_embedding = d2l.TokenEmbedding('glove.6b.100d')
embeds = glove_embedding[vocab.idx_to_token]
next(net.embedding.parameters()).data.copy_(embeds);  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
lr, num_epochs = 0.01, 2  # port: two epochs (a faster rate)
trainer = torch.optim.Adam(net.parameters(), lr=lr)
loss = nn.CrossEntropyLoss(reduction="none")
d2l.train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs, devices)
# %%
#@save
def predict_snli(net, vocab, premise, hypothesis):
    """Predict the logical relationship between the premise and hypothesis."""
    net.eval()
    premise = torch.tensor(vocab[premise], device=d2l.try_gpu())
    hypothesis = torch.tensor(vocab[hypothesis], device=d2l.try_gpu())
    label = torch.argmax(net([premise.reshape((1, -1)),
                           hypothesis.reshape((1, -1))]), dim=1)
    return 'entailment' if label == 0 else 'contradiction' if label == 1 \
            else 'neutral'
# %%
predict_snli(net, vocab, ['he', 'is', 'good', '.'], ['he', 'is', 'bad', '.'])
'''

# ------------------------------------------------------------------ the data sets' stand-ins
SHAKESPEARE = "/work/shared/data/tinyshakespeare.txt"
PTB_LINES = 6000  # tinyshakespeare's first lines, in PTB's place


def write_ptb(data) -> None:
    """PTB's place (``ptb/ptb.train.txt``: a lowercase sentence of words a line):
    tinyshakespeare's first ``PTB_LINES`` lines, their words alone (skipped without it)."""
    from pathlib import Path  # noqa: PLC0415

    source = Path(SHAKESPEARE)
    if not source.exists():
        pytest.skip("tinyshakespeare.txt is not in /work/shared/data")
    lines = source.read_text().splitlines()[:PTB_LINES]
    words = [" ".join(re.findall(r"[a-z']+", line.lower())) for line in lines]
    (data / "ptb").mkdir(parents=True, exist_ok=True)
    (data / "ptb" / "ptb.train.txt").write_text("\n".join(w for w in words if w))


def write_wiki(data) -> None:
    """WikiText-2's place (``wikitext-2/wiki.train.tokens``: a paragraph a line, its sentences
    parted by " . "): made-up paragraphs of a small grammar of 40 words, seeded."""
    rng = np.random.default_rng(0)
    adjectives = "old young red quiet brave small tall dark green happy".split()
    nouns = "king queen dog horse city river soldier ship garden child".split()
    verbs = "sees finds loves follows helps builds crosses guards paints calls".split()
    places = "in the north|near the sea|by the hill|at the gate|over the wall".split("|")

    def sentence() -> str:  # 5 to 7 words, or 8 to 10 with a place
        words = [
            "the",
            *rng.choice(adjectives, rng.integers(2)),
            rng.choice(nouns),
            rng.choice(verbs),
        ]
        words += ["the", *rng.choice(adjectives, rng.integers(2)), rng.choice(nouns)]
        return " ".join(words + ([rng.choice(places)] if rng.random() < 0.25 else []))

    paragraphs = [
        " . ".join(sentence() for _ in range(rng.integers(3, 6))) + " ." for _ in range(40)
    ]
    (data / "wikitext-2").mkdir(parents=True, exist_ok=True)
    (data / "wikitext-2" / "wiki.train.tokens").write_text(
        "\n".join([" = title = "] + paragraphs) + "\n"
    )


POSITIVE = "great good wonderful loved excellent brilliant".split()
NEGATIVE = "bad awful boring hated terrible dull".split()
FILLER = "this movie is so the film was plot acting and a really story i".split()


def write_imdb(data) -> None:
    """aclImdb's place (``aclImdb/{train,test}/{pos,neg}/<n>.txt``, a review a file): made-up
    reviews of filler words and two to four words of their sentiment, seeded."""
    rng = np.random.default_rng(0)
    for part, n in ("train", 24), ("test", 8):
        for label, words in ("pos", POSITIVE), ("neg", NEGATIVE):
            folder = data / "aclImdb" / part / label
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                review = list(rng.choice(FILLER, rng.integers(6, 14))) + list(
                    rng.choice(words, rng.integers(2, 5))
                )
                rng.shuffle(review)
                (folder / f"{i}_{label}.txt").write_text(" ".join(review) + "\n")


def write_snli(data) -> None:
    """SNLI's place (``snli_1.0/snli_1.0_{train,test}.txt``: a header, then the label, the
    premise's and the hypothesis' binary parses, tab-separated): a premise says who does what;
    the hypothesis says the same (entailment), another deed (contradiction) or adds where
    (neutral); one row without a gold label ("-"), as SNLI has."""
    rng = np.random.default_rng(0)
    who = ["a man", "a woman", "the child", "the dog"]
    deeds = ["is sleeping", "is running", "is eating", "is singing"]
    where = ["in the park", "at home", "on the beach"]
    labels = ["entailment", "contradiction", "neutral"]

    def parse(words: str) -> str:
        head, *rest = words.split(" ", 2)
        return f"( ( {head} {rest[0]} ) ( {' '.join(rest[1:])} ) )"

    (data / "snli_1.0").mkdir(parents=True, exist_ok=True)
    for part, n in ("train", 96), ("test", 24):
        rows = ["gold_label\tsentence1_binary_parse\tsentence2_binary_parse"]
        for i in range(n):
            w, d = rng.integers(4), rng.integers(4)
            label = labels[i % 3]
            premise = f"{who[w]} {deeds[d]} ."
            hypothesis = {
                "entailment": premise,
                "contradiction": f"{who[w]} {deeds[(d + 1 + rng.integers(3)) % 4]} .",
                "neutral": f"{who[w]} {deeds[d]} {where[rng.integers(3)]} .",
            }[label]
            rows.append(f"{label}\t{parse(premise)}\t{parse(hypothesis)}")
        rows.append(f"-\t{parse('a man is sleeping .')}\t{parse('a man is running .')}")
        (data / "snli_1.0" / f"snli_1.0_{part}.txt").write_text("\n".join(rows) + "\n")


def write_glove(data) -> None:
    """GloVe's place (``glove.6b.100d/vec.txt``: a token and its vector a line): random
    16-dimensional vectors for the reviews' and the premises' words, seeded."""
    rng = np.random.default_rng(0)
    words = (
        POSITIVE
        + NEGATIVE
        + FILLER
        + "a man woman child dog is sleeping running eating singing in park at home on beach the .".split()
    )
    lines = [
        " ".join([w, *(f"{v:.5f}" for v in rng.normal(size=16))]) for w in dict.fromkeys(words)
    ]
    (data / "glove.6b.100d").mkdir(parents=True, exist_ok=True)
    (data / "glove.6b.100d" / "vec.txt").write_text("\n".join(lines) + "\n")


BUILD = d2l_port.build


def build(lib, monkeypatch, extra: str = ""):
    """``d2l_port.build``, its ``Animator`` recording the points it is given (``points``;
    those made, in ``d2l.animators``) without drawing them: the book's redraws its whole
    figure at each point, tens of milliseconds each."""
    built = BUILD(lib, monkeypatch, extra)

    class Animator(built.Animator):
        def __init__(self, *args, **kwargs):
            self.points = []
            built.animators.append(self)

        def add(self, x, y):
            self.points.append((x, y))

    built.Animator, built.animators = Animator, []
    return built


def both(text: str, tmp_path, monkeypatch, *writers, keep=None):
    """The section under torch, then under tricycle (``d2l_port.both``), ``d2l`` built with
    ``EXTRA`` and a quiet ``Animator`` (``build``), beside the stand-ins that ``writers``
    write in ``../data`` (the book's folder)."""
    data = tmp_path / "data"
    for write in writers:
        write(data)
    monkeypatch.setattr(d2l_port, "build", build)
    return d2l_port.both(text, tmp_path, monkeypatch, keep, extra=EXTRA)


def normal(printed: str) -> list[str]:
    """``kinds`` with the documented differences aside: a dtype's name (numpy's here), a
    model's repr's count of parameters, an Embedding's sizes and a Dropout's rate named
    (tricycle's names, as a Linear's), and the words nearest a query and the predicted
    labels (the trained models differ: the libraries' random draws do)."""
    text = re.sub(r"torch\.(float32|int64)", r"\1", printed)
    text = re.sub(r"Embedding\(from_size=(\d+), to_size=(\d+)", r"Embedding(\1, \2", text)
    text = re.sub(r"Dropout\(probability=([\d.]+)\)", r"Dropout(p=\1, inplace=False)", text)
    text = re.sub(r"(cosine sim=[-\d.]+): \S+", r"\1", text)
    text = re.sub(r"'(positive|negative|entailment|contradiction|neutral)'", "'LABEL'", text)
    return kinds(re.sub(r"  # [\d,]+ parameters", "", text))


def same_lines(ours: str, theirs: str) -> None:
    """The printed lines that hold no tensor are torch's, numbers and all (the sections' data
    come from Python's ``random``, seeded alike)."""

    def plain(text: str) -> str:
        text = re.sub(r"torch\.Size\(\[(.*?)\]\)", lambda m: str(tuple(eval(f"[{m[1]}]"))), text)
        return re.sub(r"[tT]ensor\((\[.*?\]|[^()\[]*)(, [^()]*)?\)", "TENSOR", text, flags=re.S)

    assert plain(ours) == plain(theirs)


def lib(space: dict):
    """The library a section ran on."""
    return space.get("torch") or space["tricycle"]


def points(space: dict, index: int = -1) -> np.ndarray:
    """The first curve (the training loss) of the ``index``-th ``Animator`` that the section
    made: the points given it (``train_ch13``'s test accuracy points aside)."""
    rows = [y if hasattr(y, "__len__") else [y] for _, y in space["d2l"].animators[index].points]
    return np.array([float(y[0]) for y in rows if y[0] is not None])


def given_torchs(their: dict, our: dict, name: str, objective, rtol=1e-4, atol=1e-5) -> None:
    """The section's model ``name``, given torch's weights (``nn.from_torch``), in eval mode:
    ``objective(space, model)`` (a loss first, then any tensors) gives torch's numbers, and
    the loss's gradients of every parameter are torch's (a Linear's transposed: tricycle's
    weights are (in, out), documented)."""
    import tricycle  # noqa: PLC0415

    theirs, ours = their[name], our[name]
    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    results = []
    for space, model in (their, theirs), (our, ours):
        model.eval()
        model.zero_grad()
        found = objective(space, model)
        found[0].backward()
        grads = [None if p.grad is None else host(p.grad) for p in model.parameters()]
        results.append(([host(t) for t in found], grads))
    (want, want_grads), (got, got_grads) = results
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    linear = {f"{n}.weights".lstrip(".") for n, m in ours.named_modules() if isinstance(m, tricycle.nn.Linear)}  # fmt: skip
    names = [n for n, _ in ours.named_parameters()]
    assert len(got_grads) == len(want_grads) == len(names) and any(g is not None for g in got_grads)
    for n, g, w in zip(names, got_grads, want_grads, strict=True):
        assert (g is None) == (w is None), n
        if g is not None:
            np.testing.assert_allclose(
                g, w.T if n in linear else w, rtol=rtol, atol=atol, err_msg=n
            )


def falls(values, by: float = 1.0) -> None:
    """A loss curve's last value is below its first (times ``by``), all finite."""
    values = np.asarray(values, dtype=float)
    assert np.isfinite(values).all() and values[-1] < values[0] * by, values


# ------------------------------------------------------------------ pretraining
def test_word_embedding_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(WORD_EMBEDDING_DATASET, tmp_path, monkeypatch, write_ptb)
    assert normal(ours) == normal(theirs)
    same_lines(ours, theirs)  # the vocabulary, the subsampled counts, the pairs: torch's
    for space in our, their:
        assert space["all_negatives"] and all(len(n) == 5 * len(c) for c, n in zip(space["all_contexts"], space["all_negatives"]))  # fmt: skip
        centers, contexts_negatives, masks, labels = space["batch"]  # the loader's first batch
        assert tuple(centers.shape) == (512, 1) and tuple(masks.shape) == tuple(labels.shape)
        assert bool((labels <= masks).all()) and 0 < float(masks.float().mean()) < 1
    # the book's batch of two examples
    found = [host(t) for t in our["batchify"]((our["x_1"], our["x_2"]))]
    for got, want in zip(found, their["batchify"]((their["x_1"], their["x_2"])), strict=True):
        np.testing.assert_array_equal(got, host(want))
    np.testing.assert_array_equal(found[1], [[2, 2, 3, 3, 3, 3], [2, 2, 2, 3, 3, 0]])


def skip_gram_loss(space: dict, net):
    """word2vec-pretraining's objective (its ``train``'s lines) on the book's two examples
    and a third, and the scores."""
    data = [(1, [2, 2], [3, 3, 3, 3]), (1, [2, 2, 2], [3, 3]), (4, [5], [6, 7, 8, 9, 10])]
    center, context_negative, mask, label = space["d2l"].batchify(data)
    pred = space["skip_gram"](center, context_negative, net[0], net[1])
    losses = (space["loss"](pred.reshape(label.shape).float(), label.float(), mask) / mask.sum(axis=1) * mask.shape[1])  # fmt: skip
    return losses.sum(), pred


def test_word2vec_pretraining(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(WORD2VEC_PRETRAINING, tmp_path, monkeypatch, write_ptb)
    assert normal(ours) == normal(theirs)
    for printed in ours, theirs:  # the masked loss by hand: the book's sigmoid sums
        shown = printed.splitlines()
        at = next(i for i, line in enumerate(shown) if line.startswith("loss "))
        np.testing.assert_allclose(
            numbers(r"(\d+\.\d+)", shown[at - 3]), [0.9352, 1.8462], atol=1e-4
        )
        assert shown[at - 2 : at] == ["0.9352", "1.8462"]
    for space in our, their:  # the loss (a running mean) falls over the epoch
        falls(points(space), by=0.95)
    given_torchs(their, our, "net", skip_gram_loss)


def test_bert(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BERT, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    for name in "encoded_X", "mlm_Y_hat", "nsp_Y_hat", "mlm_l", "nsp_l":
        assert tuple(our[name].shape) == tuple(their[name].shape), name
    # the whole model, given torch's weights: its encoding, both heads and their losses
    for space in our, their:
        torch = lib(space)
        torch.manual_seed(1)
        space["bert"] = space["BERTModel"](100, 16, 32, 4, 2, 0.2, max_len=12)
        space["bert"](*bert_inputs(space)[:4])  # the lazy layers made
    given_torchs(their, our, "bert", bert_loss)


def bert_inputs(space: dict) -> tuple:
    """A batch of two sequences of 8 tokens (one of 6, padded) as BERT's pretraining reads it:
    tokens, segments, valid lengths, positions to predict, their weights and labels, and the
    next-sentence labels."""
    torch = lib(space)
    tokens = torch.tensor([[1, 5, 9, 2, 7, 3, 8, 2], [1, 4, 4, 2, 6, 2, 0, 0]])
    segments = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]])
    valid_lens = torch.tensor([8.0, 6.0])
    positions = torch.tensor([[1, 4, 6], [2, 4, 0]])
    weights = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    labels = torch.tensor([[5, 7, 8], [4, 6, 0]])
    return tokens, segments, valid_lens, positions, weights, labels, torch.tensor([1, 0])


def bert_loss(space: dict, net):
    """bert-pretraining's ``_get_batch_loss_bert`` (held in ``EXTRA``) on ``bert_inputs``:
    the loss, then the masked-language-model's and the next-sentence prediction's."""
    loss, vocab_size = lib(space).nn.CrossEntropyLoss(), len(space.get("vocab", range(100)))
    mlm_l, nsp_l, total = space["d2l"]._get_batch_loss_bert(
        net, loss, vocab_size, *bert_inputs(space)
    )
    return total, mlm_l, nsp_l, net(*bert_inputs(space)[:4])[0]


def test_bert_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BERT_DATASET, tmp_path, monkeypatch, write_wiki)
    assert normal(ours) == normal(theirs)
    same_lines(ours, theirs)  # the vocabulary's size
    ours_set, theirs_set = our["train_iter"].dataset, their["train_iter"].dataset
    assert len(ours_set) == len(theirs_set) > 16
    for i in range(len(ours_set)):  # the same examples, from Python's random, seeded alike
        for got, want in zip(ours_set[i], theirs_set[i], strict=True):
            np.testing.assert_array_equal(host(got), host(want))
    vocab = our["vocab"]
    for tokens, _, valid_len, positions, weights, *_ in (ours_set[i] for i in range(len(ours_set))):
        tokens, n = host(tokens), int(valid_len.item())
        assert (tokens[n:] == vocab["<pad>"]).all() and tokens[0] == vocab["<cls>"]
        assert host(positions)[host(weights) > 0].max() < n and host(weights).sum() >= 1


def test_bert_pretraining(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BERT_PRETRAINING, tmp_path, monkeypatch, write_wiki)
    assert normal(ours) == normal(theirs)
    for space in our, their:  # the masked-language-model loss falls (a running mean)
        falls(points(space))
        assert space["encoded_pair"].shape[:2] == (1, 10) and space["encoded_text"].shape[:2] == (1, 6)  # fmt: skip
    given_torchs(their, our, "net", bert_loss)


# ------------------------------------------------------------------ applications
def test_sentiment_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SENTIMENT_DATASET, tmp_path, monkeypatch, write_imdb)
    assert normal(ours) == normal(theirs)
    same_lines(ours, theirs)
    np.testing.assert_array_equal(host(our["train_features"]), host(their["train_features"]))
    assert tuple(our["train_features"].shape) == (48, 20)


def review_loss(space: dict, net):
    """A batch of four reviews' cross-entropy under the chapter's ``loss``, and the logits."""
    torch, vocab = lib(space), space["vocab"]
    reviews = ["this movie is so great", "this movie is so bad", "the plot was awful and dull", "i loved the acting"]  # fmt: skip
    X = torch.tensor(
        [space["d2l"].truncate_pad(vocab[r.split()], 20, vocab["<pad>"]) for r in reviews]
    )
    out = net(X)
    return space["loss"](out, torch.tensor([1, 0, 0, 1])).sum(), out


def test_sentiment_rnn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(
        SENTIMENT_RNN, tmp_path, monkeypatch, write_imdb, write_glove
    )
    assert normal(ours) == normal(theirs)
    for space in our, their:  # the training loss falls; GloVe's stand-in rows kept frozen
        falls(points(space))
        np.testing.assert_array_equal(
            host(next(space["net"].embedding.parameters())), host(space["embeds"])
        )
    given_torchs(their, our, "net", review_loss)
    for sentence in "this movie is so great", "this movie is so bad":  # torch's weights now
        assert our["predict_sentiment"](our["net"], our["vocab"], sentence) == their["predict_sentiment"](their["net"], their["vocab"], sentence)  # fmt: skip


def test_sentiment_cnn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(
        SENTIMENT_CNN, tmp_path, monkeypatch, write_imdb, write_glove
    )
    assert normal(ours) == normal(theirs)
    for printed in ours, theirs:  # corr1d by hand: the book's numbers
        assert numbers(r"(\d+)\.", printed)[:12] == [2, 5, 8, 11, 14, 17, 2, 8, 14, 20, 26, 32]
    for space in our, their:
        falls(points(space))
    given_torchs(their, our, "net", review_loss)
    for sentence in "this movie is so great", "this movie is so bad":  # torch's weights now
        assert our["d2l"].predict_sentiment(our["net"], our["vocab"], sentence) == their["d2l"].predict_sentiment(their["net"], their["vocab"], sentence)  # fmt: skip


def test_nli_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NLI_DATASET, tmp_path, monkeypatch, write_snli)
    assert normal(ours) == normal(theirs)
    same_lines(ours, theirs)  # the examples, the labels' counts, the vocabulary's size
    for name in "premises", "hypotheses", "labels":
        np.testing.assert_array_equal(host(getattr(our["train_iter"].dataset, name)), host(getattr(their["train_iter"].dataset, name)))  # fmt: skip


def pair_loss(space: dict, net):
    """Three premise-hypothesis pairs' cross-entropy under the chapter's ``loss``, and the
    logits."""
    torch, vocab = lib(space), space["vocab"]
    pairs = [("a man is sleeping .", "a man is sleeping ."), ("the dog is eating .", "the dog is running ."), ("a woman is singing .", "a woman is singing at home .")]  # fmt: skip
    premises, hypotheses = ([space["d2l"].truncate_pad(vocab[p[i].split()], 10, vocab["<pad>"]) for p in pairs] for i in (0, 1))  # fmt: skip
    out = net([torch.tensor(premises), torch.tensor(hypotheses)])
    return space["loss"](out, torch.tensor([0, 1, 2])).sum(), out


def test_nli_attention(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(
        NLI_ATTENTION, tmp_path, monkeypatch, write_snli, write_glove
    )
    assert normal(ours) == normal(theirs)
    for space in our, their:
        falls(points(space))
    given_torchs(their, our, "net", pair_loss)
    premise, hypothesis = ["he", "is", "good", "."], ["he", "is", "bad", "."]  # torch's weights now
    assert our["predict_snli"](our["net"], our["vocab"], premise, hypothesis) == their["predict_snli"](their["net"], their["vocab"], premise, hypothesis)  # fmt: skip


# ------------------------------------------------------------------ the held texts
SECTIONS = {
    "chapter_natural-language-processing-pretraining/word-embedding-dataset.md": WORD_EMBEDDING_DATASET,
    "chapter_natural-language-processing-pretraining/word2vec-pretraining.md": WORD2VEC_PRETRAINING,
    "chapter_natural-language-processing-pretraining/bert.md": BERT,
    "chapter_natural-language-processing-pretraining/bert-dataset.md": BERT_DATASET,
    "chapter_natural-language-processing-pretraining/bert-pretraining.md": BERT_PRETRAINING,
    "chapter_natural-language-processing-applications/sentiment-analysis-and-dataset.md": SENTIMENT_DATASET,
    "chapter_natural-language-processing-applications/sentiment-analysis-rnn.md": SENTIMENT_RNN,
    "chapter_natural-language-processing-applications/sentiment-analysis-cnn.md": SENTIMENT_CNN,
    "chapter_natural-language-processing-applications/natural-language-inference-and-dataset.md": NLI_DATASET,
    "chapter_natural-language-processing-applications/natural-language-inference-attention.md": NLI_ATTENTION,
}


def pytorch_cells(markdown: str) -> str:
    """A chapter's PyTorch code as the book runs it: its ``#@tab pytorch`` and ``#@tab all``
    cells, in order, parted by ``# %%`` lines."""
    cells = []
    for body in re.findall(r"```\{\.python \.input[^}]*\}\n(.*?)```", markdown, flags=re.S):
        first, _, rest = body.partition("\n")
        if first.strip().startswith("#@tab") and {"pytorch", "all"} & set(first.split()[1:]):
            cells.append(rest)
    return "# %%\n".join(cells)


def test_the_held_texts_are_the_books():
    """``EXTRA`` is the book's ``d2l/torch.py`` and each section its chapter's PyTorch cells,
    in order, but for the lines marked ``# port:`` (where the book's repository is mirrored)."""
    pairs = [(EXTRA, d2l_port.book())]
    pairs += [(text, pytorch_cells(d2l_port.book(path))) for path, text in SECTIONS.items()]
    for text, source in pairs:
        held, matched, others = d2l_port.against_book(text, source)
        assert len(matched) > len(held) - len(others) - 3
