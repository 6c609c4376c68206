"""Dive into Deep Learning (d2l-ai/d2l-en), its PyTorch code of the recurrent chapters, run
cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in its text, beside the book's
own library ``d2l/torch.py`` built the same way (tests/d2l_port.py; the recurrent parts it
lacks, ``TimeMachine`` to ``bleu``, held here as ``EXTRA``, the book's text unchanged):

- chapter_recurrent-neural-networks: text-sequence (the chapter's own ``TimeMachine``,
  ``Vocab``, unigram to trigram counts), language-model (``TimeMachine``'s shifted windows
  over ``d2l.tensor`` and its ``TensorDataset`` loaders), rnn-scratch (``RNNScratch`` over a
  list of steps, ``F.one_hot(...).type(torch.float32)``, ``RNNLMScratch``, the Trainer's
  ``clip_gradients`` writing ``param.grad[:] *= ...``, greedy ``predict``) and rnn-concise
  (``nn.RNN``, ``RNNLM``'s ``LazyLinear`` and ``swapaxes``);
- chapter_recurrent-modern: lstm and gru (from scratch, then ``nn.LSTM``/``nn.GRU``),
  deep-rnn (``StackedRNNScratch`` over an ``nn.Sequential`` of scratch RNNs, a two-layer
  ``nn.GRU``), bi-rnn (``BiRNNScratch`` reading ``reversed(inputs)``, ``nn.GRU(...,
  bidirectional=True)``: the chapter only defines them; here they run), machine-translation-
  and-dataset (``MTFraEng``: preprocessing, tokens, ``<pad>``/``<bos>``/``<eos>``, valid
  lengths), encoder-decoder (the interfaces) and seq2seq (``init_seq2seq`` through the GRU's
  ``_flat_weights_names`` and ``_parameters``, the encoder and decoder, the masked loss, Adam,
  ``predict_step``, ``bleu``). beam-search has no code (its search is described, not
  programmed).

The code is the book's PyTorch tab (its ``tab.selected`` branches resolved, as the book's
PyTorch notebooks have it). The downloads run as the book's ``d2l.download``/``extract``
write them, over a stand-in ``requests.get``: The Time Machine is tinyshakespeare's first
3000 characters (those tests skipped without it), fra-eng.zip a zip of a built-in table of
50 English-French pairs. Each changed line ends in ``# port:`` and says why: batches, steps,
sizes and epochs shrunk; the three plots of Python's counts dropped (no tensor in them);
torch's ``context.repeat(n, 1, 1)`` as ``tile`` (tricycle's ``repeat`` is numpy's:
documented). Each section runs under torch (skipped without it), then under tricycle, seeded,
on the CPU and one thread; both print the same lines (numbers, reprs and the characters an
untrained model predicts aside), the deterministic values are torch's (the vocabularies, the
corpora, the translation arrays), and the perplexity or loss that the book's board records
falls in both. Then every model of the chapters, given torch's weights (``nn.from_torch``),
gives torch's outputs, loss and gradients, the same greedy prediction, and after the book's
``clip_gradients`` and a step of its optimizer torch's parameters. The fixes these chapters
needed: ``reversed(x)`` is ``x.flip(0)`` as torch's (tricycle/tensor_extra.py), and the
recurrent layers have torch's ``_flat_weights_names`` and ``_parameters`` that d2l's
``init_seq2seq`` reads (tricycle/nn/recurrent.py).
"""

# ruff: noqa: E501, W291, W293

import io
import re
import sys
import types
import zipfile

import numpy as np
import pytest

from tests import d2l_port
from tests.helpers import DATA_DIR, one_thread
from tests.test_uvadlc_intro import kinds

EXTRA = r'''
class TimeMachine(d2l.DataModule):
    """The Time Machine dataset.

    Defined in :numref:`sec_text-sequence`"""
    def _download(self):
        fname = d2l.download(d2l.DATA_URL + 'timemachine.txt', self.root,
                             '090b5e7e70c295757f55df93cb0a180b9691891a')
        with open(fname) as f:
            return f.read()

    def _preprocess(self, text):
        """Defined in :numref:`sec_text-sequence`"""
        return re.sub('[^A-Za-z]+', ' ', text).lower()

    def _tokenize(self, text):
        """Defined in :numref:`sec_text-sequence`"""
        return list(text)

    def build(self, raw_text, vocab=None):
        """Defined in :numref:`sec_text-sequence`"""
        tokens = self._tokenize(self._preprocess(raw_text))
        if vocab is None: vocab = Vocab(tokens)
        corpus = [vocab[token] for token in tokens]
        return corpus, vocab

    def __init__(self, batch_size, num_steps, num_train=10000, num_val=5000):
        """Defined in :numref:`sec_language-model`"""
        super(d2l.TimeMachine, self).__init__()
        self.save_hyperparameters()
        corpus, self.vocab = self.build(self._download())
        array = d2l.tensor([corpus[i:i+num_steps+1]
                            for i in range(len(corpus)-num_steps)])
        self.X, self.Y = array[:,:-1], array[:,1:]

    def get_dataloader(self, train):
        """Defined in :numref:`subsec_partitioning-seqs`"""
        idx = slice(0, self.num_train) if train else slice(
            self.num_train, self.num_train + self.num_val)
        return self.get_tensorloader([self.X, self.Y], train, idx)

class Vocab:
    """Vocabulary for text."""
    def __init__(self, tokens=[], min_freq=0, reserved_tokens=[]):
        """Defined in :numref:`sec_text-sequence`"""
        # Flatten a 2D list if needed
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        # Count token frequencies
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1],
                                  reverse=True)
        # The list of unique tokens
        self.idx_to_token = list(sorted(set(['<unk>'] + reserved_tokens + [
            token for token, freq in self.token_freqs if freq >= min_freq])))
        self.token_to_idx = {token: idx
                             for idx, token in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if hasattr(indices, '__len__') and len(indices) > 1:
            return [self.idx_to_token[int(index)] for index in indices]
        return self.idx_to_token[indices]

    @property
    def unk(self):  # Index for the unknown token
        return self.token_to_idx['<unk>']

class RNNScratch(d2l.Module):
    """The RNN model implemented from scratch.

    Defined in :numref:`sec_rnn-scratch`"""
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xh = nn.Parameter(
            d2l.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(
            d2l.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(d2l.zeros(num_hiddens))

    def forward(self, inputs, state=None):
        """Defined in :numref:`sec_rnn-scratch`"""
        if state is None:
            # Initial state with shape: (batch_size, num_hiddens)
            state = d2l.zeros((inputs.shape[1], self.num_hiddens),
                              device=inputs.device)
        else:
            state, = state
        outputs = []
        for X in inputs:  # Shape of inputs: (num_steps, batch_size, num_inputs)
            state = d2l.tanh(d2l.matmul(X, self.W_xh) +
                             d2l.matmul(state, self.W_hh) + self.b_h)
            outputs.append(state)
        return outputs, state

def check_len(a, n):
    """Check the length of a list.

    Defined in :numref:`sec_rnn-scratch`"""
    assert len(a) == n, f'list\'s length {len(a)} != expected length {n}'

def check_shape(a, shape):
    """Check the shape of a tensor.

    Defined in :numref:`sec_rnn-scratch`"""
    assert a.shape == shape, \
            f'tensor\'s shape {a.shape} != expected shape {shape}'

class RNNLMScratch(d2l.Classifier):
    """The RNN-based language model implemented from scratch.

    Defined in :numref:`sec_rnn-scratch`"""
    def __init__(self, rnn, vocab_size, lr=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.init_params()

    def init_params(self):
        self.W_hq = nn.Parameter(
            d2l.randn(
                self.rnn.num_hiddens, self.vocab_size) * self.rnn.sigma)
        self.b_q = nn.Parameter(d2l.zeros(self.vocab_size))

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=False)

    def one_hot(self, X):
        """Defined in :numref:`sec_rnn-scratch`"""
        # Output shape: (num_steps, batch_size, vocab_size)
        return F.one_hot(X.T, self.vocab_size).type(torch.float32)

    def output_layer(self, rnn_outputs):
        """Defined in :numref:`sec_rnn-scratch`"""
        outputs = [d2l.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs]
        return d2l.stack(outputs, 1)
    

    def forward(self, X, state=None):
        """Defined in :numref:`sec_rnn-scratch`"""
        embs = self.one_hot(X)
        rnn_outputs, _ = self.rnn(embs, state)
        return self.output_layer(rnn_outputs)

    def predict(self, prefix, num_preds, vocab, device=None):
        """Defined in :numref:`sec_rnn-scratch`"""
        state, outputs = None, [vocab[prefix[0]]]
        for i in range(len(prefix) + num_preds - 1):
            X = d2l.tensor([[outputs[-1]]], device=device)
            embs = self.one_hot(X)
            rnn_outputs, state = self.rnn(embs, state)
            if i < len(prefix) - 1:  # Warm-up period
                outputs.append(vocab[prefix[i + 1]])
            else:  # Predict num_preds steps
                Y = self.output_layer(rnn_outputs)
                outputs.append(int(d2l.reshape(d2l.argmax(Y, axis=2), 1)))
        return ''.join([vocab.idx_to_token[i] for i in outputs])

class RNN(d2l.Module):
    """The RNN model implemented with high-level APIs.

    Defined in :numref:`sec_rnn-concise`"""
    def __init__(self, num_inputs, num_hiddens):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.RNN(num_inputs, num_hiddens)

    def forward(self, inputs, H=None):
        return self.rnn(inputs, H)

class RNNLM(d2l.RNNLMScratch):
    """The RNN-based language model implemented with high-level APIs.

    Defined in :numref:`sec_rnn-concise`"""
    def init_params(self):
        self.linear = nn.LazyLinear(self.vocab_size)

    def output_layer(self, hiddens):
        return d2l.swapaxes(self.linear(hiddens), 0, 1)

class GRU(d2l.RNN):
    """The multilayer GRU model.

    Defined in :numref:`sec_deep_rnn`"""
    def __init__(self, num_inputs, num_hiddens, num_layers, dropout=0):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.GRU(num_inputs, num_hiddens, num_layers,
                          dropout=dropout)

class MTFraEng(d2l.DataModule):
    """The English-French dataset.

    Defined in :numref:`sec_machine_translation`"""
    def _download(self):
        d2l.extract(d2l.download(
            d2l.DATA_URL+'fra-eng.zip', self.root,
            '94646ad1522d915e7b0f9296181140edcf86a4f5'))
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

def show_list_len_pair_hist(legend, xlabel, ylabel, xlist, ylist):
    """Plot the histogram for list length pairs.

    Defined in :numref:`sec_machine_translation`"""
    d2l.set_figsize()
    _, _, patches = d2l.plt.hist(
        [[len(l) for l in xlist], [len(l) for l in ylist]])
    d2l.plt.xlabel(xlabel)
    d2l.plt.ylabel(ylabel)
    for patch in patches[1].patches:
        patch.set_hatch('/')
    d2l.plt.legend(legend)

class Encoder(nn.Module):
    """The base encoder interface for the encoder--decoder architecture.

    Defined in :numref:`sec_encoder-decoder`"""
    def __init__(self):
        super().__init__()

    # Later there can be additional arguments (e.g., length excluding padding)
    def forward(self, X, *args):
        raise NotImplementedError

class Decoder(nn.Module):
    """The base decoder interface for the encoder--decoder architecture.

    Defined in :numref:`sec_encoder-decoder`"""
    def __init__(self):
        super().__init__()

    # Later there can be additional arguments (e.g., length excluding padding)
    def init_state(self, enc_all_outputs, *args):
        raise NotImplementedError

    def forward(self, X, state):
        raise NotImplementedError

class EncoderDecoder(d2l.Classifier):
    """The base class for the encoder--decoder architecture.

    Defined in :numref:`sec_encoder-decoder`"""
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        # Return decoder output only
        return self.decoder(dec_X, dec_state)[0]

    def predict_step(self, batch, device, num_steps,
                     save_attention_weights=False):
        """Defined in :numref:`sec_seq2seq_training`"""
        batch = [d2l.to(a, device) for a in batch]
        src, tgt, src_valid_len, _ = batch
        enc_all_outputs = self.encoder(src, src_valid_len)
        dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
        outputs, attention_weights = [d2l.expand_dims(tgt[:, 0], 1), ], []
        for _ in range(num_steps):
            Y, dec_state = self.decoder(outputs[-1], dec_state)
            outputs.append(d2l.argmax(Y, 2))
            # Save attention weights (to be covered later)
            if save_attention_weights:
                attention_weights.append(self.decoder.attention_weights)
        return d2l.concat(outputs[1:], 1), attention_weights

def init_seq2seq(module):
    """Initialize weights for sequence-to-sequence learning.

    Defined in :numref:`sec_seq2seq`"""
    if type(module) == nn.Linear:
         nn.init.xavier_uniform_(module.weight)
    if type(module) == nn.GRU:
        for param in module._flat_weights_names:
            if "weight" in param:
                nn.init.xavier_uniform_(module._parameters[param])

class Seq2SeqEncoder(d2l.Encoder):
    """The RNN encoder for sequence-to-sequence learning.

    Defined in :numref:`sec_seq2seq`"""
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = d2l.GRU(embed_size, num_hiddens, num_layers, dropout)
        self.apply(init_seq2seq)

    def forward(self, X, *args):
        # X shape: (batch_size, num_steps)
        embs = self.embedding(d2l.astype(d2l.transpose(X), d2l.int64))
        # embs shape: (num_steps, batch_size, embed_size)
        outputs, state = self.rnn(embs)
        # outputs shape: (num_steps, batch_size, num_hiddens)
        # state shape: (num_layers, batch_size, num_hiddens)
        return outputs, state

class Seq2Seq(d2l.EncoderDecoder):
    """The RNN encoder--decoder for sequence to sequence learning.

    Defined in :numref:`sec_seq2seq_decoder`"""
    def __init__(self, encoder, decoder, tgt_pad, lr):
        super().__init__(encoder, decoder)
        self.save_hyperparameters()

    def validation_step(self, batch):
        Y_hat = self(*batch[:-1])
        self.plot('loss', self.loss(Y_hat, batch[-1]), train=False)

    def configure_optimizers(self):
        # Adam optimizer is used here
        return torch.optim.Adam(self.parameters(), lr=self.lr)

def bleu(pred_seq, label_seq, k):
    """Compute the BLEU.

    Defined in :numref:`sec_seq2seq_training`"""
    pred_tokens, label_tokens = pred_seq.split(' '), label_seq.split(' ')
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[' '.join(label_tokens[i: i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[' '.join(pred_tokens[i: i + n])] > 0:
                num_matches += 1
                label_subs[' '.join(pred_tokens[i: i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score

'''

TEXT_SEQUENCE = r'''
import collections
import re
from d2l import torch as d2l
import torch
import random
# %%
class TimeMachine(d2l.DataModule): #@save
    """The Time Machine dataset."""
    def _download(self):
        fname = d2l.download(d2l.DATA_URL + 'timemachine.txt', self.root,
                             '090b5e7e70c295757f55df93cb0a180b9691891a')
        with open(fname) as f:
            return f.read()

data = TimeMachine()
raw_text = data._download()
raw_text[:60]
# %%
@d2l.add_to_class(TimeMachine)  #@save
def _preprocess(self, text):
    return re.sub('[^A-Za-z]+', ' ', text).lower()

text = data._preprocess(raw_text)
text[:60]
# %%
@d2l.add_to_class(TimeMachine)  #@save
def _tokenize(self, text):
    return list(text)

tokens = data._tokenize(text)
','.join(tokens[:30])
# %%
class Vocab:  #@save
    """Vocabulary for text."""
    def __init__(self, tokens=[], min_freq=0, reserved_tokens=[]):
        # Flatten a 2D list if needed
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        # Count token frequencies
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1],
                                  reverse=True)
        # The list of unique tokens
        self.idx_to_token = list(sorted(set(['<unk>'] + reserved_tokens + [
            token for token, freq in self.token_freqs if freq >= min_freq])))
        self.token_to_idx = {token: idx
                             for idx, token in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if hasattr(indices, '__len__') and len(indices) > 1:
            return [self.idx_to_token[int(index)] for index in indices]
        return self.idx_to_token[indices]

    @property
    def unk(self):  # Index for the unknown token
        return self.token_to_idx['<unk>']
# %%
vocab = Vocab(tokens)
indices = vocab[tokens[:10]]
print('indices:', indices)
print('words:', vocab.to_tokens(indices))
# %%
@d2l.add_to_class(TimeMachine)  #@save
def build(self, raw_text, vocab=None):
    tokens = self._tokenize(self._preprocess(raw_text))
    if vocab is None: vocab = Vocab(tokens)
    corpus = [vocab[token] for token in tokens]
    return corpus, vocab

corpus, vocab = data.build(raw_text)
len(corpus), len(vocab)
# %%
words = text.split()
vocab = Vocab(words)
vocab.token_freqs[:10]
# %%
freqs = [freq for token, freq in vocab.token_freqs]
# d2l.plot(freqs, xlabel='token: x', ylabel='frequency: n(x)',  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
#          xscale='log', yscale='log')  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
# %%
bigram_tokens = ['--'.join(pair) for pair in zip(words[:-1], words[1:])]
bigram_vocab = Vocab(bigram_tokens)
bigram_vocab.token_freqs[:10]
# %%
trigram_tokens = ['--'.join(triple) for triple in zip(
    words[:-2], words[1:-1], words[2:])]
trigram_vocab = Vocab(trigram_tokens)
trigram_vocab.token_freqs[:10]
# %%
bigram_freqs = [freq for token, freq in bigram_vocab.token_freqs]
trigram_freqs = [freq for token, freq in trigram_vocab.token_freqs]
# d2l.plot([freqs, bigram_freqs, trigram_freqs], xlabel='token: x',  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
#          ylabel='frequency: n(x)', xscale='log', yscale='log',  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
#          legend=['unigram', 'bigram', 'trigram'])  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
'''

LANGUAGE_MODEL = r"""
from d2l import torch as d2l
import torch
# %%
@d2l.add_to_class(d2l.TimeMachine)  #@save
def __init__(self, batch_size, num_steps, num_train=10000, num_val=5000):
    super(d2l.TimeMachine, self).__init__()
    self.save_hyperparameters()
    corpus, self.vocab = self.build(self._download())
    array = d2l.tensor([corpus[i:i+num_steps+1] 
                        for i in range(len(corpus)-num_steps)])
    self.X, self.Y = array[:,:-1], array[:,1:]
# %%
@d2l.add_to_class(d2l.TimeMachine)  #@save
def get_dataloader(self, train):
    idx = slice(0, self.num_train) if train else slice(
        self.num_train, self.num_train + self.num_val)
    return self.get_tensorloader([self.X, self.Y], train, idx)
# %%
data = d2l.TimeMachine(batch_size=2, num_steps=10)
for X, Y in data.train_dataloader():
    print('X:', X, '\nY:', Y)
    break
"""

RNN_SCRATCH = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import math
import torch
from torch import nn
from torch.nn import functional as F
# %%
class RNNScratch(d2l.Module):  #@save
    """The RNN model implemented from scratch."""
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W_xh = nn.Parameter(
            d2l.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(
            d2l.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(d2l.zeros(num_hiddens))
# %%
@d2l.add_to_class(RNNScratch)  #@save
def forward(self, inputs, state=None):
    if state is None:
        # Initial state with shape: (batch_size, num_hiddens)
        state = d2l.zeros((inputs.shape[1], self.num_hiddens),
                          device=inputs.device)
    else:
        state, = state
    outputs = []
    for X in inputs:  # Shape of inputs: (num_steps, batch_size, num_inputs) 
        state = d2l.tanh(d2l.matmul(X, self.W_xh) +
                         d2l.matmul(state, self.W_hh) + self.b_h)
        outputs.append(state)
    return outputs, state
# %%
batch_size, num_inputs, num_hiddens, num_steps = 2, 16, 32, 100
rnn = RNNScratch(num_inputs, num_hiddens)
X = d2l.ones((num_steps, batch_size, num_inputs))
outputs, state = rnn(X)
# %%
def check_len(a, n):  #@save
    """Check the length of a list."""
    assert len(a) == n, f'list\'s length {len(a)} != expected length {n}'
    
def check_shape(a, shape):  #@save
    """Check the shape of a tensor."""
    assert a.shape == shape, \
            f'tensor\'s shape {a.shape} != expected shape {shape}'

check_len(outputs, num_steps)
check_shape(outputs[0], (batch_size, num_hiddens))
check_shape(state, (batch_size, num_hiddens))
# %%
class RNNLMScratch(d2l.Classifier):  #@save
    """The RNN-based language model implemented from scratch."""
    def __init__(self, rnn, vocab_size, lr=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.init_params()
        
    def init_params(self):
        self.W_hq = nn.Parameter(
            d2l.randn(
                self.rnn.num_hiddens, self.vocab_size) * self.rnn.sigma)
        self.b_q = nn.Parameter(d2l.zeros(self.vocab_size)) 

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=True)
        return l
        
    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('ppl', d2l.exp(l), train=False)
# %%
F.one_hot(torch.tensor([0, 2]), 5)
# %%
@d2l.add_to_class(RNNLMScratch)  #@save
def one_hot(self, X):    
    # Output shape: (num_steps, batch_size, vocab_size)    
    return F.one_hot(X.T, self.vocab_size).type(torch.float32)
# %%
@d2l.add_to_class(RNNLMScratch)  #@save
def output_layer(self, rnn_outputs):
    outputs = [d2l.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs]
    return d2l.stack(outputs, 1)

@d2l.add_to_class(RNNLMScratch)  #@save
def forward(self, X, state=None):
    embs = self.one_hot(X)
    rnn_outputs, _ = self.rnn(embs, state)
    return self.output_layer(rnn_outputs)
# %%
model = RNNLMScratch(rnn, num_inputs)
outputs = model(d2l.ones((batch_size, num_steps), dtype=d2l.int64))
check_shape(outputs, (batch_size, num_steps, num_inputs))
# %%
@d2l.add_to_class(d2l.Trainer)  #@save
def clip_gradients(self, grad_clip_val, model):
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > grad_clip_val:
        for param in params:
            param.grad[:] *= grad_clip_val / norm
# %%
data = d2l.TimeMachine(batch_size=32, num_steps=8, num_train=128, num_val=32)  # port: batches, steps and examples shrunk
rnn = RNNScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = RNNLMScratch(rnn, vocab_size=len(data.vocab), lr=1)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 100)
trainer.fit(model, data)
# %%
@d2l.add_to_class(RNNLMScratch)  #@save
def predict(self, prefix, num_preds, vocab, device=None):
    state, outputs = None, [vocab[prefix[0]]]
    for i in range(len(prefix) + num_preds - 1):
        X = d2l.tensor([[outputs[-1]]], device=device)
        embs = self.one_hot(X)
        rnn_outputs, state = self.rnn(embs, state)
        if i < len(prefix) - 1:  # Warm-up period
            outputs.append(vocab[prefix[i + 1]])
        else:  # Predict num_preds steps
            Y = self.output_layer(rnn_outputs)
            outputs.append(int(d2l.reshape(d2l.argmax(Y, axis=2), 1)))
    return ''.join([vocab.idx_to_token[i] for i in outputs])
# %%
model.predict('it has', 20, data.vocab, d2l.try_gpu())
'''

RNN_CONCISE = r'''
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
class RNN(d2l.Module):  #@save
    """The RNN model implemented with high-level APIs."""
    def __init__(self, num_inputs, num_hiddens):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.RNN(num_inputs, num_hiddens)
        
    def forward(self, inputs, H=None):
        return self.rnn(inputs, H)
# %%
class RNNLM(d2l.RNNLMScratch):  #@save
    """The RNN-based language model implemented with high-level APIs."""
    def init_params(self):
        self.linear = nn.LazyLinear(self.vocab_size)
        
    def output_layer(self, hiddens):
        return d2l.swapaxes(self.linear(hiddens), 0, 1)
# %%
data = d2l.TimeMachine(batch_size=32, num_steps=8, num_train=128, num_val=32)  # port: batches, steps and examples shrunk
rnn = RNN(num_inputs=len(data.vocab), num_hiddens=32)
model = RNNLM(rnn, vocab_size=len(data.vocab), lr=1)
model.predict('it has', 20, data.vocab)
# %%
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 100)
trainer.fit(model, data)
# %%
model.predict('it has', 20, data.vocab, d2l.try_gpu())
'''

LSTM = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
class LSTMScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()

        init_weight = lambda *shape: nn.Parameter(d2l.randn(*shape) * sigma)
        triple = lambda: (init_weight(num_inputs, num_hiddens),
                          init_weight(num_hiddens, num_hiddens),
                          nn.Parameter(d2l.zeros(num_hiddens)))
        self.W_xi, self.W_hi, self.b_i = triple()  # Input gate
        self.W_xf, self.W_hf, self.b_f = triple()  # Forget gate
        self.W_xo, self.W_ho, self.b_o = triple()  # Output gate
        self.W_xc, self.W_hc, self.b_c = triple()  # Input node
# %%
@d2l.add_to_class(LSTMScratch)
def forward(self, inputs, H_C=None):
    if H_C is None:
        # Initial state with shape: (batch_size, num_hiddens)
        H = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
        C = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
    else:
        H, C = H_C
    outputs = []
    for X in inputs:
        I = d2l.sigmoid(d2l.matmul(X, self.W_xi) +
                        d2l.matmul(H, self.W_hi) + self.b_i)
        F = d2l.sigmoid(d2l.matmul(X, self.W_xf) +
                        d2l.matmul(H, self.W_hf) + self.b_f)
        O = d2l.sigmoid(d2l.matmul(X, self.W_xo) +
                        d2l.matmul(H, self.W_ho) + self.b_o)
        C_tilde = d2l.tanh(d2l.matmul(X, self.W_xc) +
                           d2l.matmul(H, self.W_hc) + self.b_c)
        C = F * C + I * C_tilde
        H = O * d2l.tanh(C)
        outputs.append(H)
    return outputs, (H, C)
# %%
data = d2l.TimeMachine(batch_size=32, num_steps=8, num_train=128, num_val=32)  # port: batches, steps and examples shrunk
lstm = LSTMScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLMScratch(lstm, vocab_size=len(data.vocab), lr=4)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 50)
trainer.fit(model, data)
# %%
class LSTM(d2l.RNN):
    def __init__(self, num_inputs, num_hiddens):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.LSTM(num_inputs, num_hiddens)

    def forward(self, inputs, H_C=None):
        return self.rnn(inputs, H_C)
# %%
lstm = LSTM(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLM(lstm, vocab_size=len(data.vocab), lr=4)
trainer.fit(model, data)
# %%
model.predict('it has', 20, data.vocab, d2l.try_gpu())
"""

GRU = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
class GRUScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        
        init_weight = lambda *shape: nn.Parameter(d2l.randn(*shape) * sigma)
        triple = lambda: (init_weight(num_inputs, num_hiddens),
                          init_weight(num_hiddens, num_hiddens),
                          nn.Parameter(d2l.zeros(num_hiddens)))
        self.W_xz, self.W_hz, self.b_z = triple()  # Update gate
        self.W_xr, self.W_hr, self.b_r = triple()  # Reset gate
        self.W_xh, self.W_hh, self.b_h = triple()  # Candidate hidden state        
# %%
@d2l.add_to_class(GRUScratch)
def forward(self, inputs, H=None):
    if H is None:
        # Initial state with shape: (batch_size, num_hiddens)
        H = d2l.zeros((inputs.shape[1], self.num_hiddens),
                      device=inputs.device)
    outputs = []
    for X in inputs:
        Z = d2l.sigmoid(d2l.matmul(X, self.W_xz) +
                        d2l.matmul(H, self.W_hz) + self.b_z)
        R = d2l.sigmoid(d2l.matmul(X, self.W_xr) + 
                        d2l.matmul(H, self.W_hr) + self.b_r)
        H_tilde = d2l.tanh(d2l.matmul(X, self.W_xh) + 
                           d2l.matmul(R * H, self.W_hh) + self.b_h)
        H = Z * H + (1 - Z) * H_tilde
        outputs.append(H)
    return outputs, H
# %%
data = d2l.TimeMachine(batch_size=32, num_steps=8, num_train=128, num_val=32)  # port: batches, steps and examples shrunk
gru = GRUScratch(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLMScratch(gru, vocab_size=len(data.vocab), lr=4)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 50)
trainer.fit(model, data)
# %%
class GRU(d2l.RNN):
    def __init__(self, num_inputs, num_hiddens):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.GRU(num_inputs, num_hiddens)
# %%
gru = GRU(num_inputs=len(data.vocab), num_hiddens=32)
model = d2l.RNNLM(gru, vocab_size=len(data.vocab), lr=4)
trainer.fit(model, data)
# %%
model.predict('it has', 20, data.vocab, d2l.try_gpu())
"""

DEEP_RNN = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
class StackedRNNScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, num_layers, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.rnns = nn.Sequential(*[d2l.RNNScratch(
            num_inputs if i==0 else num_hiddens, num_hiddens, sigma)
                                    for i in range(num_layers)])
# %%
@d2l.add_to_class(StackedRNNScratch)
def forward(self, inputs, Hs=None):
    outputs = inputs
    if Hs is None: Hs = [None] * self.num_layers
    for i in range(self.num_layers):
        outputs, Hs[i] = self.rnns[i](outputs, Hs[i])
        outputs = d2l.stack(outputs, 0)
    return outputs, Hs
# %%
data = d2l.TimeMachine(batch_size=32, num_steps=8, num_train=128, num_val=32)  # port: batches, steps and examples shrunk
rnn_block = StackedRNNScratch(num_inputs=len(data.vocab),
                              num_hiddens=32, num_layers=2)
model = d2l.RNNLMScratch(rnn_block, vocab_size=len(data.vocab), lr=2)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 100)
trainer.fit(model, data)
# %%
class GRU(d2l.RNN):  #@save
    """The multilayer GRU model."""
    def __init__(self, num_inputs, num_hiddens, num_layers, dropout=0):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.GRU(num_inputs, num_hiddens, num_layers,
                          dropout=dropout)
# %%
gru = GRU(num_inputs=len(data.vocab), num_hiddens=32, num_layers=2)
model = d2l.RNNLM(gru, vocab_size=len(data.vocab), lr=2)
trainer.fit(model, data)
# %%
model.predict('it has', 20, data.vocab, d2l.try_gpu())
'''

BI_RNN = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
class BiRNNScratch(d2l.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.f_rnn = d2l.RNNScratch(num_inputs, num_hiddens, sigma)
        self.b_rnn = d2l.RNNScratch(num_inputs, num_hiddens, sigma)
        self.num_hiddens *= 2  # The output dimension will be doubled
# %%
@d2l.add_to_class(BiRNNScratch)
def forward(self, inputs, Hs=None):
    f_H, b_H = Hs if Hs is not None else (None, None)
    f_outputs, f_H = self.f_rnn(inputs, f_H)
    b_outputs, b_H = self.b_rnn(reversed(inputs), b_H)
    outputs = [d2l.concat((f, b), -1) for f, b in zip(
        f_outputs, reversed(b_outputs))]
    return outputs, (f_H, b_H)
# %%
class BiGRU(d2l.RNN):
    def __init__(self, num_inputs, num_hiddens):
        d2l.Module.__init__(self)
        self.save_hyperparameters()
        self.rnn = nn.GRU(num_inputs, num_hiddens, bidirectional=True)
        self.num_hiddens *= 2
"""

MACHINE_TRANSLATION = r'''
from d2l import torch as d2l
import torch
import os
# %%
class MTFraEng(d2l.DataModule):  #@save
    """The English-French dataset."""
    def _download(self):
        d2l.extract(d2l.download(
            d2l.DATA_URL+'fra-eng.zip', self.root, 
            '94646ad1522d915e7b0f9296181140edcf86a4f5'))
        with open(self.root + '/fra-eng/fra.txt', encoding='utf-8') as f:
            return f.read()
# %%
data = MTFraEng() 
raw_text = data._download()
print(raw_text[:75])
# %%
@d2l.add_to_class(MTFraEng)  #@save
def _preprocess(self, text):
    # Replace non-breaking space with space
    text = text.replace('\u202f', ' ').replace('\xa0', ' ')
    # Insert space between words and punctuation marks
    no_space = lambda char, prev_char: char in ',.!?' and prev_char != ' '
    out = [' ' + char if i > 0 and no_space(char, text[i - 1]) else char
           for i, char in enumerate(text.lower())]
    return ''.join(out)
# %%
text = data._preprocess(raw_text)
print(text[:80])
# %%
@d2l.add_to_class(MTFraEng)  #@save
def _tokenize(self, text, max_examples=None):
    src, tgt = [], []
    for i, line in enumerate(text.split('\n')):
        if max_examples and i > max_examples: break
        parts = line.split('\t')
        if len(parts) == 2:
            # Skip empty tokens
            src.append([t for t in f'{parts[0]} <eos>'.split(' ') if t])
            tgt.append([t for t in f'{parts[1]} <eos>'.split(' ') if t])
    return src, tgt
# %%
src, tgt = data._tokenize(text)
src[:6], tgt[:6]
# %%
#@save
def show_list_len_pair_hist(legend, xlabel, ylabel, xlist, ylist):
    """Plot the histogram for list length pairs."""
    d2l.set_figsize()
    _, _, patches = d2l.plt.hist(
        [[len(l) for l in xlist], [len(l) for l in ylist]])
    d2l.plt.xlabel(xlabel)
    d2l.plt.ylabel(ylabel)
    for patch in patches[1].patches:
        patch.set_hatch('/')
    d2l.plt.legend(legend)
# %%
# show_list_len_pair_hist(['source', 'target'], '# tokens per sequence',  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
#                         'count', src, tgt);  # port: plot dropped (it draws Python's counts, no tensor: matplotlib's time)
# %%
@d2l.add_to_class(MTFraEng)  #@save
def __init__(self, batch_size, num_steps=9, num_train=512, num_val=128):
    super(MTFraEng, self).__init__()
    self.save_hyperparameters()
    self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(
        self._download())
# %%
@d2l.add_to_class(MTFraEng)  #@save
def _build_arrays(self, raw_text, src_vocab=None, tgt_vocab=None):
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
# %%
@d2l.add_to_class(MTFraEng)  #@save
def get_dataloader(self, train):
    idx = slice(0, self.num_train) if train else slice(self.num_train, None)
    return self.get_tensorloader(self.arrays, train, idx)
# %%
data = MTFraEng(batch_size=3)
src, tgt, src_valid_len, label = next(iter(data.train_dataloader()))
print('source:', d2l.astype(src, d2l.int32))
print('decoder input:', d2l.astype(tgt, d2l.int32))
print('source len excluding pad:', d2l.astype(src_valid_len, d2l.int32))
print('label:', d2l.astype(label, d2l.int32))
# %%
@d2l.add_to_class(MTFraEng)  #@save
def build(self, src_sentences, tgt_sentences):
    raw_text = '\n'.join([src + '\t' + tgt for src, tgt in zip(
        src_sentences, tgt_sentences)])
    arrays, _, _ = self._build_arrays(
        raw_text, self.src_vocab, self.tgt_vocab)
    return arrays
# %%
src, tgt, _,  _ = data.build(['hi .'], ['salut .'])
print('source:', data.src_vocab.to_tokens(d2l.astype(src[0], d2l.int32)))
print('target:', data.tgt_vocab.to_tokens(d2l.astype(tgt[0], d2l.int32)))
'''

ENCODER_DECODER = r'''
from d2l import torch as d2l
from torch import nn
# %%
class Encoder(nn.Module):  #@save
    """The base encoder interface for the encoder--decoder architecture."""
    def __init__(self):
        super().__init__()

    # Later there can be additional arguments (e.g., length excluding padding)
    def forward(self, X, *args):
        raise NotImplementedError
# %%
class Decoder(nn.Module):  #@save
    """The base decoder interface for the encoder--decoder architecture."""
    def __init__(self):
        super().__init__()

    # Later there can be additional arguments (e.g., length excluding padding)
    def init_state(self, enc_all_outputs, *args):
        raise NotImplementedError

    def forward(self, X, state):
        raise NotImplementedError
# %%
class EncoderDecoder(d2l.Classifier):  #@save
    """The base class for the encoder--decoder architecture."""
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        # Return decoder output only
        return self.decoder(dec_X, dec_state)[0]
'''

SEQ2SEQ = r'''
import collections
from d2l import torch as d2l
import math
import torch
from torch import nn
from torch.nn import functional as F
# %%
def init_seq2seq(module):  #@save
    """Initialize weights for sequence-to-sequence learning."""
    if type(module) == nn.Linear:
         nn.init.xavier_uniform_(module.weight)
    if type(module) == nn.GRU:
        for param in module._flat_weights_names:
            if "weight" in param:
                nn.init.xavier_uniform_(module._parameters[param])
# %%
class Seq2SeqEncoder(d2l.Encoder):  #@save
    """The RNN encoder for sequence-to-sequence learning."""
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = d2l.GRU(embed_size, num_hiddens, num_layers, dropout)
        self.apply(init_seq2seq)
            
    def forward(self, X, *args):
        # X shape: (batch_size, num_steps)
        embs = self.embedding(d2l.astype(d2l.transpose(X), d2l.int64))
        # embs shape: (num_steps, batch_size, embed_size)
        outputs, state = self.rnn(embs)
        # outputs shape: (num_steps, batch_size, num_hiddens)
        # state shape: (num_layers, batch_size, num_hiddens)
        return outputs, state
# %%
vocab_size, embed_size, num_hiddens, num_layers = 10, 8, 16, 2
batch_size, num_steps = 4, 9
encoder = Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers)
X = d2l.zeros((batch_size, num_steps))
enc_outputs, enc_state = encoder(X)
d2l.check_shape(enc_outputs, (num_steps, batch_size, num_hiddens))
# %%
d2l.check_shape(enc_state, (num_layers, batch_size, num_hiddens))
# %%
class Seq2SeqDecoder(d2l.Decoder):
    """The RNN decoder for sequence to sequence learning."""
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = d2l.GRU(embed_size+num_hiddens, num_hiddens,
                           num_layers, dropout)
        self.dense = nn.LazyLinear(vocab_size)
        self.apply(init_seq2seq)
            
    def init_state(self, enc_all_outputs, *args):
        return enc_all_outputs

    def forward(self, X, state):
        # X shape: (batch_size, num_steps)
        # embs shape: (num_steps, batch_size, embed_size)
        embs = self.embedding(d2l.astype(d2l.transpose(X), d2l.int32))
        enc_output, hidden_state = state
        # context shape: (batch_size, num_hiddens)
        context = enc_output[-1]
        # Broadcast context to (num_steps, batch_size, num_hiddens)
        context = context.tile((embs.shape[0], 1, 1))  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
        # Concat at the feature dimension
        embs_and_context = d2l.concat((embs, context), -1)
        outputs, hidden_state = self.rnn(embs_and_context, hidden_state)
        outputs = d2l.swapaxes(self.dense(outputs), 0, 1)
        # outputs shape: (batch_size, num_steps, vocab_size)
        # hidden_state shape: (num_layers, batch_size, num_hiddens)
        return outputs, [enc_output, hidden_state]
# %%
decoder = Seq2SeqDecoder(vocab_size, embed_size, num_hiddens, num_layers)
state = decoder.init_state(encoder(X))
dec_outputs, state = decoder(X, state)
d2l.check_shape(dec_outputs, (batch_size, num_steps, vocab_size))
d2l.check_shape(state[1], (num_layers, batch_size, num_hiddens))
# %%
class Seq2Seq(d2l.EncoderDecoder):  #@save
    """The RNN encoder--decoder for sequence to sequence learning."""
    def __init__(self, encoder, decoder, tgt_pad, lr):
        super().__init__(encoder, decoder)
        self.save_hyperparameters()
        
    def validation_step(self, batch):
        Y_hat = self(*batch[:-1])
        self.plot('loss', self.loss(Y_hat, batch[-1]), train=False)
        
    def configure_optimizers(self):
        # Adam optimizer is used here
        return torch.optim.Adam(self.parameters(), lr=self.lr)
# %%
@d2l.add_to_class(Seq2Seq)
def loss(self, Y_hat, Y):
    l = super(Seq2Seq, self).loss(Y_hat, Y, averaged=False)
    mask = d2l.astype(d2l.reshape(Y, -1) != self.tgt_pad, d2l.float32)
    return d2l.reduce_sum(l * mask) / d2l.reduce_sum(mask)
# %%
data = d2l.MTFraEng(batch_size=8, num_train=32, num_val=16)  # port: batches and examples shrunk (a table of 50 pairs is the download)
embed_size, num_hiddens, num_layers, dropout = 32, 32, 2, 0.2  # port: sizes shrunk
encoder = Seq2SeqEncoder(
    len(data.src_vocab), embed_size, num_hiddens, num_layers, dropout)
decoder = Seq2SeqDecoder(
    len(data.tgt_vocab), embed_size, num_hiddens, num_layers, dropout)
model = Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                lr=0.005)
trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1, num_gpus=1)  # port: 2 epochs (the book's 30)
trainer.fit(model, data)
# %%
@d2l.add_to_class(d2l.EncoderDecoder)  #@save
def predict_step(self, batch, device, num_steps,
                 save_attention_weights=False):
    batch = [d2l.to(a, device) for a in batch]
    src, tgt, src_valid_len, _ = batch
    enc_all_outputs = self.encoder(src, src_valid_len)
    dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
    outputs, attention_weights = [d2l.expand_dims(tgt[:, 0], 1), ], []
    for _ in range(num_steps):
        Y, dec_state = self.decoder(outputs[-1], dec_state)
        outputs.append(d2l.argmax(Y, 2))
        # Save attention weights (to be covered later)
        if save_attention_weights:
            attention_weights.append(self.decoder.attention_weights)
    return d2l.concat(outputs[1:], 1), attention_weights
# %%
def bleu(pred_seq, label_seq, k):  #@save
    """Compute the BLEU."""
    pred_tokens, label_tokens = pred_seq.split(' '), label_seq.split(' ')
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[' '.join(label_tokens[i: i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[' '.join(pred_tokens[i: i + n])] > 0:
                num_matches += 1
                label_subs[' '.join(pred_tokens[i: i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score
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
          f'{bleu(" ".join(translation), fr, k=2):.3f}')
'''


SHAKESPEARE_CHARS = 3000  # The Time Machine's 178,000 characters: tinyshakespeare's first ones

# fra-eng/fra.txt's place: its kind of lines (English, a tab, French; the French marks after a
# narrow no-break space, as the file has them), with the four sentences seq2seq translates and
# the one the dataset's section builds
FRA_ENG = """\
Go.\tVa\u202f!
Hi.\tSalut\u202f!
Hi.\tSalut.
Run!\tCours\u202f!
Run!\tCourez\u202f!
Who?\tQui\u202f?
Wow!\tÇa alors\u202f!
Fire!\tAu feu\u202f!
Help!\tÀ l'aide\u202f!
Jump.\tSaute.
Stop!\tArrête-toi\u202f!
Wait!\tAttends\u202f!
Go on.\tPoursuis.
Hello!\tSalut\u202f!
I see.\tJe comprends.
I try.\tJ'essaye.
I won!\tJ'ai gagné\u202f!
Oh no!\tOh non\u202f!
Relax.\tDétends-toi.
I lost.\tJ'ai perdu.
I'm OK.\tJe vais bien.
Go away.\tVa-t'en\u202f!
He ran.\tIl a couru.
He's calm.\tIl est calme.
He's sad.\tIl est triste.
He's old.\tIl est vieux.
I'm home.\tJe suis chez moi.
I'm sad.\tJe suis triste.
I'm calm.\tJe suis calme.
I'm old.\tJe suis vieux.
I'm here.\tJe suis ici.
I'm\xa0fine.\tJe vais bien.
I'm lost.\tJe suis perdu.
He's here.\tIl est ici.
He's home.\tIl est chez lui.
He lost.\tIl a perdu.
I ran.\tJ'ai couru.
Go home.\tVa chez toi.
Go now.\tVa maintenant.
I won.\tJ'ai gagné.
He won.\tIl a gagné.
We won.\tNous avons gagné.
We lost.\tNous avons perdu.
We ran.\tNous avons couru.
We're sad.\tNous sommes tristes.
We're home.\tNous sommes chez nous.
We're calm.\tNous sommes calmes.
We're here.\tNous sommes ici.
I'm tired.\tJe suis fatigué.
He's tired.\tIl est fatigué.
"""


def downloads(monkeypatch) -> None:
    """The book's ``d2l.download`` and ``d2l.extract`` run as they are, over a stand-in
    ``requests.get``: timemachine.txt is tinyshakespeare's first ``SHAKESPEARE_CHARS``
    characters (skipped without it), fra-eng.zip a zip of ``FRA_ENG`` as fra-eng/fra.txt."""

    def get(url, stream=True, verify=True):
        if url.endswith("timemachine.txt"):
            path = DATA_DIR / "tinyshakespeare.txt"
            if not path.exists():
                pytest.skip("tinyshakespeare.txt is absent")
            content = path.read_bytes()[:SHAKESPEARE_CHARS]
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr("fra-eng/fra.txt", FRA_ENG)
            content = buffer.getvalue()
        return types.SimpleNamespace(content=content)

    stand_ins = d2l_port.stand_ins

    def with_downloads(lib, monkeypatch):
        stand_ins(lib, monkeypatch)
        monkeypatch.setattr(sys.modules["requests"], "get", get, raising=False)

    monkeypatch.setattr(d2l_port, "stand_ins", with_downloads)
    monkeypatch.setattr(d2l_port, "fashion_images", dict)  # no Fashion-MNIST in these chapters


@pytest.fixture(autouse=True)
def _one_thread():
    """Each test on one thread (torch's and the BLAS's), the checks after the sections too."""
    with one_thread(pytest.importorskip("torch")):
        yield


def both(script, tmp_path, monkeypatch, keep=None):
    """d2l_port's ``both`` (torch, then tricycle, on the CPU, one thread) with ``EXTRA``
    built into ``d2l`` and the downloads served by ``downloads``."""
    downloads(monkeypatch)
    return d2l_port.both(script, tmp_path, monkeypatch, keep=keep, extra=EXTRA)


def normal(printed: str) -> list[str]:
    """``kinds`` with what an untrained or a differently initialised model writes aside:
    the characters a language model predicts after its prefix, the tokens a translation
    holds."""
    text = re.sub(r"'it has[a-z ]{20}'", "'it has...'", printed)
    text = re.sub(r"=> \[.*?\], bleu", "=> [...], bleu", text)
    return kinds(text)


def curve(space: dict, key: str) -> list[float]:
    """The values of ``key`` ("train_ppl", "val_loss", ...) that the book's progress board
    recorded for the section's ``model``, in order."""
    return [float(point.y) for point in space["model"].board.data[key]]


def learns(their: dict, our: dict, key: str = "train_ppl") -> None:
    """Both libraries' boards: ``key`` recorded, finite, and lower at the end."""
    for space in their, our:
        found = curve(space, key)
        assert len(found) >= 2 and np.isfinite(found).all() and found[-1] < found[0], found


def host(t) -> np.ndarray:
    return np.asarray((t.detach() if hasattr(t, "detach") else t).numpy(), dtype=np.float64)


def linear_names(model) -> set:
    """The dotted names of tricycle's Linear weights ((in, out): torch's transposed)."""
    import tricycle  # noqa: PLC0415

    return {f"{n}.weights".lstrip(".") for n, m in model.named_modules() if isinstance(m, tricycle.nn.Linear)}  # fmt: skip


def same_step(their: dict, our: dict, theirs, ours, batch: list, rtol=1e-4, atol=1e-6) -> None:
    """Tricycle's model ``ours`` given torch's weights (``nn.from_torch``; its lazy layers
    already made): in eval mode, torch's outputs, ``model.loss`` and the gradients of every
    parameter on ``batch`` (numpy arrays: the inputs, then the labels); then the book's
    ``Trainer.clip_gradients`` (at half the gradients' norm: it clips) and a step of the
    model's own optimizer give torch's parameters."""
    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    results, clip = [], None
    for space, lib, model in (their, their["torch"], theirs), (our, tricycle, ours):
        model.eval()
        model.zero_grad()
        tensors = [lib.tensor(a) for a in batch]
        out = model(*tensors[:-1])
        loss = model.loss(out, tensors[-1])
        loss.backward()
        grads = {n: host(p.grad) for n, p in model.named_parameters()}
        # at half the norm of torch's gradients: the clipping branch runs in both
        clip = clip or float(np.sqrt(sum((g**2).sum() for g in grads.values()))) / 2
        space["trainer"].clip_gradients(clip, model)
        with lib.no_grad():
            model.configure_optimizers().step()
        after = {n: host(p) for n, p in model.named_parameters()}
        results.append((host(out), float(loss.detach()), grads, after))
    (t_out, t_loss, t_grads, t_after), (out, loss, grads, after) = results
    np.testing.assert_allclose(out, t_out, rtol=rtol, atol=atol)
    np.testing.assert_allclose(loss, t_loss, rtol=rtol)
    linear = linear_names(ours)
    for (name, g), t in zip(grads.items(), t_grads.values(), strict=True):
        np.testing.assert_allclose(
            g, t.T if name in linear else t, rtol=rtol, atol=atol, err_msg=name
        )
    # (Adam's first step is lr g / (|g| + eps): a gradient near eps in size moves by its bits)
    for (name, p), t in zip(after.items(), t_after.values(), strict=True):
        np.testing.assert_allclose(
            p, t.T if name in linear else t, rtol=rtol, atol=5e-5, err_msg=name
        )


def text_batch(space: dict, n: int = 4) -> list:
    """The first ``n`` examples of the section's TimeMachine (inputs, then labels)."""
    data = space["data"]
    return [data.X[:n].numpy(), data.Y[:n].numpy()]


def same_language_model(their: dict, our: dict, theirs=None, ours=None) -> None:
    """The section's language model (or ``theirs``/``ours``), given torch's weights:
    ``same_step``, and, with the weights it had before the step, the same 20 characters
    predicted after "it has" (the book's ``predict``, greedy)."""
    import tricycle  # noqa: PLC0415

    theirs, ours = theirs or their["model"], ours or our["model"]
    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    vocab = their["data"].vocab
    assert ours.predict("it has", 20, vocab) == theirs.predict("it has", 20, vocab)
    same_step(their, our, theirs, ours, text_batch(their))


# ------------------------------------------------------------------ recurrent neural networks
def test_text_sequence(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(TEXT_SEQUENCE, tmp_path, monkeypatch)
    assert ours == theirs  # no tensor printed: the same text
    for space in our, their:
        assert space["vocab"].token_freqs[0][1] >= space["vocab"].token_freqs[-1][1]


def test_language_model(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LANGUAGE_MODEL, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    for space in our, their:  # each label the next character of its input
        X, Y = (host(a) for a in (space["X"], space["Y"]))
        assert X.shape == Y.shape == (2, 10) and (X[:, 1:] == Y[:, :-1]).all()
    np.testing.assert_array_equal(our["data"].X.numpy(), their["data"].X.numpy())


def test_rnn_scratch(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RNN_SCRATCH, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    for printed in ours, theirs:  # F.one_hot(torch.tensor([0, 2]), 5), as the book shows it
        assert re.findall(r"\d", printed.split("Downloading")[0]) == list("1000000100")
    for space in our, their:  # the first RNN's final state, the first model's 100 steps
        assert tuple(space["state"].shape) == (2, 32)
        assert tuple(space["outputs"].shape) == (2, 100, 16)
    learns(their, our)
    same_language_model(their, our)


def test_rnn_concise(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RNN_CONCISE, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    same_language_model(their, our)


def scratch_model(space: dict, name: str, **kwargs):
    """A new language model over the section's scratch recurrent class ``name``."""
    vocab_size = len(space["data"].vocab)
    rnn = space[name](num_inputs=vocab_size, num_hiddens=8, **kwargs)
    return space["d2l"].RNNLMScratch(rnn, vocab_size=vocab_size, lr=4)


# ------------------------------------------------------------------ modern recurrent networks
def test_lstm(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LSTM, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    same_language_model(their, our)
    same_language_model(
        their, our, scratch_model(their, "LSTMScratch"), scratch_model(our, "LSTMScratch")
    )


def test_gru(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GRU, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    same_language_model(their, our)
    same_language_model(
        their, our, scratch_model(their, "GRUScratch"), scratch_model(our, "GRUScratch")
    )


def test_deep_rnn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(DEEP_RNN, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    same_language_model(their, our)
    same_language_model(
        their,
        our,
        scratch_model(their, "StackedRNNScratch", num_layers=2),
        scratch_model(our, "StackedRNNScratch", num_layers=2),
    )


def test_bi_rnn(tmp_path, monkeypatch):
    """The chapter defines its two models without running them: here they run, given
    torch's weights, on a batch of sequences: torch's outputs, final states and gradients."""
    (theirs, their), (ours, our) = both(BI_RNN, tmp_path, monkeypatch)
    assert ours == theirs == ""
    import tricycle  # noqa: PLC0415

    torch = their["torch"]
    x = np.random.default_rng(0).normal(size=(6, 2, 5)).astype(np.float32)  # (T, N, I)
    for name in "BiRNNScratch", "BiGRU":
        theirs, ours = their[name](5, 4), our[name](5, 4)
        assert ours.num_hiddens == theirs.num_hiddens == 8  # doubled
        assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
        results = []
        for lib, model in (torch, theirs), (tricycle, ours):
            inputs = lib.tensor(x, requires_grad=True)
            outputs, H = model(inputs)
            outputs = (
                lib.stack(outputs) if isinstance(outputs, list) else outputs
            )  # the scratch's list
            finals = lib.cat(list(H), -1) if isinstance(H, tuple) else H
            (outputs * lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32))).sum().backward()
            results.append(
                [host(outputs), host(finals), host(inputs.grad)]
                + [host(p.grad) for p in model.parameters()]
            )
        assert results[1][0].shape == (6, 2, 8)
        for got, want in zip(results[1], results[0], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_machine_translation_and_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MACHINE_TRANSLATION, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    for ours_array, theirs_array in zip(our["data"].arrays, their["data"].arrays, strict=True):
        np.testing.assert_array_equal(host(ours_array), host(theirs_array))
    for space in our, their:  # the shuffled batch's labels: a row of the decoder's inputs shifted
        label, rows = host(space["label"]), host(space["data"].arrays[1])
        assert label.shape == (3, 9) and all(
            (rows[:, 1:] == row[:-1]).all(1).any() for row in label
        )
    assert (
        "source: ['hi', '.', '<eos>', '<pad>'" in ours and "target: ['<bos>', 'salut', '.'," in ours
    )


def test_encoder_decoder(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ENCODER_DECODER, tmp_path, monkeypatch)
    assert ours == theirs == ""
    for space in our, their:  # the interfaces: their forward is the subclasses'
        with pytest.raises(NotImplementedError):
            space["Encoder"]()(None)


def test_seq2seq(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SEQ2SEQ, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    learns(their, our, "train_loss")
    for space in our, their:  # init_seq2seq's Xavier weights, U(-a, a), a = sqrt(6 / (in + out)),
        # in place of the GRU's own, U(-b, b), b = 1 / sqrt(32), smaller
        weight = host(space["Seq2SeqEncoder"](10, 8, 32, 2).rnn.rnn.weight_hh_l0)  # (96, 32)
        assert 1 / np.sqrt(32) < np.abs(weight).max() <= np.sqrt(6 / 128)
    batch = [host(a)[:4] for a in their["data"].arrays]
    batch = [a.astype(np.int64) for a in batch]
    same_step(their, our, their["model"], our["model"], batch)
    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(our["model"], their["model"].state_dict()) == ([], [])
    arrays = [
        their["data"].build(their["engs"], their["fras"]),
        our["data"].build(our["engs"], our["fras"]),
    ]
    preds = [
        space["model"].predict_step(a, space["d2l"].try_gpu(), 9)[0]
        for space, a in zip((their, our), arrays)
    ]
    np.testing.assert_array_equal(host(preds[1]), host(preds[0]))


def test_the_held_library_is_the_books():
    """``EXTRA``, d2l/torch.py's recurrent parts held here, is the book's repository's text
    (from ``TimeMachine`` to ``bleu``), unchanged: the downloads are served by a stand-in
    ``requests.get`` (``downloads``)."""
    assert EXTRA.strip("\n") in d2l_port.book()
