"""Dive into Deep Learning (d2l-ai/d2l-en), chapter_attention-mechanisms-and-transformers, its
PyTorch code run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in its text,
beside the book's own library ``d2l/torch.py`` built the same way (tests/d2l_port.py; the later
parts these sections call are held here as ``LIBRARY``, passed as its ``extra``): docs/pytorch.md's
promise, the method of tests/test_d2l_cnn.py.

- queries-keys-values (``show_heatmaps``), attention-pooling (Nadaraya-Watson regression with
  four kernels and Gaussians of four widths), attention-scoring-functions (``masked_softmax``,
  which writes ``X[~mask] = value`` into a reshaped view of the scores, ``DotProductAttention``,
  ``AdditiveAttention`` over ``nn.LazyLinear``s, ``torch.bmm``), bahdanau-attention
  (``Seq2SeqAttentionDecoder`` over the book's ``Seq2SeqEncoder`` GRU, trained by the book's
  ``Trainer`` with gradient clipping, then translating with ``predict_step``), multihead-attention
  (``transpose_qkv``, ``repeat_interleave``), self-attention-and-positional-encoding
  (``PositionalEncoding``), transformer (``PositionWiseFFN``, ``AddNorm``, ``LayerNorm`` beside
  ``LazyBatchNorm1d``, the encoder and decoder blocks, the Transformer trained and translating,
  its decoder's attention weights padded by pandas' ``DataFrame.fillna``) and
  vision-transformer (``PatchEmbedding`` through ``LazyConv2d``, ``ViTMLP`` with ``GELU``,
  ``ViTBlock``, the ``ViT`` classifier with its ``cls_token`` and learned positions, trained on
  the Fashion-MNIST stand-in).

The code is the book's PyTorch tab (``%%tab pytorch`` cells, and the PyTorch branch of the cells
shared by several frameworks). Each changed line ends in ``# port:`` and says why: sizes, epochs
and sentence lengths shrunk; the English-French download replaced by a small table that the test
writes where the book's ``MTFraEng`` reads it (``../data/fra-eng/fra.txt``); torch's
``X.repeat(batch_size, 1)`` is tricycle's ``tile`` (``repeat`` is numpy's: documented); most
figures not drawn (a figure costs a second of test time: the test checks what they would show;
queries-keys-values' heatmap and attention-pooling's last figure are drawn and read back). pandas
(not in tricycle's test extra) is a stand-in ``DataFrame`` with ``fillna`` and ``values``.

Each section runs under torch (skipped without it), then under tricycle, seeded, on the CPU and
on one thread; both print the same lines (numbers, the translations' words and documented reprs
aside), the deterministic values are torch's, and the translation models' training losses fall.
With torch's weights (``nn.from_torch``) every attention layer and model of the chapter gives
torch's outputs and the gradients of its parameters and inputs (the Transformer in training
mode too, through its causal valid lengths), and the trained translation models torch's
translations. A Tensor attribute is a buffer here (documented), torch's a plain attribute: the
positional encoding's ``P`` and the attention weights a forward kept without a graph are in
tricycle's ``state_dict``, not torch's.

The fixes the chapter needed: a write into a reshaped view of an op's output writes through to
the tensors it views, as torch's (``masked_softmax``; tricycle/rebase.py, tested in
tests/test_rebase.py); a list or dict attribute names no op-computed Tensor a parameter (the
attention decoder's ``_attention_weights``) and does not rename a layer's own sublayers (d2l's
``hparams`` dict holds the model's encoder and decoder: torch's names; tricycle/module.py,
tested in tests/test_module_torch_api.py). The last test checks that ``LIBRARY`` is the book's
text but for its ``# port:`` lines.
"""

# ruff: noqa: E501, W291, W293

import re
import sys

import numpy as np
import pytest

from tests import d2l_port
from tests.test_d2l_cnn import a_step_lowers
from tests.test_d2l_rnn import EXTRA as RNN_LIBRARY
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host

pytestmark = [
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:Lazy modules are a new feature"),
]

# d2l/torch.py's ``MTFraEng`` (commit 23d7a5ae), its download ported (the test writes the table)
MT_FRA_ENG = r'''
class MTFraEng(d2l.DataModule):
    """The English-French dataset.

    Defined in :numref:`sec_machine_translation`"""
    def _download(self):
        # port: no download: the test writes a small English-French table at root/fra-eng/fra.txt
        with open(self.root + '/fra-eng/fra.txt', encoding='utf-8') as f:
            return f.read()

    def _preprocess(self, text):
        """Defined in :numref:`sec_machine_translation`"""
        # Replace non-breaking space with space
        text = text.replace('\u202f', ' ').replace('\xa0', ' ')
        # Insert space between words and punctuation marks
        no_space = lambda char, prev_char: char in ',.!?' and prev_char != ' '
        out = [' ' + char if i > 0 and no_space(char, text[i - 1]) else char
               for i, char in enumerate(text.lower())]
        return ''.join(out)

    def _tokenize(self, text, max_examples=None):
        """Defined in :numref:`sec_machine_translation`"""
        src, tgt = [], []
        for i, line in enumerate(text.split('\n')):
            if max_examples and i > max_examples: break
            parts = line.split('\t')
            if len(parts) == 2:
                # Skip empty tokens
                src.append([t for t in f'{parts[0]} <eos>'.split(' ') if t])
                tgt.append([t for t in f'{parts[1]} <eos>'.split(' ') if t])
        return src, tgt

    def __init__(self, batch_size, num_steps=9, num_train=512, num_val=128):
        """Defined in :numref:`sec_machine_translation`"""
        super(MTFraEng, self).__init__()
        self.save_hyperparameters()
        self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(
            self._download())

    def _build_arrays(self, raw_text, src_vocab=None, tgt_vocab=None):
        """Defined in :numref:`subsec_loading-seq-fixed-len`"""
        def _build_array(sentences, vocab, is_tgt=False):
            pad_or_trim = lambda seq, t: (
                seq[:t] if len(seq) > t else seq + ['<pad>'] * (t - len(seq)))
            sentences = [pad_or_trim(s, self.num_steps) for s in sentences]
            if is_tgt:
                sentences = [['<bos>'] + s for s in sentences]
            if vocab is None:
                vocab = d2l.Vocab(sentences, min_freq=2)
            array = d2l.tensor([vocab[s] for s in sentences])
            valid_len = d2l.reduce_sum(
                d2l.astype(array != vocab['<pad>'], d2l.int32), 1)
            return array, vocab, valid_len
        src, tgt = self._tokenize(self._preprocess(raw_text),
                                  self.num_train + self.num_val)
        src_array, src_vocab, src_valid_len = _build_array(src, src_vocab)
        tgt_array, tgt_vocab, _ = _build_array(tgt, tgt_vocab, True)
        return ((src_array, tgt_array[:,:-1], src_valid_len, tgt_array[:,1:]),
                src_vocab, tgt_vocab)

    def get_dataloader(self, train):
        """Defined in :numref:`subsec_loading-seq-fixed-len`"""
        idx = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader(self.arrays, train, idx)

    def build(self, src_sentences, tgt_sentences):
        """Defined in :numref:`subsec_loading-seq-fixed-len`"""
        raw_text = '\n'.join([src + '\t' + tgt for src, tgt in zip(
            src_sentences, tgt_sentences)])
        arrays, _, _ = self._build_arrays(
            raw_text, self.src_vocab, self.tgt_vocab)
        return arrays
'''

# the chapter's own ``#@save`` parts, from ``show_heatmaps`` to ``TransformerEncoder``
ATTENTION = r'''
def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5),
                  cmap='Reds'):
    """Show heatmaps of matrices.

    Defined in :numref:`sec_queries-keys-values`"""
    d2l.use_svg_display()
    num_rows, num_cols, _, _ = matrices.shape
    fig, axes = d2l.plt.subplots(num_rows, num_cols, figsize=figsize,
                                 sharex=True, sharey=True, squeeze=False)
    for i, (row_axes, row_matrices) in enumerate(zip(axes, matrices)):
        for j, (ax, matrix) in enumerate(zip(row_axes, row_matrices)):
            pcm = ax.imshow(d2l.numpy(matrix), cmap=cmap)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
    fig.colorbar(pcm, ax=axes, shrink=0.6);

def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis.

    Defined in :numref:`sec_attention-scoring-functions`"""
    # X: 3D tensor, valid_lens: 1D or 2D tensor
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32,
                            device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # On the last axis, replace masked elements with a very large negative
        # value, whose exponentiation outputs 0
        X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)

class DotProductAttention(nn.Module):
    """Scaled dot product attention.

    Defined in :numref:`subsec_batch_dot`"""
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    # Shape of queries: (batch_size, no. of queries, d)
    # Shape of keys: (batch_size, no. of key-value pairs, d)
    # Shape of values: (batch_size, no. of key-value pairs, value dimension)
    # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # Swap the last two dimensions of keys with keys.transpose(1, 2)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)

class AdditiveAttention(nn.Module):
    """Additive attention.

    Defined in :numref:`subsec_batch_dot`"""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # After dimension expansion, shape of queries: (batch_size, no. of
        # queries, 1, num_hiddens) and shape of keys: (batch_size, 1, no. of
        # key-value pairs, num_hiddens). Sum them up with broadcasting
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        # There is only one output of self.w_v, so we remove the last
        # one-dimensional entry from the shape. Shape of scores: (batch_size,
        # no. of queries, no. of key-value pairs)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # Shape of values: (batch_size, no. of key-value pairs, value
        # dimension)
        return torch.bmm(self.dropout(self.attention_weights), values)

class AttentionDecoder(d2l.Decoder):
    """The base attention-based decoder interface.

    Defined in :numref:`sec_seq2seq_attention`"""
    def __init__(self):
        super().__init__()

    @property
    def attention_weights(self):
        raise NotImplementedError

class MultiHeadAttention(d2l.Module):
    """Multi-head attention.

    Defined in :numref:`sec_multihead-attention`"""
    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.attention = d2l.DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        # Shape of queries, keys, or values:
        # (batch_size, no. of queries or key-value pairs, num_hiddens)
        # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
        # After transposing, shape of output queries, keys, or values:
        # (batch_size * num_heads, no. of queries or key-value pairs,
        # num_hiddens / num_heads)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))

        if valid_lens is not None:
            # On axis 0, copy the first item (scalar or vector) for num_heads
            # times, then copy the next item, and so on
            valid_lens = torch.repeat_interleave(
                valid_lens, repeats=self.num_heads, dim=0)

        # Shape of output: (batch_size * num_heads, no. of queries,
        # num_hiddens / num_heads)
        output = self.attention(queries, keys, values, valid_lens)
        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)

    def transpose_qkv(self, X):
        """Transposition for parallel computation of multiple attention heads.
    
        Defined in :numref:`sec_multihead-attention`"""
        # Shape of input X: (batch_size, no. of queries or key-value pairs,
        # num_hiddens). Shape of output X: (batch_size, no. of queries or
        # key-value pairs, num_heads, num_hiddens / num_heads)
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        # Shape of output X: (batch_size, num_heads, no. of queries or key-value
        # pairs, num_hiddens / num_heads)
        X = X.permute(0, 2, 1, 3)
        # Shape of output: (batch_size * num_heads, no. of queries or key-value
        # pairs, num_hiddens / num_heads)
        return X.reshape(-1, X.shape[2], X.shape[3])
    

    def transpose_output(self, X):
        """Reverse the operation of transpose_qkv.
    
        Defined in :numref:`sec_multihead-attention`"""
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

class PositionalEncoding(nn.Module):
    """Positional encoding.

    Defined in :numref:`sec_self-attention-and-positional-encoding`"""
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # Create a long enough P
        self.P = d2l.zeros((1, max_len, num_hiddens))
        X = d2l.arange(max_len, dtype=torch.float32).reshape(
            -1, 1) / torch.pow(10000, torch.arange(
            0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, :X.shape[1], :].to(X.device)
        return self.dropout(X)

class PositionWiseFFN(nn.Module):
    """The positionwise feed-forward network.

    Defined in :numref:`sec_transformer`"""
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))

class AddNorm(nn.Module):
    """The residual connection followed by layer normalization.

    Defined in :numref:`subsec_positionwise-ffn`"""
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)

class TransformerEncoderBlock(nn.Module):
    """The Transformer encoder block.

    Defined in :numref:`subsec_positionwise-ffn`"""
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout,
                 use_bias=False):
        super().__init__()
        self.attention = d2l.MultiHeadAttention(num_hiddens, num_heads,
                                                dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))

class TransformerEncoder(d2l.Encoder):
    """The Transformer encoder.

    Defined in :numref:`subsec_transformer-encoder`"""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens,
                 num_heads, num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block"+str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        # Since positional encoding values are between -1 and 1, the embedding
        # values are multiplied by the square root of the embedding dimension
        # to rescale before they are summed up
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[
                i] = blk.attention.attention.attention_weights
        return X
'''

# d2l/torch.py (commit 23d7a5ae), in its order, the parts after tests/d2l_port.py's that these
# sections call: ``Vocab``, ``check_len``/``check_shape``, ``RNN``/``GRU`` (the seq2seq
# encoder's), the encoder-decoder classes, ``init_seq2seq``, ``Seq2SeqEncoder``, ``Seq2Seq`` and
# ``bleu`` as tests/test_d2l_rnn.py holds them, ``MTFraEng`` (above), then ``ATTENTION``.
LIBRARY = (
    "\n"
    + d2l_port.parts(RNN_LIBRARY, "Vocab", "check_len", "check_shape", "RNN", "GRU")
    + MT_FRA_ENG.lstrip("\n")
    + d2l_port.parts(
        RNN_LIBRARY,
        "Encoder",
        "Decoder",
        "EncoderDecoder",
        "init_seq2seq",
        "Seq2SeqEncoder",
        "Seq2Seq",
        "bleu",
    )
    + ATTENTION.lstrip("\n")
)

SUBJECTS = [("I'm", "Je suis"), ("He's", "Il est"), ("She's", "Elle est"),
            ("We're", "Nous sommes"), ("You're", "Vous êtes"), ("They're", "Ils sont")]  # fmt: skip
ADJECTIVES = [("calm", "calme"), ("home", "chez moi"), ("sad", "triste"), ("late", "en retard"),
              ("ready", "prêt"), ("tired", "fatigué")]  # fmt: skip


def fra_eng() -> str:
    """A small English-French table in the place of the book's download: each subject with
    each adjective, then the sentences the chapter translates."""
    pairs = [(f"{en} {a}.", f"{fr} {b}.") for en, fr in SUBJECTS for a, b in ADJECTIVES]
    pairs += [("Go.", "Va !"), ("I lost.", "J'ai perdu."), ("Go.", "Va !"), ("I lost.", "J'ai perdu.")]  # fmt: skip
    return "\n".join(f"{en}\t{fr}" for en, fr in pairs) + "\n"


QUERIES_KEYS_VALUES = r'''
from d2l import torch as d2l
import torch
# %%
#@save
def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5),
                  cmap='Reds'):
    """Show heatmaps of matrices."""
    d2l.use_svg_display()
    num_rows, num_cols, _, _ = matrices.shape
    fig, axes = d2l.plt.subplots(num_rows, num_cols, figsize=figsize,
                                 sharex=True, sharey=True, squeeze=False)
    for i, (row_axes, row_matrices) in enumerate(zip(axes, matrices)):
        for j, (ax, matrix) in enumerate(zip(row_axes, row_matrices)):
            pcm = ax.imshow(d2l.numpy(matrix), cmap=cmap)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles:
                ax.set_title(titles[j])
    fig.colorbar(pcm, ax=axes, shrink=0.6);
# %%
attention_weights = d2l.reshape(d2l.eye(10), (1, 1, 10, 10))
show_heatmaps(attention_weights, xlabel='Keys', ylabel='Queries')
'''

ATTENTION_POOLING = r"""
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
import numpy as np

d2l.use_svg_display()
# %%
# Define some kernels
def gaussian(x):
    return d2l.exp(-x**2 / 2)

def boxcar(x):
    return d2l.abs(x) < 1.0

def constant(x):
    return 1.0 + 0 * x
 
def epanechikov(x):
    return torch.max(1 - d2l.abs(x), torch.zeros_like(x))
# %%
fig, axes = d2l.plt.subplots(1, 4, sharey=True, figsize=(12, 3))

kernels = (gaussian, boxcar, constant, epanechikov)
names = ('Gaussian', 'Boxcar', 'Constant', 'Epanechikov')
x = d2l.arange(-2.5, 2.5, 0.1)
for kernel, name, ax in zip(kernels, names, axes):
    ax.plot(d2l.numpy(x), d2l.numpy(kernel(x)))
    ax.set_xlabel(name)

d2l.plt.show()
# %%
def f(x):
    return 2 * d2l.sin(x) + x

n = 40
x_train, _ = torch.sort(d2l.rand(n) * 5)
y_train = f(x_train) + d2l.randn(n)
x_val = d2l.arange(0, 5, 0.1)
y_val = f(x_val)
# %%
def nadaraya_watson(x_train, y_train, x_val, kernel):
    dists = d2l.reshape(x_train, (-1, 1)) - d2l.reshape(x_val, (1, -1))
    # Each column/row corresponds to each query/key
    k = d2l.astype(kernel(dists), d2l.float32)
    # Normalization over keys for each query
    attention_w = k / d2l.reduce_sum(k, 0)
    y_hat = y_train@attention_w
    return y_hat, attention_w
# %%
def plot(x_train, y_train, x_val, y_val, kernels, names, attention=False):
    fig, axes = d2l.plt.subplots(1, 4, sharey=True, figsize=(12, 3))
    for kernel, name, ax in zip(kernels, names, axes):
        y_hat, attention_w = nadaraya_watson(x_train, y_train, x_val, kernel)
        if attention:
            pcm = ax.imshow(d2l.numpy(attention_w), cmap='Reds')
        else:
            ax.plot(x_val, y_hat)
            ax.plot(x_val, y_val, 'm--')
            ax.plot(x_train, y_train, 'o', alpha=0.5);
        ax.set_xlabel(name)
        if not attention:
            ax.legend(['y_hat', 'y'])
    if attention:
        fig.colorbar(pcm, ax=axes, shrink=0.7)
# %%
# plot(x_train, y_train, x_val, y_val, kernels, names)  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
# plot(x_train, y_train, x_val, y_val, kernels, names, attention=True)  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
sigmas = (0.1, 0.2, 0.5, 1)
names = ['Sigma ' + str(sigma) for sigma in sigmas]

def gaussian_with_width(sigma): 
    return (lambda x: d2l.exp(-x**2 / (2*sigma**2)))

kernels = [gaussian_with_width(sigma) for sigma in sigmas]
# plot(x_train, y_train, x_val, y_val, kernels, names)  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
plot(x_train, y_train, x_val, y_val, kernels, names, attention=True)
"""

ATTENTION_SCORING = r'''
from d2l import torch as d2l
import math
import torch
from torch import nn
# %%
def masked_softmax(X, valid_lens):  #@save
    """Perform softmax operation by masking elements on the last axis."""
    # X: 3D tensor, valid_lens: 1D or 2D tensor 
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32,
                            device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X
    
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # On the last axis, replace masked elements with a very large negative
        # value, whose exponentiation outputs 0
        X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)
# %%
masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3]))
# %%
masked_softmax(torch.rand(2, 2, 4), d2l.tensor([[1, 3], [2, 4]]))
# %%
Q = d2l.ones((2, 3, 4))
K = d2l.ones((2, 4, 6))
d2l.check_shape(torch.bmm(Q, K), (2, 3, 6))
# %%
class DotProductAttention(nn.Module):  #@save
    """Scaled dot product attention."""
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    # Shape of queries: (batch_size, no. of queries, d)
    # Shape of keys: (batch_size, no. of key-value pairs, d)
    # Shape of values: (batch_size, no. of key-value pairs, value dimension)
    # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # Swap the last two dimensions of keys with keys.transpose(1, 2)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
# %%
queries = d2l.normal(0, 1, (2, 1, 2))
keys = d2l.normal(0, 1, (2, 10, 2))
values = d2l.normal(0, 1, (2, 10, 4))
valid_lens = d2l.tensor([2, 6])

attention = DotProductAttention(dropout=0.5)
attention.eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
# %%
# d2l.show_heatmaps(d2l.reshape(attention.attention_weights, (1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
class AdditiveAttention(nn.Module):  #@save
    """Additive attention."""
    def __init__(self, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # After dimension expansion, shape of queries: (batch_size, no. of
        # queries, 1, num_hiddens) and shape of keys: (batch_size, 1, no. of
        # key-value pairs, num_hiddens). Sum them up with broadcasting
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        # There is only one output of self.w_v, so we remove the last
        # one-dimensional entry from the shape. Shape of scores: (batch_size,
        # no. of queries, no. of key-value pairs)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # Shape of values: (batch_size, no. of key-value pairs, value
        # dimension)
        return torch.bmm(self.dropout(self.attention_weights), values)
# %%
queries = d2l.normal(0, 1, (2, 1, 20))

attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
attention.eval()
d2l.check_shape(attention(queries, keys, values, valid_lens), (2, 1, 4))
# %%
# d2l.show_heatmaps(d2l.reshape(attention.attention_weights, (1, 1, 2, 10)), xlabel='Keys', ylabel='Queries')  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
'''

BAHDANAU = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
class AttentionDecoder(d2l.Decoder):  #@save
    """The base attention-based decoder interface."""
    def __init__(self):
        super().__init__()

    @property
    def attention_weights(self):
        raise NotImplementedError
# %%
class Seq2SeqAttentionDecoder(AttentionDecoder):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0):
        super().__init__()
        self.attention = d2l.AdditiveAttention(num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(
            embed_size + num_hiddens, num_hiddens, num_layers,
            dropout=dropout)
        self.dense = nn.LazyLinear(vocab_size)
        self.apply(d2l.init_seq2seq)

    def init_state(self, enc_outputs, enc_valid_lens):
        # Shape of outputs: (num_steps, batch_size, num_hiddens).
        # Shape of hidden_state: (num_layers, batch_size, num_hiddens)
        outputs, hidden_state = enc_outputs
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)

    def forward(self, X, state):
        # Shape of enc_outputs: (batch_size, num_steps, num_hiddens).
        # Shape of hidden_state: (num_layers, batch_size, num_hiddens)
        enc_outputs, hidden_state, enc_valid_lens = state
        # Shape of the output X: (num_steps, batch_size, embed_size)
        X = self.embedding(X).permute(1, 0, 2)
        outputs, self._attention_weights = [], []
        for x in X:
            # Shape of query: (batch_size, 1, num_hiddens)
            query = torch.unsqueeze(hidden_state[-1], dim=1)
            # Shape of context: (batch_size, 1, num_hiddens)
            context = self.attention(
                query, enc_outputs, enc_outputs, enc_valid_lens)
            # Concatenate on the feature dimension
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)
            # Reshape x as (1, batch_size, embed_size + num_hiddens)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)
        # After fully connected layer transformation, shape of outputs:
        # (num_steps, batch_size, vocab_size)
        outputs = self.dense(torch.cat(outputs, dim=0))
        return outputs.permute(1, 0, 2), [enc_outputs, hidden_state,
                                          enc_valid_lens]

    @property
    def attention_weights(self):
        return self._attention_weights
# %%
vocab_size, embed_size, num_hiddens, num_layers = 10, 8, 16, 2
batch_size, num_steps = 4, 7
encoder = d2l.Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers)
decoder = Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens,
                                  num_layers)
X = d2l.zeros((batch_size, num_steps), dtype=torch.long)
state = decoder.init_state(encoder(X), None)
output, state = decoder(X, state)
d2l.check_shape(output, (batch_size, num_steps, vocab_size))
d2l.check_shape(state[0], (batch_size, num_steps, num_hiddens))
d2l.check_shape(state[1][0], (batch_size, num_hiddens))
# %%
data = d2l.MTFraEng(batch_size=8, num_steps=6, num_train=32, num_val=8)  # port: the small table, its sentences short
embed_size, num_hiddens, num_layers, dropout = 16, 16, 2, 0.2  # port: shrunk
encoder = d2l.Seq2SeqEncoder(
    len(data.src_vocab), embed_size, num_hiddens, num_layers, dropout)
decoder = Seq2SeqAttentionDecoder(
    len(data.tgt_vocab), embed_size, num_hiddens, num_layers, dropout)
model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                    lr=0.005)
trainer = d2l.Trainer(max_epochs=3, gradient_clip_val=1, num_gpus=1)  # port: 3 epochs
trainer.fit(model, data)
# %%
engs = ['go .', 'i lost .', 'he\'s calm .', 'i\'m home .']
fras = ['va !', 'j\'ai perdu .', 'il est calme .', 'je suis chez moi .']
preds, _ = model.predict_step(
    data.build(engs, fras), d2l.try_gpu(), data.num_steps)
for en, fr, p in zip(engs, fras, preds):
    translation = []
    for token in data.tgt_vocab.to_tokens(p):
        if token == '<eos>':
            break
        translation.append(token)
    print(f'{en} => {translation}, bleu,'
          f'{d2l.bleu(" ".join(translation), fr, k=2):.3f}')
# %%
_, dec_attention_weights = model.predict_step(
    data.build([engs[-1]], [fras[-1]]), d2l.try_gpu(), data.num_steps, True)
attention_weights = d2l.concat(
    [step[0][0][0] for step in dec_attention_weights], 0)
attention_weights = d2l.reshape(attention_weights, (1, 1, -1, data.num_steps))
# %%
# Plus one to include the end-of-sequence token
# d2l.show_heatmaps(attention_weights[:, :, :, :len(engs[-1].split()) + 1].cpu(), xlabel='Key positions', ylabel='Query positions')  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
'''

MULTIHEAD = r'''
from d2l import torch as d2l
import math
import torch
from torch import nn
# %%
class MultiHeadAttention(d2l.Module):  #@save
    """Multi-head attention."""
    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.attention = d2l.DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        # Shape of queries, keys, or values:
        # (batch_size, no. of queries or key-value pairs, num_hiddens)
        # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
        # After transposing, shape of output queries, keys, or values:
        # (batch_size * num_heads, no. of queries or key-value pairs,
        # num_hiddens / num_heads)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))

        if valid_lens is not None:
            # On axis 0, copy the first item (scalar or vector) for num_heads
            # times, then copy the next item, and so on
            valid_lens = torch.repeat_interleave(
                valid_lens, repeats=self.num_heads, dim=0)

        # Shape of output: (batch_size * num_heads, no. of queries,
        # num_hiddens / num_heads)
        output = self.attention(queries, keys, values, valid_lens)
        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)
# %%
@d2l.add_to_class(MultiHeadAttention)  #@save
def transpose_qkv(self, X):
    """Transposition for parallel computation of multiple attention heads."""
    # Shape of input X: (batch_size, no. of queries or key-value pairs,
    # num_hiddens). Shape of output X: (batch_size, no. of queries or
    # key-value pairs, num_heads, num_hiddens / num_heads)
    X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
    # Shape of output X: (batch_size, num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    X = X.permute(0, 2, 1, 3)
    # Shape of output: (batch_size * num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    return X.reshape(-1, X.shape[2], X.shape[3])

@d2l.add_to_class(MultiHeadAttention)  #@save
def transpose_output(self, X):
    """Reverse the operation of transpose_qkv."""
    X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)
# %%
num_hiddens, num_heads = 100, 5
attention = MultiHeadAttention(num_hiddens, num_heads, 0.5)
batch_size, num_queries, num_kvpairs = 2, 4, 6
valid_lens = d2l.tensor([3, 2])
X = d2l.ones((batch_size, num_queries, num_hiddens))
Y = d2l.ones((batch_size, num_kvpairs, num_hiddens))
d2l.check_shape(attention(X, Y, Y, valid_lens),
                (batch_size, num_queries, num_hiddens))
'''

SELF_ATTENTION = r'''
from d2l import torch as d2l
import math
import torch
from torch import nn
# %%
num_hiddens, num_heads = 100, 5
attention = d2l.MultiHeadAttention(num_hiddens, num_heads, 0.5)
batch_size, num_queries, valid_lens = 2, 4, d2l.tensor([3, 2])
X = d2l.ones((batch_size, num_queries, num_hiddens))
d2l.check_shape(attention(X, X, X, valid_lens),
                (batch_size, num_queries, num_hiddens))
# %%
class PositionalEncoding(nn.Module):  #@save
    """Positional encoding."""
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # Create a long enough P
        self.P = d2l.zeros((1, max_len, num_hiddens))
        X = d2l.arange(max_len, dtype=torch.float32).reshape(
            -1, 1) / torch.pow(10000, torch.arange(
            0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, :X.shape[1], :].to(X.device)
        return self.dropout(X)
# %%
encoding_dim, num_steps = 32, 60
pos_encoding = PositionalEncoding(encoding_dim, 0)
X = pos_encoding(d2l.zeros((1, num_steps, encoding_dim)))
P = pos_encoding.P[:, :X.shape[1], :]
# d2l.plot(d2l.arange(num_steps), P[0, :, 6:10].T, xlabel='Row (position)', figsize=(6, 2.5), legend=["Col %d" % d for d in d2l.arange(6, 10)])  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
for i in range(8):
    print(f'{i} in binary is {i:>03b}')
# %%
P = P[0, :, :].unsqueeze(0).unsqueeze(0)
# d2l.show_heatmaps(P, xlabel='Column (encoding dimension)', ylabel='Row (position)', figsize=(3.5, 4), cmap='Blues')  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
'''

TRANSFORMER = r'''
from d2l import torch as d2l
import math
import pandas as pd
import torch
from torch import nn
# %%
class PositionWiseFFN(nn.Module):  #@save
    """The positionwise feed-forward network."""
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))
# %%
ffn = PositionWiseFFN(4, 8)
ffn.eval()
ffn(d2l.ones((2, 3, 4)))[0]
# %%
ln = nn.LayerNorm(2)
bn = nn.LazyBatchNorm1d()
X = d2l.tensor([[1, 2], [2, 3]], dtype=torch.float32)
# Compute mean and variance from X in the training mode
print('layer norm:', ln(X), '\nbatch norm:', bn(X))
# %%
class AddNorm(nn.Module):  #@save
    """The residual connection followed by layer normalization."""
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)
# %%
add_norm = AddNorm(4, 0.5)
shape = (2, 3, 4)
d2l.check_shape(add_norm(d2l.ones(shape), d2l.ones(shape)), shape)
# %%
class TransformerEncoderBlock(nn.Module):  #@save
    """The Transformer encoder block."""
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout,
                 use_bias=False):
        super().__init__()
        self.attention = d2l.MultiHeadAttention(num_hiddens, num_heads,
                                                dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))
# %%
X = d2l.ones((2, 100, 24))
valid_lens = d2l.tensor([3, 2])
encoder_blk = TransformerEncoderBlock(24, 48, 8, 0.5)
encoder_blk.eval()
d2l.check_shape(encoder_blk(X, valid_lens), X.shape)
# %%
class TransformerEncoder(d2l.Encoder):  #@save
    """The Transformer encoder."""
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens,
                 num_heads, num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block"+str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        # Since positional encoding values are between -1 and 1, the embedding
        # values are multiplied by the square root of the embedding dimension
        # to rescale before they are summed up
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[
                i] = blk.attention.attention.attention_weights
        return X
# %%
encoder = TransformerEncoder(200, 24, 48, 8, 2, 0.5)
d2l.check_shape(encoder(d2l.ones((2, 100), dtype=torch.long), valid_lens),
                (2, 100, 24))
# %%
class TransformerDecoderBlock(nn.Module):
    # The i-th block in the Transformer decoder
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = d2l.MultiHeadAttention(num_hiddens, num_heads,
                                                 dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = d2l.MultiHeadAttention(num_hiddens, num_heads,
                                                 dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        # During training, all the tokens of any output sequence are processed
        # at the same time, so state[2][self.i] is None as initialized. When
        # decoding any output sequence token by token during prediction,
        # state[2][self.i] contains representations of the decoded output at
        # the i-th block up to the current time step
        if state[2][self.i] is None:
            key_values = X
        else:
            key_values = torch.cat((state[2][self.i], X), dim=1)
        state[2][self.i] = key_values
        if self.training:
            batch_size, num_steps, _ = X.shape
            # Shape of dec_valid_lens: (batch_size, num_steps), where every
            # row is [1, 2, ..., num_steps]
            dec_valid_lens = torch.arange(
                1, num_steps + 1, device=X.device).tile(batch_size, 1)  # port: torch's repeat is tricycle's tile (repeat is numpy's: documented)
        else:
            dec_valid_lens = None
        # Self-attention
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens)
        Y = self.addnorm1(X, X2)
        # Encoder-decoder attention. Shape of enc_outputs:
        # (batch_size, num_steps, num_hiddens)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)
        Z = self.addnorm2(Y, Y2)
        return self.addnorm3(Z, self.ffn(Z)), state
# %%
decoder_blk = TransformerDecoderBlock(24, 48, 8, 0.5, 0)
X = d2l.ones((2, 100, 24))
state = [encoder_blk(X, valid_lens), valid_lens, [None]]
d2l.check_shape(decoder_blk(X, state)[0], X.shape)
# %%
class TransformerDecoder(d2l.AttentionDecoder):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
                 num_blks, dropout):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block"+str(i), TransformerDecoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, i))
        self.dense = nn.LazyLinear(vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def forward(self, X, state):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self._attention_weights = [[None] * len(self.blks) for _ in range (2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)
            # Decoder self-attention weights
            self._attention_weights[0][
                i] = blk.attention1.attention.attention_weights
            # Encoder-decoder attention weights
            self._attention_weights[1][
                i] = blk.attention2.attention.attention_weights
        return self.dense(X), state

    @property
    def attention_weights(self):
        return self._attention_weights
# %%
data = d2l.MTFraEng(batch_size=8, num_steps=6, num_train=32, num_val=8)  # port: the small table, its sentences short
num_hiddens, num_blks, dropout = 32, 2, 0.2  # port: shrunk
ffn_num_hiddens, num_heads = 64, 4
encoder = TransformerEncoder(
    len(data.src_vocab), num_hiddens, ffn_num_hiddens, num_heads,
    num_blks, dropout)
decoder = TransformerDecoder(
    len(data.tgt_vocab), num_hiddens, ffn_num_hiddens, num_heads,
    num_blks, dropout)
model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                    lr=0.001)
trainer = d2l.Trainer(max_epochs=3, gradient_clip_val=1, num_gpus=1)  # port: 3 epochs
trainer.fit(model, data)
# %%
engs = ['go .', 'i lost .', 'he\'s calm .', 'i\'m home .']
fras = ['va !', 'j\'ai perdu .', 'il est calme .', 'je suis chez moi .']
preds, _ = model.predict_step(
    data.build(engs, fras), d2l.try_gpu(), data.num_steps)
for en, fr, p in zip(engs, fras, preds):
    translation = []
    for token in data.tgt_vocab.to_tokens(p):
        if token == '<eos>':
            break
        translation.append(token)
    print(f'{en} => {translation}, bleu,'
          f'{d2l.bleu(" ".join(translation), fr, k=2):.3f}')
# %%
_, dec_attention_weights = model.predict_step(
    data.build([engs[-1]], [fras[-1]]), d2l.try_gpu(), data.num_steps, True)
enc_attention_weights = d2l.concat(model.encoder.attention_weights, 0)
shape = (num_blks, num_heads, -1, data.num_steps)
enc_attention_weights = d2l.reshape(enc_attention_weights, shape)
d2l.check_shape(enc_attention_weights,
                (num_blks, num_heads, data.num_steps, data.num_steps))
# %%
# d2l.show_heatmaps(enc_attention_weights.cpu(), xlabel='Key positions', ylabel='Query positions', titles=['Head %d' % i for i in range(1, 5)], figsize=(7, 3.5))  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
dec_attention_weights_2d = [head[0].tolist()
                            for step in dec_attention_weights
                            for attn in step for blk in attn for head in blk]
dec_attention_weights_filled = d2l.tensor(
    pd.DataFrame(dec_attention_weights_2d).fillna(0.0).values)
shape = (-1, 2, num_blks, num_heads, data.num_steps)
dec_attention_weights = d2l.reshape(dec_attention_weights_filled, shape)
dec_self_attention_weights, dec_inter_attention_weights = \
    dec_attention_weights.permute(1, 2, 3, 0, 4)
# %%
d2l.check_shape(dec_self_attention_weights,
                (num_blks, num_heads, data.num_steps, data.num_steps))
d2l.check_shape(dec_inter_attention_weights,
                (num_blks, num_heads, data.num_steps, data.num_steps))
# %%
# d2l.show_heatmaps(dec_self_attention_weights[:, :, :, :], xlabel='Key positions', ylabel='Query positions', titles=['Head %d' % i for i in range(1, 5)], figsize=(7, 3.5))  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
# %%
# d2l.show_heatmaps(dec_inter_attention_weights, xlabel='Key positions', ylabel='Query positions', titles=['Head %d' % i for i in range(1, 5)], figsize=(7, 3.5))  # port: not drawn (test time: a figure costs a second); the test checks what it would draw
'''

VISION_TRANSFORMER = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
class PatchEmbedding(nn.Module):
    def __init__(self, img_size=96, patch_size=16, num_hiddens=512):
        super().__init__()
        def _make_tuple(x):
            if not isinstance(x, (list, tuple)):
                return (x, x)
            return x
        img_size, patch_size = _make_tuple(img_size), _make_tuple(patch_size)
        self.num_patches = (img_size[0] // patch_size[0]) * (
            img_size[1] // patch_size[1])
        self.conv = nn.LazyConv2d(num_hiddens, kernel_size=patch_size,
                                  stride=patch_size)

    def forward(self, X):
        # Output shape: (batch size, no. of patches, no. of channels)
        return self.conv(X).flatten(2).transpose(1, 2)
# %%
img_size, patch_size, num_hiddens, batch_size = 96, 16, 512, 4
patch_emb = PatchEmbedding(img_size, patch_size, num_hiddens)
X = d2l.zeros(batch_size, 3, img_size, img_size)
d2l.check_shape(patch_emb(X),
                (batch_size, (img_size//patch_size)**2, num_hiddens))
# %%
class ViTMLP(nn.Module):
    def __init__(self, mlp_num_hiddens, mlp_num_outputs, dropout=0.5):
        super().__init__()
        self.dense1 = nn.LazyLinear(mlp_num_hiddens)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.LazyLinear(mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout2(self.dense2(self.dropout1(self.gelu(
            self.dense1(x)))))
# %%
class ViTBlock(nn.Module):
    def __init__(self, num_hiddens, norm_shape, mlp_num_hiddens,
                 num_heads, dropout, use_bias=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(norm_shape)
        self.attention = d2l.MultiHeadAttention(num_hiddens, num_heads,
                                                dropout, use_bias)
        self.ln2 = nn.LayerNorm(norm_shape)
        self.mlp = ViTMLP(mlp_num_hiddens, num_hiddens, dropout)

    def forward(self, X, valid_lens=None):
        X = X + self.attention(*([self.ln1(X)] * 3), valid_lens)
        return X + self.mlp(self.ln2(X))
# %%
X = d2l.ones((2, 100, 24))
encoder_blk = ViTBlock(24, 24, 48, 8, 0.5)
encoder_blk.eval()
d2l.check_shape(encoder_blk(X), X.shape)
# %%
class ViT(d2l.Classifier):
    """Vision Transformer."""
    def __init__(self, img_size, patch_size, num_hiddens, mlp_num_hiddens,
                 num_heads, num_blks, emb_dropout, blk_dropout, lr=0.1,
                 use_bias=False, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.patch_embedding = PatchEmbedding(
            img_size, patch_size, num_hiddens)
        self.cls_token = nn.Parameter(d2l.zeros(1, 1, num_hiddens))
        num_steps = self.patch_embedding.num_patches + 1  # Add the cls token
        # Positional embeddings are learnable
        self.pos_embedding = nn.Parameter(
            torch.randn(1, num_steps, num_hiddens))
        self.dropout = nn.Dropout(emb_dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(f"{i}", ViTBlock(
                num_hiddens, num_hiddens, mlp_num_hiddens,
                num_heads, blk_dropout, use_bias))
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens),
                                  nn.Linear(num_hiddens, num_classes))

    def forward(self, X):
        X = self.patch_embedding(X)
        X = d2l.concat((self.cls_token.expand(X.shape[0], -1, -1), X), 1)
        X = self.dropout(X + self.pos_embedding)
        for blk in self.blks:
            X = blk(X)
        return self.head(X[:, 0])
# %%
img_size, patch_size = 16, 4  # port: small images
num_hiddens, mlp_num_hiddens, num_heads, num_blks = 32, 64, 8, 2  # port: shrunk
emb_dropout, blk_dropout, lr = 0.1, 0.1, 0.1
model = ViT(img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads,
            num_blks, emb_dropout, blk_dropout, lr)
trainer = d2l.Trainer(max_epochs=2, num_gpus=1)  # port: 2 epochs
data = d2l.FashionMNIST(batch_size=16, resize=(img_size, img_size))  # port: small batches
trainer.fit(model, data)
'''


class DataFrame:
    """pandas' ``DataFrame`` of ragged rows, as the transformer section uses it: the rows
    padded with NaN, ``fillna`` and ``values``."""

    def __init__(self, rows):
        width = max(len(row) for row in rows)
        self.values = np.array([list(row) + [np.nan] * (width - len(row)) for row in rows])

    def fillna(self, value):
        filled = DataFrame([[]])
        filled.values = np.where(np.isnan(self.values), value, self.values)
        return filled


def both(script: str, tmp_path, monkeypatch, n_train: int = 32, keep=None):
    """``d2l_port.both`` with ``LIBRARY``, the English-French table at the book's
    ``../data/fra-eng/fra.txt``, pandas' ``DataFrame`` stand-in, and the Fashion-MNIST
    stand-in's ``n_train`` images (a quarter of that to validate on)."""
    table = tmp_path / "data" / "fra-eng" / "fra.txt"
    table.parent.mkdir(parents=True)
    table.write_text(fra_eng(), encoding="utf-8")
    stand_ins = d2l_port.stand_ins

    def with_pandas(lib, monkeypatch):
        stand_ins(lib, monkeypatch)
        monkeypatch.setattr(sys.modules["pandas"], "DataFrame", DataFrame, raising=False)

    monkeypatch.setattr(d2l_port, "stand_ins", with_pandas)
    monkeypatch.setattr(d2l_port, "N_TRAIN", n_train)
    monkeypatch.setattr(d2l_port, "N_VAL", n_train // 4)
    return d2l_port.both(script, tmp_path, monkeypatch, keep, extra=LIBRARY)


def normal(printed: str) -> list[str]:
    """``kinds`` with the translations' tokens aside (each model its own, from its own
    random start) and a tensor's record named as torch's."""
    text = re.sub(r"=> \[.*?\], bleu,\d\.\d+", "=> [...], bleu,", printed)
    return kinds(text)


def given_torchs(their_model, our_model, *inputs, train=False, rtol=1e-4, atol=1e-5) -> None:
    """Tricycle's ``our_model`` given torch's weights (``nn.from_torch``) gives torch's
    output, and the gradients of its parameters and of its float inputs, on ``inputs``
    (numpy arrays: float ones are differentiated; others passed as they are, ``None``)."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # a Tensor attribute is a buffer here (documented), torch's a plain attribute, outside
    # its state_dict: the positional encoding's P, the attention weights a forward kept
    missing, unexpected = tricycle.nn.from_torch(our_model, their_model.state_dict(), strict=False)  # fmt: skip
    assert unexpected == [] and all(re.search(r"(^|\.)(P|_?attention_weights)(\.\d+)?$", n) for n in missing), missing  # fmt: skip
    results = []
    for lib, model in (torch, their_model), (tricycle, our_model):
        model.train(train)
        model.zero_grad()
        args = [
            lib.tensor(a, requires_grad=a.dtype == np.float32) if isinstance(a, np.ndarray) else a
            for a in inputs
        ]
        out = model(*args)
        out = out[0] if isinstance(out, tuple) else out  # a decoder's (output, state)
        weights = np.linspace(-1, 1, int(np.prod(out.shape)), dtype=np.float32)
        (out * lib.tensor(weights.reshape(tuple(out.shape)))).sum().backward()
        grads = [host(a.grad) for a in args if getattr(a, "requires_grad", False)]
        results.append([host(out), *grads])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    linear = {f"{n}.weights".lstrip(".") for n, m in our_model.named_modules() if isinstance(m, tricycle.nn.Linear)}  # fmt: skip
    ours, theirs = our_model.named_parameters(), list(their_model.named_parameters())
    assert len(ours) == len(theirs)
    for (name, p), (_, q) in zip(ours, theirs, strict=True):
        want = host(q.grad).T if name in linear else host(q.grad)
        np.testing.assert_allclose(host(p.grad), want, rtol=rtol, atol=atol, err_msg=name)


def curve(space: dict, key: str = "train_loss") -> list[float]:
    """The points the book's progress board drew for ``key``."""
    return [float(p.y) for p in space["model"].board.data[key]]


def test_queries_keys_values(tmp_path, monkeypatch):
    def drawn(space):
        import matplotlib.pyplot as plt  # noqa: PLC0415

        return [np.asarray(im.get_array()) for ax in plt.gcf().axes for im in ax.images]

    (theirs, their), (ours, our) = both(QUERIES_KEYS_VALUES, tmp_path, monkeypatch, keep=drawn)
    assert normal(ours) == normal(theirs) == []
    for space in our, their:  # the identity drawn as a heatmap
        np.testing.assert_array_equal(np.concatenate(space["kept"]), np.eye(10))


def drawn(space) -> list[np.ndarray]:
    """The images of the figure that the section drew last."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return [np.asarray(im.get_array()) for ax in plt.gcf().axes for im in ax.images]


def test_attention_pooling(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ATTENTION_POOLING, tmp_path, monkeypatch, keep=drawn)
    assert normal(ours) == normal(theirs) == []
    torch, tricycle = their["torch"], our["tricycle"]
    x_train, y_train, x_val = (host(their[n]) for n in ("x_train", "y_train", "x_val"))
    assert np.all(np.diff(host(our["x_train"])) >= 0) and our["x_train"].shape == (40,)
    kernels = [[s[n] for n in ("gaussian", "boxcar", "constant", "epanechikov")] + s["kernels"] for s in (our, their)]  # fmt: skip
    for mine, torchs in zip(*kernels, strict=True):  # the eight kernels' regressions: torch's
        y_hat, attention_w = our["nadaraya_watson"](*(tricycle.tensor(a) for a in (x_train, y_train, x_val)), mine)  # fmt: skip
        t_hat, t_attention = their["nadaraya_watson"](*(torch.tensor(a) for a in (x_train, y_train, x_val)), torchs)  # fmt: skip
        np.testing.assert_allclose(host(attention_w), host(t_attention), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(host(y_hat), host(t_hat), rtol=1e-4, atol=1e-5)
    for space in our, their:  # the attention drawn last: its own
        weights = [host(space["nadaraya_watson"](space["x_train"], space["y_train"], space["x_val"], k)[1]) for k in space["kernels"]]  # fmt: skip
        assert len(space["kept"]) == 4
        for image, want in zip(space["kept"], weights, strict=True):
            np.testing.assert_allclose(image, want, rtol=1e-6)


def test_attention_scoring_functions(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ATTENTION_SCORING, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    torch, tricycle = their["torch"], our["tricycle"]
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(2, 2, 4)).astype(np.float32)
    for lens in np.array([2, 3]), np.array([[1, 3], [2, 4]]):  # the book's two maskings
        mine = our["masked_softmax"](tricycle.tensor(X), tricycle.tensor(lens))
        np.testing.assert_allclose(host(mine), host(their["masked_softmax"](torch.tensor(X), torch.tensor(lens))), rtol=1e-6)  # fmt: skip
        counts = np.broadcast_to(lens[:, None] if lens.ndim == 1 else lens, (2, 2))
        assert ((host(mine) > 0).sum(-1) == counts).all()
    for space in our, their:  # the additive attention's weights: only the valid keys
        weights = host(space["attention"].attention_weights)
        assert ((weights > 0).sum(-1).ravel() == [2, 6]).all()
    queries, keys, values = (rng.normal(size=s).astype(np.float32) for s in ((2, 3, 2), (2, 10, 2), (2, 10, 4)))  # fmt: skip
    lens = np.array([2, 6])
    for name, q in ("DotProductAttention", queries), ("AdditiveAttention", queries * 3):
        args = (8, 0.1) if name == "AdditiveAttention" else (0.5,)
        theirs, ours = their[name](*args), our[name](*args)
        theirs(torch.tensor(q), torch.tensor(keys), torch.tensor(values), torch.tensor(lens))
        ours(tricycle.tensor(q), tricycle.tensor(keys), tricycle.tensor(values), tricycle.tensor(lens))  # fmt: skip
        for valid in lens, np.array([[1, 3, 10], [2, 4, 6]]):  # the gradients through the mask
            given_torchs(theirs, ours, q, keys, values, valid)


def translates(their: dict, our: dict, rtol=1e-4, atol=1e-5) -> None:
    """The section's encoder-decoder: the book's training loss falls in both libraries, the
    two tables' vocabularies are the same, and, given torch's trained weights, tricycle's
    model gives torch's outputs and gradients on a batch of the table (eval mode: dropout
    off) and torch's translations."""
    for space in our, their:
        losses = curve(space)
        assert len(losses) == 6 and losses[-1] < losses[0], losses
    assert our["data"].tgt_vocab.idx_to_token == their["data"].tgt_vocab.idx_to_token
    src, tgt, src_valid_len, _ = (host(a)[:4] for a in their["data"].arrays)
    given_torchs(their["model"], our["model"], src, tgt, src_valid_len, rtol=rtol, atol=atol)
    batch = [host(a) for a in their["data"].build(their["engs"], their["fras"])]
    preds = [space["model"].predict_step([lib.tensor(a) for a in batch], "cpu", 6)[0] for space, lib in ((our, our["tricycle"]), (their, their["torch"]))]  # fmt: skip
    np.testing.assert_array_equal(host(preds[0]), host(preds[1]))


def test_bahdanau_attention(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BAHDANAU, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert len(re.findall(r"=> \[", ours)) == 4
    for space in our, their:  # one attention row per step decoded, over the 6 source steps
        assert tuple(space["attention_weights"].shape) == (1, 1, 6, 6)
        np.testing.assert_allclose(host(space["attention_weights"]).sum(-1), 1, rtol=1e-5)
    translates(their, our)


def test_multihead_attention(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MULTIHEAD, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    rng = np.random.default_rng(0)
    X, Y = (rng.normal(size=(2, n, 100)).astype(np.float32) for n in (4, 6))
    for valid in np.array([3, 2]), np.array([[1, 2, 3, 6], [6, 5, 4, 1]]), None:
        given_torchs(their["attention"], our["attention"], X, Y, Y, valid)
    torch, tricycle = their["torch"], our["tricycle"]  # the heads' reshaping and back
    heads = our["attention"].transpose_qkv(tricycle.tensor(X))
    assert heads.shape == (10, 4, 20)
    np.testing.assert_array_equal(host(heads), host(their["attention"].transpose_qkv(torch.tensor(X))))  # fmt: skip
    np.testing.assert_array_equal(host(our["attention"].transpose_output(heads)), X)


def test_self_attention_and_positional_encoding(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SELF_ATTENTION, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert "7 in binary is 111" in ours
    # the encoding: torch's (float32 sines of positions up to 1000), and what the book plots
    np.testing.assert_allclose(host(our["pos_encoding"].P), host(their["pos_encoding"].P), atol=2e-4)  # fmt: skip
    np.testing.assert_allclose(host(our["P"]), host(their["P"]), atol=1e-5)
    assert our["P"].shape == (1, 1, 60, 32)
    X = np.random.default_rng(0).normal(size=(2, 4, 100)).astype(np.float32)
    given_torchs(their["attention"], our["attention"], X, X, X, np.array([3, 2]))
    given_torchs(their["pos_encoding"], our["pos_encoding"], X[:, :, :32], train=True)


def test_transformer(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(TRANSFORMER, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    torch, tricycle = their["torch"], our["tricycle"]
    X = np.array([[1, 2], [2, 3]], np.float32)  # layer norm over rows, batch norm over columns
    for name, want in ("ln", [[-1, 1], [-1, 1]]), ("bn", [[-1, -1], [1, 1]]):
        np.testing.assert_allclose(host(our[name](tricycle.tensor(X))), want, atol=1e-4)
        given_torchs(their[name], our[name], X, train=True)
    rng = np.random.default_rng(0)
    given_torchs(their["ffn"], our["ffn"], np.ones((2, 3, 4), np.float32))
    given_torchs(their["add_norm"], our["add_norm"], *rng.normal(size=(2, 2, 3, 4)).astype(np.float32))  # fmt: skip
    lens = np.array([3, 2])
    given_torchs(their["encoder_blk"], our["encoder_blk"], rng.normal(size=(2, 5, 24)).astype(np.float32), lens)  # fmt: skip
    tokens = rng.integers(0, len(their["data"].src_vocab), size=(2, 7))  # the trained encoder's
    given_torchs(their["encoder"], our["encoder"], tokens, lens)
    for space in our, their:  # the decoder's self-attention weights, padded by the DataFrame
        weights = host(space["dec_self_attention_weights"])
        assert weights.shape == (2, 4, 6, 6) and np.allclose(np.triu(weights[..., 1:], 0), 0)
    translates(their, our)
    # the decoder in training (its causal valid lengths: tile), without dropout, from a start
    models = []
    for space, lib in (their, torch), (our, tricycle):
        lib.manual_seed(0)
        vocab = (len(their["data"].src_vocab), len(their["data"].tgt_vocab))
        encoder = space["TransformerEncoder"](vocab[0], 16, 32, 4, 2, 0.0)
        decoder = space["TransformerDecoder"](vocab[1], 16, 32, 4, 2, 0.0)
        models.append(space["d2l"].Seq2Seq(encoder, decoder, tgt_pad=1, lr=0.001))
    src, tgt, src_valid_len, _ = (host(a)[:4] for a in their["data"].arrays)
    for model, lib in zip(models, (torch, tricycle), strict=True):
        with lib.no_grad():
            model(lib.tensor(src), lib.tensor(tgt), lib.tensor(src_valid_len))
    given_torchs(*models, src, tgt, src_valid_len, train=True)


def test_vision_transformer(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(VISION_TRANSFORMER, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    torch, tricycle = their["torch"], our["tricycle"]
    for space, lib in (their, torch), (our, tricycle):  # the board's points, finite
        losses = curve(space)
        assert len(losses) == 4 and np.isfinite(losses).all(), losses
        a_step_lowers(space, lib)  # a step of its optimizer lowers a batch's loss
    rng = np.random.default_rng(0)
    given_torchs(their["model"], our["model"], rng.uniform(size=(4, 1, 16, 16)).astype(np.float32))  # fmt: skip
    given_torchs(their["encoder_blk"], our["encoder_blk"], rng.normal(size=(2, 5, 24)).astype(np.float32))  # fmt: skip
    given_torchs(their["patch_emb"], our["patch_emb"], rng.normal(size=(1, 3, 96, 96)).astype(np.float32))  # fmt: skip


def test_the_held_library_is_the_books():
    """``LIBRARY`` is the book's repository's text of ``d2l/torch.py``, in its order, but for
    the lines marked ``# port:`` (where the repository's read-only mirror is here)."""
    held, matched, others = d2l_port.against_book(LIBRARY, d2l_port.book())
    assert others
    assert len(held) > 500 and len(matched) > len(held) - 5
