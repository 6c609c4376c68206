"""Examples of github.com/pytorch/examples, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; tests/test_torch_scripts.py's method):

- word_language_model: ``data.py``'s ``Corpus`` on a small text written here, ``model.py``'s
  ``RNNModel`` (LSTM, GRU) and ``TransformerModel`` (an ``nn.Transformer`` subclass with a
  ``PositionalEncoding`` buffer), ``main.py``'s ``batchify``/``get_batch``/``repackage_hidden``,
  its hand-written SGD step after ``clip_grad_norm_``, ``evaluate`` and the learning-rate
  annealing, ``torch.save(model)`` of the whole model and ``torch.load`` under
  ``torch.serialization.safe_globals`` (torch's module paths), and ``generate.py``'s sampling
  loop (``multinomial``, ``fill_``, ``cat``);
- mnist_rnn: an LSTM over the image rows, ``BatchNorm1d``, ``Dropout2d`` on (N, C),
  ``Adadelta`` and ``StepLR``;
- mnist_forward_forward: Hinton's forward-forward layers (an ``nn.Linear`` subclass with its own
  Adam and ``train``), ``torch.mm``, ``randint(n, size=...)`` and label overlays written in place;
- reinforcement_learning/actor_critic: ``Categorical``, ``smooth_l1_loss`` and the returns'
  normalisation, on a tiny hand-written environment in place of gymnasium's CartPole;
- fast_neural_style: ``TransformerNet`` (reflection padding, strided convolutions,
  ``InstanceNorm2d``, nearest upsampling, residual blocks) trained for a few steps with the
  example's content and Gram-matrix style losses over a small random network in VGG16's
  layout (no download), its checkpoints, then ``stylize`` on the saved model.

Each example's files are its own text, with argparse's defaults as constants, sizes and epochs
shrunk and synthetic data in place of the downloads; every changed line ends in a ``# port:``
comment that says why. The test writes the files in a temporary directory and runs the scripts
there under torch (skipped without it), then with ``torch`` replaced by ``tricycle`` in every
file, and checks that both learn (losses fall, accuracy or reward rises) and print the same
lines, numbers aside.
"""

import contextlib
import io
import math
import re
import sys

import numpy as np
import pytest


def run(files: dict, scripts: list, directory, monkeypatch, **names) -> tuple[str, list]:
    """The example's ``files`` written in ``directory``, then each of ``scripts`` run there as
    ``__main__`` (the files import each other): what they printed, and each one's globals."""
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    monkeypatch.chdir(directory)
    monkeypatch.syspath_prepend(str(directory))
    modules = [name.removesuffix(".py") for name in files if name.endswith(".py")]
    for module in modules:  # the other library's run imported its own `model`, `utils` ...
        monkeypatch.delitem(sys.modules, module, raising=False)
    printed, spaces = io.StringIO(), []
    with contextlib.redirect_stdout(printed):
        for script in scripts:
            spaces.append({"__name__": "__main__", **names})
            exec(compile(files[script], str(directory / script), "exec"), spaces[-1])
    for module in modules:
        sys.modules.pop(module, None)
    return printed.getvalue(), spaces


def both(files: dict, scripts: list, tmp_path, monkeypatch, **names):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in every file."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared machine: the examples' small tensors need no more
    try:
        theirs = run(files, scripts, tmp_path / "torch", monkeypatch, **names)
    finally:
        torch.set_num_threads(threads)
    ported = {name: text.replace("torch", "tricycle") for name, text in files.items()}
    ours = run(ported, scripts, tmp_path / "tricycle", monkeypatch, **names)
    return theirs, ours


NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|\b(nan|inf)\b")
CLOCK = re.compile(r"\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}")  # time.ctime()


def lines(printed: str) -> list[str]:
    """The printed lines with each number as # (and the clock as "time") and runs of spaces as
    one (numbers are padded): the same for both libraries when the example runs the same way."""
    return [
        re.sub(" +", " ", NUMBER.sub("#", CLOCK.sub("time", line))) for line in printed.splitlines()
    ]


def numbers(pattern: str, printed: str) -> list[float]:
    """Every number that ``pattern``'s group catches in the printed text."""
    return [float(value) for value in re.findall(pattern, printed)]


# word_language_model/data.py, as it is
WLM_DATA = r'''
import os
from io import open
import torch

class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, path):
        self.dictionary = Dictionary()
        self.train = self.tokenize(os.path.join(path, 'train.txt'))
        self.valid = self.tokenize(os.path.join(path, 'valid.txt'))
        self.test = self.tokenize(os.path.join(path, 'test.txt'))

    def tokenize(self, path):
        """Tokenizes a text file."""
        assert os.path.exists(path)
        # Add words to the dictionary
        with open(path, 'r', encoding="utf8") as f:
            for line in f:
                words = line.split() + ['<eos>']
                for word in words:
                    self.dictionary.add_word(word)

        # Tokenize file content
        with open(path, 'r', encoding="utf8") as f:
            idss = []
            for line in f:
                words = line.split() + ['<eos>']
                ids = []
                for word in words:
                    ids.append(self.dictionary.word2idx[word])
                idss.append(torch.tensor(ids).type(torch.int64))
            ids = torch.cat(idss)

        return ids
'''


# word_language_model/model.py: the initialisation by parameter
WLM_MODEL = r'''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError( """An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # Optionally tie weights as in:
        # "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
        # https://arxiv.org/abs/1608.05859
        # and
        # "Tying Word Vectors and Word Classifiers: A Loss Framework for Language Modeling" (Inan et al. 2016)
        # https://arxiv.org/abs/1611.01462
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(next(self.encoder.parameters()), -initrange, initrange)  # port: by parameter: tricycle's is `weights`
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(next(self.decoder.parameters()), -initrange, initrange)  # port: `weights`, (in, out)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

# Temporarily leave PositionalEncoding module here. Will be moved somewhere else.
class PositionalEncoding(nn.Module):
    r"""Inject some information about the relative or absolute position of the tokens in the sequence.
        The positional encodings have the same dimension as the embeddings, so that the two can be summed.
        Here, we use sine and cosine functions of different frequencies.
    .. math:
        \text{PosEncoder}(pos, 2i) = sin(pos/10000^(2i/d_model))
        \text{PosEncoder}(pos, 2i+1) = cos(pos/10000^(2i/d_model))
        \text{where pos is the word position and i is the embed idx)
    Args:
        d_model: the embed dim (required).
        dropout: the dropout value (default=0.1).
        max_len: the max. length of the incoming sequence (default=5000).
    Examples:
        >>> pos_encoder = PositionalEncoding(d_model)
    """

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        r"""Inputs of forward function
        Args:
            x: the sequence fed to the positional encoder model (required).
        Shape:
            x: [sequence length, batch size, embed dim]
            output: [sequence length, batch size, embed dim]
        Examples:
            >>> output = pos_encoder(x)
        """

        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)

class TransformerModel(nn.Transformer):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz,sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(next(self.input_emb.parameters()), -initrange, initrange)  # port: by parameter: tricycle's is `weights`
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(next(self.decoder.parameters()), -initrange, initrange)  # port: `weights`, (in, out)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)
'''  # noqa: E501


# word_language_model/main.py
WLM_MAIN = r'''
# coding: utf-8
import argparse
import time
import math
import os
import torch
import torch.nn as nn
# import torch.onnx  # port: tricycle has no ONNX export (only --onnx-export uses it)

import data
from model import PositionalEncoding, RNNModel, TransformerModel

args = argparse.Namespace(  # port: argparse's defaults as constants (MODEL: the test's), smaller, lr 10
    data='./data/tiny', model=MODEL, emsize=32, nhid=32, nlayers=2, lr=10, clip=0.25, epochs=8,
    batch_size=4, bptt=8, dropout=0.2, tied=False, seed=1111, log_interval=10, save='model.pt',
    onnx_export='', nhead=2, dry_run=False, accel=False, use_optimizer=False)

# Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)

if args.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()

else:
    device = torch.device("cpu")

print("Using device:", device)

###############################################################################
# Load data
###############################################################################

corpus = data.Corpus(args.data)

# Starting from sequential data, batchify arranges the dataset into columns.
# For instance, with the alphabet as the sequence and batch size 4, we'd get
# ┌ a g m s ┐
# │ b h n t │
# │ c i o u │
# │ d j p v │
# │ e k q w │
# └ f l r x ┘.
# These columns are treated as independent by the model, which means that the
# dependence of e. g. 'g' on 'f' can not be learned, but allows more efficient
# batch processing.

def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)

eval_batch_size = 10
train_data = batchify(corpus.train, args.batch_size)
val_data = batchify(corpus.valid, eval_batch_size)
test_data = batchify(corpus.test, eval_batch_size)

###############################################################################
# Build the model
###############################################################################

ntokens = len(corpus.dictionary)
if args.model == 'Transformer':
    model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
else:
    model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(device)

criterion = nn.NLLLoss()
if args.use_optimizer:
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

###############################################################################
# Training code
###############################################################################

def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


# get_batch subdivides the source data into chunks of length args.bptt.
# If source is equal to the example output of the batchify function, with
# a bptt-limit of 2, we'd get the following two Variables for i = 0:
# ┌ a g m s ┐ ┌ b h n t ┐
# └ b h n t ┘ └ c i o u ┘
# Note that despite the name of the function, the subdivison of data is not
# done along the batch dimension (i.e. dimension 1), since that was handled
# by the batchify function. The chunks are along dimension 0, corresponding
# to the seq_len dimension in the LSTM.

def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].view(-1)
    return data, target


def evaluate(data_source):
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            if args.model == 'Transformer':
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    # Turn on training mode which enables dropout.
    model.train()
    total_loss = 0.
    start_time = time.time()
    ntokens = len(corpus.dictionary)
    if args.model != 'Transformer':
        hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        if args.use_optimizer:
            optimizer.zero_grad()
        else:
            model.zero_grad()
        if args.model == 'Transformer':
            output = model(data)
            output = output.view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if args.use_optimizer:
            optimizer.step()
        else:
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()

        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | '
                    'loss {:5.2f} | ppl {:8.2f}'.format(
                epoch, batch, len(train_data) // args.bptt, lr,
                elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
            total_loss = 0
            start_time = time.time()
        if args.dry_run:
            break


def export_onnx(path, batch_size, seq_len):
    print('The model is also exported in ONNX format at {}.'.format(os.path.realpath(args.onnx_export)))
    model.eval()
    dummy_input = torch.LongTensor(seq_len * batch_size).zero_().view(-1, batch_size).to(device)
    hidden = model.init_hidden(batch_size)
    torch.onnx.export(model, (dummy_input, hidden), path)


# Loop over epochs.
lr = args.lr
best_val_loss = None

# At any point you can hit Ctrl + C to break out of training early.
try:
    for epoch in range(1, args.epochs+1):
        epoch_start_time = time.time()
        train()
        val_loss = evaluate(val_data)
        print('-' * 89)
        print('| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | '
                'valid ppl {:8.2f}'.format(epoch, (time.time() - epoch_start_time),
                                           val_loss, math.exp(val_loss)))
        print('-' * 89)
        # Save the model if the validation loss is the best we've seen so far.
        if not best_val_loss or val_loss < best_val_loss:
            with open(args.save, 'wb') as f:
                torch.save(model, f)
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
except KeyboardInterrupt:
    print('-' * 89)
    print('Exiting from training early')

# Load the best saved model.
with open(args.save, 'rb') as f:
    if args.model == 'Transformer':
        safe_globals = [
            PositionalEncoding,
            TransformerModel,
            torch.nn.functional.relu,
            torch.nn.modules.activation.MultiheadAttention,
            torch.nn.modules.container.ModuleList,
            torch.nn.modules.dropout.Dropout,
            torch.nn.modules.linear.Linear,
            torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
            torch.nn.modules.normalization.LayerNorm,
            torch.nn.modules.sparse.Embedding,
            torch.nn.modules.transformer.TransformerEncoder,
            torch.nn.modules.transformer.TransformerEncoderLayer,
        ]
    else:
        safe_globals = [
            RNNModel,
            torch.nn.modules.dropout.Dropout,
            torch.nn.modules.linear.Linear,
            torch.nn.modules.rnn.GRU,
            torch.nn.modules.rnn.LSTM,
            torch.nn.modules.rnn.RNN,
            torch.nn.modules.sparse.Embedding,
        ]
    with torch.serialization.safe_globals(safe_globals):
        model = torch.load(f)
    # after load the rnn params are not a continuous chunk of memory
    # this makes them a continuous chunk, and will speed up forward pass
    # Currently, only rnn model supports flatten_parameters function.
    if args.model in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
        model.rnn.flatten_parameters()

# Run on test data.
test_loss = evaluate(test_data)
print('=' * 89)
print('| End of training | test loss {:5.2f} | test ppl {:8.2f}'.format(
    test_loss, math.exp(test_loss)))
print('=' * 89)

if len(args.onnx_export) > 0:
    # Export the model in ONNX format.
    export_onnx(args.onnx_export, batch_size=1, seq_len=args.bptt)
'''  # noqa: E501


# word_language_model/generate.py
WLM_GENERATE = r"""
###############################################################################
# Language Modeling on Wikitext-2
#
# This file generates new sentences sampled from the language model.
#
###############################################################################
import argparse
import torch

import data
from model import PositionalEncoding, RNNModel, TransformerModel

args = argparse.Namespace(  # port: argparse's defaults as constants, 40 words
    data='./data/tiny', checkpoint='./model.pt', outf='generated.txt', words=40, seed=1111,
    temperature=1.0, log_interval=10, accel=False)

# Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)

if args.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()

else:
    device = torch.device("cpu")

if args.temperature < 1e-3:
    parser.error("--temperature has to be greater or equal 1e-3.")

with open(args.checkpoint, 'rb') as f:
    safe_globals = [
        PositionalEncoding,
        RNNModel,
        TransformerModel,
        torch.nn.functional.relu,
        torch.nn.modules.activation.MultiheadAttention,
        torch.nn.modules.container.ModuleList,
        torch.nn.modules.dropout.Dropout,
        torch.nn.modules.linear.Linear,
        torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
        torch.nn.modules.normalization.LayerNorm,
        torch.nn.modules.sparse.Embedding,
        torch.nn.modules.rnn.GRU,
        torch.nn.modules.rnn.LSTM,
        torch.nn.modules.rnn.RNN,
        torch.nn.modules.transformer.TransformerEncoder,
        torch.nn.modules.transformer.TransformerEncoderLayer,
    ]
    with torch.serialization.safe_globals(safe_globals):
        model = torch.load(f, map_location=device)
model.eval()

corpus = data.Corpus(args.data)
ntokens = len(corpus.dictionary)

is_transformer_model = hasattr(model, 'model_type') and model.model_type == 'Transformer'
if not is_transformer_model:
    hidden = model.init_hidden(1)
input = torch.randint(ntokens, (1, 1), dtype=torch.long).to(device)

with open(args.outf, 'w') as outf:
    with torch.no_grad():  # no tracking history
        for i in range(args.words):
            if is_transformer_model:
                output = model(input, False)
                word_weights = output[-1].squeeze().div(args.temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                word_tensor = torch.Tensor([[word_idx]]).long().to(device)
                input = torch.cat([input, word_tensor], 0)
            else:
                output, hidden = model(input, hidden)
                word_weights = output.squeeze().div(args.temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                input.fill_(word_idx)

            word = corpus.dictionary.idx2word[word_idx]

            outf.write(word + ('\n' if i % 20 == 19 else ' '))

            if i % args.log_interval == 0:
                print('| Generated {}/{} words'.format(i, args.words))
"""


# mnist_rnn/main.py
MNIST_RNN = r"""
from __future__ import print_function

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
import numpy as np  # port: synthetic digits in place of torchvision's MNIST


def synthetic_mnist(n, seed):  # port: ten 28x28 templates under noise, normalised as MNIST
    rng = np.random.default_rng(seed)
    templates = np.zeros((10, 28, 28), np.float32)
    for digit in range(10):
        templates[digit, 2 * digit + 2:2 * digit + 6, 4:24] = 1.0  # a bar at a row per digit
        templates[digit, 4:24, 2 * digit + 3] = 1.0  # and a column
    labels = rng.integers(0, 10, n)
    images = templates[labels] + 0.3 * rng.normal(size=(n, 28, 28)).astype(np.float32)
    images = (images - 0.1307) / 0.3081
    images, labels = torch.from_numpy(images[:, None]), torch.from_numpy(labels)
    return torch.utils.data.TensorDataset(images, labels)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        # Shape of input is (batch_size,1, 28, 28)
        # converting shape of input to (batch_size, 28, 28)
        # as required by RNN when batch_first is set True
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)

        # RNN output shape is (seq_len, batch, input_size)
        # Get last output of RNN
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                       100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(args, model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()
            if args.dry_run:
                break

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))


def main():
    # Training settings
    args = argparse.Namespace(  # port: argparse's defaults as constants; 3 epochs, lr 1
        batch_size=64, test_batch_size=1000, epochs=3, lr=1.0, gamma=0.7, accel=False,
        dry_run=False, seed=1, log_interval=5, save_model=True)

    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    torch.manual_seed(args.seed)

    kwargs = {'num_workers': 1, 'pin_memory': True} if args.accel else {}
    train_loader = torch.utils.data.DataLoader(
        synthetic_mnist(1280, seed=0),  # port: in place of datasets.MNIST(...)
        batch_size=args.batch_size, shuffle=True, **kwargs)
    test_loader = torch.utils.data.DataLoader(
        synthetic_mnist(500, seed=1),  # port: likewise
        batch_size=args.test_batch_size, shuffle=True, **kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(args, model, device, test_loader)
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), "mnist_rnn.pt")


if __name__ == '__main__':
    main()
"""


# mnist_forward_forward/main.py
MNIST_FORWARD_FORWARD = r"""
# This code is based on the implementation of Mohammad Pezeshki available at
# https://github.com/mohammadpz/pytorch_forward_forward and licensed under the MIT License.
# Modifications/Improvements to the original code have been made by Vivek V Patel.

import argparse
import torch
import torch.nn as nn
import numpy as np  # port: synthetic digits in place of torchvision's MNIST
from torch.utils.data import DataLoader, TensorDataset  # port: TensorDataset for those
from torch.optim import Adam


def get_y_neg(y):
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[
            torch.randint(len(allowed_indices), size=(1,))
        ].item()
    return y_neg.to(device)


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        weight_t = getattr(self, "weights", None)  # port: tricycle's Linear: weights (in, out)
        weight_t = self.weight.T if weight_t is None else weight_t  # port: torch's weight.T
        return self.relu(torch.mm(x_direction, weight_t) + self.bias.unsqueeze(0))  # port: weight_t

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(
                torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


if __name__ == "__main__":
    args = argparse.Namespace(  # port: argparse's defaults as constants, fewer epochs and images
        epochs=60, lr=0.03, no_accel=True, seed=1, save_model=True, train_size=500,
        threshold=2, test_size=300, log_interval=10)
    use_accel = not args.no_accel and torch.accelerator.is_available()
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    train_kwargs = {"batch_size": args.train_size}
    test_kwargs = {"batch_size": args.test_size}

    if use_accel:
        accel_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    def synthetic_mnist(n, seed):  # port: ten 14x14 templates under noise, flat, in MNIST's place
        rng = np.random.default_rng(seed)
        templates = np.zeros((10, 14, 14), np.float32)
        for digit in range(10):
            templates[digit, digit + 2, 2:12] = 1.0
            templates[digit, 2:12, digit + 2] = 1.0
        labels = rng.integers(0, 10, n)
        images = templates[labels] + 0.3 * rng.normal(size=(n, 14, 14)).astype(np.float32)
        images = (images - 0.1307) / 0.3081
        return TensorDataset(torch.from_numpy(images.reshape(n, -1)), torch.from_numpy(labels))

    train_loader = DataLoader(synthetic_mnist(args.train_size, 0), **train_kwargs)  # port: MNIST's
    test_loader = DataLoader(synthetic_mnist(args.test_size, 1), **test_kwargs)  # port: likewise
    net = Net([196, 100, 100])  # port: 14x14 images, narrower layers
    x, y = next(iter(train_loader))
    x, y = x.to(device), y.to(device)
    x_pos = overlay_y_on_x(x, y)
    y_neg = get_y_neg(y)
    x_neg = overlay_y_on_x(x, y_neg)
    net.train(x_pos, x_neg)
    print("train error:", 1.0 - net.predict(x).eq(y).float().mean().item())
    x_te, y_te = next(iter(test_loader))
    x_te, y_te = x_te.to(device), y_te.to(device)
    if args.save_model:
        torch.save(net.state_dict(), "mnist_ff.pt")
    print("test error:", 1.0 - net.predict(x_te).eq(y_te).float().mean().item())
"""


# reinforcement_learning/actor_critic.py
ACTOR_CRITIC = r'''
import argparse
import numpy as np
from itertools import count
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

# Cart Pole

args = argparse.Namespace(gamma=0.99, seed=543, render=False, log_interval=10)  # port: constants


class GustyPole:  # port: a tiny hand-written task in place of gymnasium's CartPole-v1
    """Each step a gust leans the pole: the state (position, speed, lean, spin) is drawn anew,
    the lean of order one and the rest small. Pushing the cart towards the lean (action 1:
    right, 0: left) rights the pole, pushing away tips it, and a second push away in a row
    drops it (the episode ends). Reward 1 a step, at most 20 steps."""
    spec = namedtuple('Spec', 'reward_threshold')(reward_threshold=15.0)
    scale = np.array([0.1, 0.1, 1.0, 0.1])

    def __init__(self, max_steps=20, max_episodes=300):
        self.max_steps, self.max_episodes, self.episodes = max_steps, max_episodes, 0
        self.rng = np.random.default_rng()

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.episodes += 1
        if self.episodes > self.max_episodes:  # the test's bound on `for i_episode in count(1)`
            raise RuntimeError(f"GustyPole: not solved in {self.max_episodes} episodes")
        self.state, self.t, self.tipped = self.scale * self.rng.normal(size=4), 0, False
        return self.state, {}

    def step(self, action):
        away = (action == 1) != (self.state[2] > 0)
        dropped, self.tipped = self.tipped and away, away
        self.state, self.t = self.scale * self.rng.normal(size=4), self.t + 1
        return self.state, 1.0, bool(dropped), self.t >= self.max_steps, {}


render_mode = "human" if args.render else None
env = GustyPole()  # port: in place of gym.make('CartPole-v1', render_mode=render_mode)
env.reset(seed=args.seed)
torch.manual_seed(args.seed)


SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


class Policy(nn.Module):
    """
    implements both actor and critic in one model
    """
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 128)

        # actor's layer
        self.action_head = nn.Linear(128, 2)

        # critic's layer
        self.value_head = nn.Linear(128, 1)

        # action & reward buffer
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        """
        forward of both actor and critic
        """
        x = F.relu(self.affine1(x))

        # actor: choses action to take from state s_t
        # by returning probability of each action
        action_prob = F.softmax(self.action_head(x), dim=-1)

        # critic: evaluates being in the state s_t
        state_values = self.value_head(x)

        # return values for both actor and critic as a tuple of 2 values:
        # 1. a list with the probability of each action over the action space
        # 2. the value from state s_t
        return action_prob, state_values


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)

    # create a categorical distribution over the list of probabilities of actions
    m = Categorical(probs)

    # and sample an action using the distribution
    action = m.sample()

    # save to action buffer
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))

    # the action to take (left or right)
    return action.item()


def finish_episode():
    """
    Training code. Calculates actor and critic loss and performs backprop.
    """
    R = 0
    saved_actions = model.saved_actions
    policy_losses = [] # list to save actor (policy) loss
    value_losses = [] # list to save critic (value) loss
    returns = [] # list to save the true values

    # calculate the true value using rewards returned from the environment
    for r in model.rewards[::-1]:
        # calculate the discounted value
        R = r + args.gamma * R
        returns.insert(0, R)

    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)

    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()

        # calculate actor (policy) loss
        policy_losses.append(-log_prob * advantage)

        # calculate critic (value) loss using L1 smooth loss
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))

    # reset gradients
    optimizer.zero_grad()

    # sum up all the values of policy_losses and value_losses
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()

    # perform backprop
    loss.backward()
    optimizer.step()

    # reset rewards and action buffer
    del model.rewards[:]
    del model.saved_actions[:]


def main():
    running_reward = 10

    # run infinitely many episodes
    for i_episode in count(1):

        # reset environment and episode reward
        state, _ = env.reset()
        ep_reward = 0

        # for each episode, only run 9999 steps so that we don't
        # infinite loop while learning
        for t in range(1, 10000):

            # select action from policy
            action = select_action(state)

            # take the action
            state, reward, terminated, truncated, _ = env.step(action)

            model.rewards.append(reward)
            ep_reward += reward
            if terminated or truncated:
                break

        # update cumulative reward
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward

        # perform backprop
        finish_episode()

        # log results
        if i_episode % args.log_interval == 0:
            print(f'Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}')

        # check if we have "solved" the cart pole problem
        if running_reward > env.spec.reward_threshold:
            print(f"Solved! Running reward is now {running_reward} and "
                  f"the last episode runs to {t} time steps!")
            break


if __name__ == '__main__':
    main()
'''  # noqa: E501


# fast_neural_style/neural_style/transformer_net.py, as it is
TRANSFORMER_NET = r'''
import torch


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super(TransformerNet, self).__init__()
        # Initial convolution layers
        self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(32, affine=True)
        self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(64, affine=True)
        self.conv3 = ConvLayer(64, 128, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(128, affine=True)
        # Residual layers
        self.res1 = ResidualBlock(128)
        self.res2 = ResidualBlock(128)
        self.res3 = ResidualBlock(128)
        self.res4 = ResidualBlock(128)
        self.res5 = ResidualBlock(128)
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer(128, 64, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(64, affine=True)
        self.deconv2 = UpsampleConvLayer(64, 32, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(32, affine=True)
        self.deconv3 = ConvLayer(32, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.res3(y)
        y = self.res4(y)
        y = self.res5(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out
'''


# fast_neural_style/neural_style/utils.py
UTILS = r"""
import torch
from PIL import Image


def load_image(filename, size=None, scale=None):
    img = Image.open(filename).convert('RGB')
    if size is not None:
        img = img.resize((size, size), Image.ANTIALIAS)
    elif scale is not None:
        img = img.resize((int(img.size[0] / scale), int(img.size[1] / scale)), Image.ANTIALIAS)
    return img


def save_image(filename, data):
    img = data.clone().clamp(0, 255).numpy()
    img = img.transpose(1, 2, 0).astype("uint8")
    img = Image.fromarray(img)
    img.save(filename)


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div(255.0)  # port: functional tensors: div_ into an op's output raises
    return (batch - mean) / std
"""


# fast_neural_style/neural_style/vgg.py: a random network in VGG16's layout
VGG = r"""
from collections import namedtuple

import torch


def features_like_vgg16(widths=(4, 8, 16, 16)):  # port: VGG16's first 23 layers, narrow, random
    layers, channels = [], 3
    for block, (width, convs) in enumerate(zip(widths, (2, 2, 3, 3))):
        if block > 0:
            layers.append(torch.nn.MaxPool2d(kernel_size=2, stride=2))
        for _ in range(convs):
            conv = torch.nn.Conv2d(channels, width, kernel_size=3, padding=1)
            layers += [conv, torch.nn.ReLU(inplace=True)]
            channels = width
    return torch.nn.Sequential(*layers)


class Vgg16(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super(Vgg16, self).__init__()
        vgg_pretrained_features = features_like_vgg16()  # port: no download
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 16):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(16, 23):
            self.slice4.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out
"""


# fast_neural_style/neural_style/neural_style.py
NEURAL_STYLE = r'''
import argparse
import os
import sys
import time
import re

import numpy as np
import torch
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset  # port: for the synthetic images
# port: torchvision and torch.onnx left out: synthetic images, no ONNX export

import utils
from transformer_net import TransformerNet
from vgg import Vgg16


def check_paths(args):
    try:
        if not os.path.exists(args.save_model_dir):
            os.makedirs(args.save_model_dir)
        if args.checkpoint_model_dir is not None and not (os.path.exists(args.checkpoint_model_dir)):
            os.makedirs(args.checkpoint_model_dir)
    except OSError as e:
        print(e)
        sys.exit(1)


def train(args):
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_dataset = TensorDataset(*synthetic_images(4, args.image_size))  # port: ImageFolder's
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet().to(device)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = Vgg16(requires_grad=False).to(device)
    style = synthetic_images(1, args.image_size, stripes=True)[0][0]  # port: load_image's
    style = style.tile((args.batch_size, 1, 1, 1)).to(device)  # port: repeat is numpy's: tile

    features_style = vgg(utils.normalize_batch(style))
    gram_style = [utils.gram_matrix(y) for y in features_style]

    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            x = x.to(device)
            y = transformer(x)

            y = utils.normalize_batch(y)
            x = utils.normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = utils.gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()

            if (batch_id + 1) % args.log_interval == 0:
                mesg = "{}\tEpoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    time.ctime(), e + 1, count, len(train_dataset),
                                  agg_content_loss / (batch_id + 1),
                                  agg_style_loss / (batch_id + 1),
                                  (agg_content_loss + agg_style_loss) / (batch_id + 1)
                )
                print(mesg)

            if args.checkpoint_model_dir is not None and (batch_id + 1) % args.checkpoint_interval == 0:
                transformer.eval().cpu()
                ckpt_model_filename = "ckpt_epoch_" + str(e) + "_batch_id_" + str(batch_id + 1) + ".pth"
                ckpt_model_path = os.path.join(args.checkpoint_model_dir, ckpt_model_filename)
                torch.save(transformer.state_dict(), ckpt_model_path)
                transformer.to(device).train()

    # save model
    transformer.eval().cpu()
    timestamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    save_model_filename = f"epoch_{args.epochs}_{timestamp}_{args.content_weight}_{args.style_weight}.model"
    save_model_path = os.path.join(args.save_model_dir, save_model_filename)
    torch.save(transformer.state_dict(), save_model_path)

    print("\nDone, trained model saved at", save_model_path)


def stylize(args):
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    content_image = synthetic_images(1, 16)[0][0]  # port: in place of load_image
    content_image = content_image.unsqueeze(0).to(device)

    if args.model.endswith(".onnx"):
        output = stylize_onnx(content_image, args)
    else:
        with torch.no_grad():
            style_model = TransformerNet()
            state_dict = torch.load(args.model)
            # remove saved deprecated running_* keys in InstanceNorm from the checkpoint
            for k in list(state_dict.keys()):
                if re.search(r'in\d+\.running_(mean|var)$', k):
                    del state_dict[k]
            style_model.load_state_dict(state_dict)
            style_model.to(device)
            style_model.eval()
            if args.export_onnx:
                assert args.export_onnx.endswith(".onnx"), "Export model file should end with .onnx"
                output = torch.onnx._export(
                    style_model, content_image, args.export_onnx, opset_version=11,
                ).cpu()
            else:
                output = style_model(content_image).cpu()
    utils.save_image(args.output_image, output[0])


def stylize_onnx(content_image, args):
    """
    Read ONNX model and run it using onnxruntime
    """

    assert not args.export_onnx

    import onnxruntime

    ort_session = onnxruntime.InferenceSession(args.model)

    def to_numpy(tensor):
        return (
            tensor.detach().cpu().numpy()
            if tensor.requires_grad
            else tensor.cpu().numpy()
        )

    ort_inputs = {ort_session.get_inputs()[0].name: to_numpy(content_image)}
    ort_outs = ort_session.run(None, ort_inputs)
    img_out_y = ort_outs[0]

    return torch.from_numpy(img_out_y)


def synthetic_images(n, size, stripes=False):  # port: images in [0, 255] made with numpy
    rng = np.random.default_rng(1 if stripes else 0)
    images = 255 * rng.random((n, 3, size, size), dtype=np.float32)
    if stripes:  # the style: vertical stripes
        images[:, :, :, ::2] = 0.0
    return torch.from_numpy(images), torch.zeros(n, dtype=torch.long)


def main():
    args = argparse.Namespace(  # port: the train subcommand's defaults, smaller
        subcommand="train", epochs=2, batch_size=2, dataset="unused", style_image="unused",
        save_model_dir="models", checkpoint_model_dir="checkpoints", image_size=16, style_size=None,
        accel=False, seed=42, content_weight=1e5, style_weight=1e10, lr=1e-3, log_interval=1,
        checkpoint_interval=2)

    if args.subcommand is None:
        print("ERROR: specify either train or eval")
        sys.exit(1)
    if args.accel and not torch.accelerator.is_available():
        print("ERROR: accelerator is not available, try running on CPU")
        sys.exit(1)
    if not args.accel and torch.accelerator.is_available():
        print("WARNING: accelerator is available, run with --accel to enable it")

    if args.subcommand == "train":
        check_paths(args)
        train(args)
    args = argparse.Namespace(  # port: then the eval subcommand on the model saved
        subcommand="eval", content_image="unused", content_scale=None, output_image="out.png",
        model=os.path.join("models", os.listdir("models")[0]), export_onnx=None, accel=False)
    stylize(args)


if __name__ == "__main__":
    main()
'''  # noqa: E501


# ------------------------------------------------------------------------- the tests
def corpus(sentences: int, seed: int) -> str:
    """A small text in a toy grammar, a sentence a line: subject, verb, object, full stop."""
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "the bird", "my friend"]
    verbs = ["sees", "likes", "chases"]
    objects = ["the ball", "a fish", "the tree", "some bread"]
    return "".join(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} .\n"
                   for _ in range(sentences))  # fmt: skip


@pytest.mark.parametrize("model", ["LSTM", "GRU", "Transformer"])
def test_word_language_model(model, tmp_path, monkeypatch):
    sizes = {"train": 120, "valid": 20, "test": 20}  # sentences
    text = {
        f"data/tiny/{part}.txt": corpus(n, seed) for seed, (part, n) in enumerate(sizes.items())
    }
    files = {"data.py": WLM_DATA, "model.py": WLM_MODEL, "main.py": WLM_MAIN,
             "generate.py": WLM_GENERATE, **text}  # fmt: skip
    theirs, ours = both(files, ["main.py", "generate.py"], tmp_path, monkeypatch, MODEL=model)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, (main, _)) in (("torch", theirs), ("tricycle", ours)):
        train = numbers(r"\| loss +([\d.]+) \|", printed)
        assert train[-1] < 0.7 * train[0], (library, train)
        test_loss = numbers(r"test loss +([\d.]+)", printed)
        assert test_loss[0] < 0.7 * math.log(main["ntokens"]), (
            library,
            test_loss,
        )  # a uniform guess: 1
        assert isinstance(main["best_val_loss"], float) and main["lr"] <= 10  # annealed by 4s
        words = (tmp_path / library / "generated.txt").read_text().split()
        assert len(words) == 40 and set(words) <= set(main["corpus"].dictionary.word2idx)
    (_, (main, generate)), (_, (our_main, our_generate)) = theirs, ours
    assert tuple(our_main["train_data"].shape) == tuple(main["train_data"].shape)
    for name in ("input", "output", "word_weights"):
        assert tuple(our_generate[name].shape) == tuple(generate[name].shape), name


def test_mnist_rnn(tmp_path, monkeypatch):
    theirs, ours = both({"main.py": MNIST_RNN}, ["main.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, _) in (("torch", theirs), ("tricycle", ours)):
        losses = numbers(r"Loss: ([\d.]+)", printed)
        assert losses[-1] < 0.5 * losses[0], (library, losses)
        correct = numbers(r"Accuracy: (\d+)/500", printed)
        assert correct[-1] > 0.8 * 500, (library, correct)  # chance: 50
        assert (tmp_path / library / "mnist_rnn.pt").exists()


def test_mnist_forward_forward(tmp_path, monkeypatch):
    theirs, ours = both({"main.py": MNIST_FORWARD_FORWARD}, ["main.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, _) in (("torch", theirs), ("tricycle", ours)):
        losses = numbers(r"Loss:  ([\d.]+)", printed)  # each layer's, one after the other
        first, second = losses[: len(losses) // 2], losses[len(losses) // 2 :]
        assert first[-1] < 0.8 * first[0] and second[-1] < 0.8 * second[0], (library, losses)
        errors = numbers(r"(?:train|test) error: ([\d.e-]+)", printed)
        assert max(errors) < 0.3, (library, errors)  # chance: 0.9
        assert (tmp_path / library / "mnist_ff.pt").exists()


def test_actor_critic(tmp_path, monkeypatch):
    theirs, ours = both({"actor_critic.py": ACTOR_CRITIC}, ["actor_critic.py"], tmp_path,
                        monkeypatch)  # fmt: skip
    assert set(lines(ours[0])) == set(lines(theirs[0]))  # the episodes differ in number
    for library, (printed, (space,)) in (("torch", theirs), ("tricycle", ours)):
        assert "Solved!" in printed, (library, printed)  # the running reward went 10 -> 15
        assert space["env"].episodes < space["env"].max_episodes
        assert space["model"].rewards == [] and space["model"].saved_actions == []


def test_fast_neural_style(tmp_path, monkeypatch):
    files = {"transformer_net.py": TRANSFORMER_NET, "utils.py": UTILS, "vgg.py": VGG,
             "neural_style.py": NEURAL_STYLE}  # fmt: skip
    theirs, ours = both(files, ["neural_style.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    PIL = pytest.importorskip("PIL.Image")
    for library, (printed, _) in (("torch", theirs), ("tricycle", ours)):
        total = numbers(r"total: ([\d.e+]+)", printed)  # each epoch's running means
        assert total[3] < total[1] and total[2] < total[0], (library, total)
        directory = tmp_path / library
        assert len(list((directory / "checkpoints").iterdir())) == 2
        assert len(list((directory / "models").iterdir())) == 1
        with PIL.open(directory / "out.png") as image:  # stylize's output of the saved model
            assert image.size == (16, 16) and image.mode == "RGB"
