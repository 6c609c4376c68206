"""PyTorch's "NLP From Scratch" tutorials (pytorch/tutorials, intermediate_source/):
char_rnn_generation_tutorial ("Generating Names with a Character-Level RNN") and
seq2seq_translation_tutorial ("Translation with a Sequence to Sequence Network and Attention"),
run on tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise;
the method of tests/test_torch_first_hour.py).

- char_rnn_generation: the names files it globs (``data/names/*.txt``, one language a file) are
  small made-up lists written here; the RNN of three Linear layers with the category input,
  ``torch.cat``, ``Dropout`` and ``LogSoftmax(dim=1)``; the one-hot tensors written element by
  element (``tensor[li][0][all_letters.find(letter)] = 1``), ``torch.LongTensor``,
  ``randomTrainingExample``, the hand-written step (``target_line_tensor.unsqueeze_(-1)``,
  ``loss += l``, ``p.data.add_(p.grad.data, alpha=-learning_rate)``) and sampling under
  ``no_grad`` (``output.topk(1)``, ``topi[0][0]`` compared with an int and indexing a string);
- seq2seq_translation: its ``data/eng-fra.txt`` is a few dozen made-up pairs written here (the
  sentences it translates at the end among them); ``Lang``, ``normalizeString``, the
  ``EncoderRNN`` (``GRU(batch_first=True)``), ``DecoderRNN``, ``BahdanauAttention``
  (``squeeze(2).unsqueeze(1)``, ``torch.bmm``), ``AttnDecoderRNN`` (``torch.empty(...,
  dtype=torch.long).fill_``, ``hidden.permute``, teacher forcing, ``topk``),
  ``get_dataloader`` (``torch.LongTensor`` of numpy ids, ``TensorDataset``, ``RandomSampler``,
  ``DataLoader``), ``train_epoch`` with two Adam optimisers and ``NLLLoss``, ``evaluate`` and
  the attention plot (``attentions.cpu().numpy()``, matplotlib's Agg).

Each changed line ends in ``# port:`` and says why: sizes and steps shrunk (a larger learning
rate for the fewer steps), and char_rnn's ``loss = torch.Tensor([0])`` written
``torch.tensor([0.])``: ``tricycle.Tensor(x)`` is the seed's constructor, whose float leaf
requires grad, so ``loss += l`` would write into a parameter. Each script runs under torch
(skipped without it), then under tricycle; both print the same lines (numbers, the sampled
names after their first letter and the translations aside) and learn (the losses fall). With
torch's weights (``nn.from_torch``) the tutorials' own functions give torch's numbers: one
``train`` step of the name RNN (output, loss, the parameters after the hand-written step), one
``train_epoch`` of the encoder and each decoder (loss, the parameters after Adam) and
``evaluate``'s words and attentions.
"""

# ruff: noqa: E501, W291, W293, E741

import re

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import lines, numbers

pytestmark = pytest.mark.filterwarnings("ignore:set_ticklabels:UserWarning")  # its attention plot

CHAR_RNN = r"""
from io import open
import glob
import os
import unicodedata
import string

all_letters = string.ascii_letters + " .,;'-"
n_letters = len(all_letters) + 1 # Plus EOS marker

def findFiles(path): return glob.glob(path)

# Turn a Unicode string to plain ASCII, thanks to http://stackoverflow.com/a/518232/2809427
def unicodeToAscii(s):
    return ''.join(
        c for c in unicodedata.normalize('NFD', s)
        if unicodedata.category(c) != 'Mn'
        and c in all_letters
    )

# Read a file and split into lines
def readLines(filename):
    with open(filename, encoding='utf-8') as some_file:
        return [unicodeToAscii(line.strip()) for line in some_file]

# Build the category_lines dictionary, a list of lines per category
category_lines = {}
all_categories = []
for filename in findFiles('data/names/*.txt'):
    category = os.path.splitext(os.path.basename(filename))[0]
    all_categories.append(category)
    lines = readLines(filename)
    category_lines[category] = lines

n_categories = len(all_categories)

if n_categories == 0:
    raise RuntimeError('Data not found. Make sure that you downloaded data '
        'from https://download.pytorch.org/tutorial/data.zip and extract it to '
        'the current directory.')

print('# categories:', n_categories, all_categories)
print(unicodeToAscii("O'Néàl"))

import torch
import torch.nn as nn

class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size

        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)

import random

# Random item from a list
def randomChoice(l):
    return l[random.randint(0, len(l) - 1)]

# Get a random category and random line from that category
def randomTrainingPair():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    return category, line

# One-hot vector for category
def categoryTensor(category):
    li = all_categories.index(category)
    tensor = torch.zeros(1, n_categories)
    tensor[0][li] = 1
    return tensor

# One-hot matrix of first to last letters (not including EOS) for input
def inputTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li in range(len(line)):
        letter = line[li]
        tensor[li][0][all_letters.find(letter)] = 1
    return tensor

# ``LongTensor`` of second letter to end (EOS) for target
def targetTensor(line):
    letter_indexes = [all_letters.find(line[li]) for li in range(1, len(line))]
    letter_indexes.append(n_letters - 1) # EOS
    return torch.LongTensor(letter_indexes)

# Make category, input, and target tensors from a random category, line pair
def randomTrainingExample():
    category, line = randomTrainingPair()
    category_tensor = categoryTensor(category)
    input_line_tensor = inputTensor(line)
    target_line_tensor = targetTensor(line)
    return category_tensor, input_line_tensor, target_line_tensor

criterion = nn.NLLLoss()

learning_rate = 0.005  # port: 0.0005, ten times: 200 steps, not 100000

def train(category_tensor, input_line_tensor, target_line_tensor):
    target_line_tensor.unsqueeze_(-1)
    hidden = rnn.initHidden()

    rnn.zero_grad()

    loss = torch.tensor([0.]) # you can also just simply use ``loss = 0``  # port: torch.Tensor([0]): tricycle.Tensor(x) of floats is a leaf that requires grad

    for i in range(input_line_tensor.size(0)):
        output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
        l = criterion(output, target_line_tensor[i])
        loss += l

    loss.backward()

    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)

    return output, loss.item() / input_line_tensor.size(0)

import time
import math

def timeSince(since):
    now = time.time()
    s = now - since
    m = math.floor(s / 60)
    s -= m * 60
    return '%dm %ds' % (m, s)

rnn = RNN(n_letters, 128, n_letters)

n_iters = 200  # port: 100000 shrunk
print_every = 50  # port: 5000 shrunk
plot_every = 25  # port: 500 shrunk
all_losses = []
total_loss = 0 # Reset every ``plot_every`` ``iters``

start = time.time()

for iter in range(1, n_iters + 1):
    output, loss = train(*randomTrainingExample())
    total_loss += loss

    if iter % print_every == 0:
        print('%s (%d %d%%) %.4f' % (timeSince(start), iter, iter / n_iters * 100, loss))

    if iter % plot_every == 0:
        all_losses.append(total_loss / plot_every)
        total_loss = 0

import matplotlib.pyplot as plt

plt.figure()
plt.plot(all_losses)

max_length = 20

# Sample from a category and starting letter
def sample(category, start_letter='A'):
    with torch.no_grad():  # no need to track history in sampling
        category_tensor = categoryTensor(category)
        input = inputTensor(start_letter)
        hidden = rnn.initHidden()

        output_name = start_letter

        for i in range(max_length):
            output, hidden = rnn(category_tensor, input[0], hidden)
            topv, topi = output.topk(1)
            topi = topi[0][0]
            if topi == n_letters - 1:
                break
            else:
                letter = all_letters[topi]
                output_name += letter
            input = inputTensor(letter)

        return output_name

# Get multiple samples from one category and multiple starting letters
def samples(category, start_letters='ABC'):
    for start_letter in start_letters:
        print(sample(category, start_letter))

samples('Russian', 'RUS')

samples('German', 'GER')

samples('Spanish', 'SPA')

samples('Chinese', 'CHI')
"""


SEQ2SEQ = r"""
from __future__ import unicode_literals, print_function, division
from io import open
import unicodedata
import re
import random

import torch
import torch.nn as nn
from torch import optim
import torch.nn.functional as F

import numpy as np
from torch.utils.data import TensorDataset, DataLoader, RandomSampler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

SOS_token = 0
EOS_token = 1

class Lang:
    def __init__(self, name):
        self.name = name
        self.word2index = {}
        self.word2count = {}
        self.index2word = {0: "SOS", 1: "EOS"}
        self.n_words = 2  # Count SOS and EOS

    def addSentence(self, sentence):
        for word in sentence.split(' '):
            self.addWord(word)

    def addWord(self, word):
        if word not in self.word2index:
            self.word2index[word] = self.n_words
            self.word2count[word] = 1
            self.index2word[self.n_words] = word
            self.n_words += 1
        else:
            self.word2count[word] += 1

# Turn a Unicode string to plain ASCII, thanks to
# https://stackoverflow.com/a/518232/2809427
def unicodeToAscii(s):
    return ''.join(
        c for c in unicodedata.normalize('NFD', s)
        if unicodedata.category(c) != 'Mn'
    )

# Lowercase, trim, and remove non-letter characters
def normalizeString(s):
    s = unicodeToAscii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    s = re.sub(r"[^a-zA-Z!?]+", r" ", s)
    return s.strip()

def readLangs(lang1, lang2, reverse=False):
    print("Reading lines...")

    # Read the file and split into lines
    lines = open('data/%s-%s.txt' % (lang1, lang2), encoding='utf-8').\
        read().strip().split('\n')

    # Split every line into pairs and normalize
    pairs = [[normalizeString(s) for s in l.split('\t')] for l in lines]

    # Reverse pairs, make Lang instances
    if reverse:
        pairs = [list(reversed(p)) for p in pairs]
        input_lang = Lang(lang2)
        output_lang = Lang(lang1)
    else:
        input_lang = Lang(lang1)
        output_lang = Lang(lang2)

    return input_lang, output_lang, pairs

MAX_LENGTH = 10

eng_prefixes = (
    "i am ", "i m ",
    "he is", "he s ",
    "she is", "she s ",
    "you are", "you re ",
    "we are", "we re ",
    "they are", "they re "
)

def filterPair(p):
    return len(p[0].split(' ')) < MAX_LENGTH and \
        len(p[1].split(' ')) < MAX_LENGTH and \
        p[1].startswith(eng_prefixes)


def filterPairs(pairs):
    return [pair for pair in pairs if filterPair(pair)]

def prepareData(lang1, lang2, reverse=False):
    input_lang, output_lang, pairs = readLangs(lang1, lang2, reverse)
    print("Read %s sentence pairs" % len(pairs))
    pairs = filterPairs(pairs)
    print("Trimmed to %s sentence pairs" % len(pairs))
    print("Counting words...")
    for pair in pairs:
        input_lang.addSentence(pair[0])
        output_lang.addSentence(pair[1])
    print("Counted words:")
    print(input_lang.name, input_lang.n_words)
    print(output_lang.name, output_lang.n_words)
    return input_lang, output_lang, pairs

input_lang, output_lang, pairs = prepareData('eng', 'fra', True)
print(random.choice(pairs))

class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden

class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super(DecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden  = self.forward_step(decoder_input, decoder_hidden)
            decoder_outputs.append(decoder_output)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1) # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        return decoder_outputs, decoder_hidden, None # We return `None` for consistency in the training loop

    def forward_step(self, input, hidden):
        output = self.embedding(input)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = self.out(output)
        return output, hidden

class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights

class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1) # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions


    def forward_step(self, input, hidden, encoder_outputs):
        embedded =  self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights

def indexesFromSentence(lang, sentence):
    return [lang.word2index[word] for word in sentence.split(' ')]

def tensorFromSentence(lang, sentence):
    indexes = indexesFromSentence(lang, sentence)
    indexes.append(EOS_token)
    return torch.tensor(indexes, dtype=torch.long, device=device).view(1, -1)

def tensorsFromPair(pair):
    input_tensor = tensorFromSentence(input_lang, pair[0])
    target_tensor = tensorFromSentence(output_lang, pair[1])
    return (input_tensor, target_tensor)

def get_dataloader(batch_size):
    input_lang, output_lang, pairs = prepareData('eng', 'fra', True)

    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)

    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = indexesFromSentence(input_lang, inp)
        tgt_ids = indexesFromSentence(output_lang, tgt)
        inp_ids.append(EOS_token)
        tgt_ids.append(EOS_token)
        input_ids[idx, :len(inp_ids)] = inp_ids
        target_ids[idx, :len(tgt_ids)] = tgt_ids

    train_data = TensorDataset(torch.LongTensor(input_ids).to(device),
                               torch.LongTensor(target_ids).to(device))

    train_sampler = RandomSampler(train_data)
    train_dataloader = DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)
    return input_lang, output_lang, train_dataloader

def train_epoch(dataloader, encoder, decoder, encoder_optimizer,
          decoder_optimizer, criterion):

    total_loss = 0
    for data in dataloader:
        input_tensor, target_tensor = data

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(
            decoder_outputs.view(-1, decoder_outputs.size(-1)),
            target_tensor.view(-1)
        )
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()

    return total_loss / len(dataloader)

import time
import math

def asMinutes(s):
    m = math.floor(s / 60)
    s -= m * 60
    return '%dm %ds' % (m, s)

def timeSince(since, percent):
    now = time.time()
    s = now - since
    es = s / (percent)
    rs = es - s
    return '%s (- %s)' % (asMinutes(s), asMinutes(rs))

def train(train_dataloader, encoder, decoder, n_epochs, learning_rate=0.001,
               print_every=100, plot_every=100):
    start = time.time()
    plot_losses = []
    print_loss_total = 0  # Reset every print_every
    plot_loss_total = 0  # Reset every plot_every

    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()

    for epoch in range(1, n_epochs + 1):
        loss = train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
        print_loss_total += loss
        plot_loss_total += loss

        if epoch % print_every == 0:
            print_loss_avg = print_loss_total / print_every
            print_loss_total = 0
            print('%s (%d %d%%) %.4f' % (timeSince(start, epoch / n_epochs),
                                        epoch, epoch / n_epochs * 100, print_loss_avg))

        if epoch % plot_every == 0:
            plot_loss_avg = plot_loss_total / plot_every
            plot_losses.append(plot_loss_avg)
            plot_loss_total = 0

    showPlot(plot_losses)

import matplotlib.pyplot as plt
plt.switch_backend('agg')
import matplotlib.ticker as ticker
import numpy as np

def showPlot(points):
    plt.figure()
    fig, ax = plt.subplots()
    # this locator puts ticks at regular intervals
    loc = ticker.MultipleLocator(base=0.2)
    ax.yaxis.set_major_locator(loc)
    plt.plot(points)

def evaluate(encoder, decoder, sentence, input_lang, output_lang):
    with torch.no_grad():
        input_tensor = tensorFromSentence(input_lang, sentence)

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append('<EOS>')
                break
            decoded_words.append(output_lang.index2word[idx.item()])
    return decoded_words, decoder_attn

def evaluateRandomly(encoder, decoder, n=10):
    for i in range(n):
        pair = random.choice(pairs)
        print('>', pair[0])
        print('=', pair[1])
        output_words, _ = evaluate(encoder, decoder, pair[0], input_lang, output_lang)
        output_sentence = ' '.join(output_words)
        print('<', output_sentence)
        print('')

hidden_size = 32  # port: 128 shrunk
batch_size = 16  # port: 32 shrunk

input_lang, output_lang, train_dataloader = get_dataloader(batch_size)

encoder = EncoderRNN(input_lang.n_words, hidden_size).to(device)
decoder = AttnDecoderRNN(hidden_size, output_lang.n_words).to(device)

train(train_dataloader, encoder, decoder, 20, learning_rate=0.01, print_every=5, plot_every=5)  # port: 80 epochs at 0.001: 20 at 0.01

encoder.eval()
decoder.eval()
evaluateRandomly(encoder, decoder, n=3)  # port: 10 shrunk

def showAttention(input_sentence, output_words, attentions):
    fig = plt.figure()
    ax = fig.add_subplot(111)
    cax = ax.matshow(attentions.cpu().numpy(), cmap='bone')
    fig.colorbar(cax)

    # Set up axes
    ax.set_xticklabels([''] + input_sentence.split(' ') +
                       ['<EOS>'], rotation=90)
    ax.set_yticklabels([''] + output_words)

    # Show label at every tick
    ax.xaxis.set_major_locator(ticker.MultipleLocator(1))
    ax.yaxis.set_major_locator(ticker.MultipleLocator(1))

    plt.show()


def evaluateAndShowAttention(input_sentence):
    output_words, attentions = evaluate(encoder, decoder, input_sentence, input_lang, output_lang)
    print('input =', input_sentence)
    print('output =', ' '.join(output_words))
    showAttention(input_sentence, output_words, attentions[0, :len(output_words), :])


evaluateAndShowAttention('il n est pas aussi grand que son pere')

evaluateAndShowAttention('je suis trop fatigue pour conduire')

evaluateAndShowAttention('je suis desole si c est une question idiote')

evaluateAndShowAttention('je suis reellement fiere de vous')
"""


# made-up names in four languages (stems and an ending each), one file a language as the
# tutorial's data.zip has them; the samples it prints start with these languages' letters
NAMES = {
    "Russian": (
        "ov",
        ["Ivan", "Petr", "Smirn", "Kuzn", "Volk", "Sokol", "Pop", "Lebed", "Orl", "Rom"],
    ),
    "German": (
        "er",
        ["Schmid", "Muell", "Schneid", "Fisch", "Web", "Beck", "Wagn", "Hoff", "Gerb", "Rich"],
    ),
    "Spanish": (
        "ez",
        ["Garci", "Fernand", "Lop", "Martin", "Sanch", "Per", "Gom", "Rodrigu", "Alvar", "Diaz"],
    ),
    "Chinese": ("ang", ["Zh", "W", "L", "Ch", "Y", "H", "X", "S", "Gu", "Ji"]),
}

# made-up English-French pairs (the tutorial's tab-separated eng-fra.txt), the four sentences
# it translates at its end among them; two fail its filter
SUBJECTS = [("I am", "Je suis"), ("He is", "Il est"), ("She is", "Elle est"), ("You are", "Vous êtes"),
            ("We are", "Nous sommes"), ("They are", "Ils sont")]  # fmt: skip
ADJECTIVES = [("tired", "fatigué"), ("happy", "heureux"), ("tall", "grand"), ("sorry", "désolé"),
              ("proud", "fier"), ("cold", "froid"), ("young", "jeune"), ("late", "en retard")]  # fmt: skip
SENTENCES = [
    "He is not as tall as his father.\tIl n'est pas aussi grand que son père.",
    "I am too tired to drive.\tJe suis trop fatigué pour conduire.",
    "I am sorry if this is a stupid question.\tJe suis désolé si c'est une question idiote.",
    "I am really proud of you.\tJe suis réellement fière de vous.",
    "Go.\tVa !",
    "Who?\tQui ?",
]


def write_data(folder) -> None:
    """The tutorials' data files, under ``folder/data``."""
    (folder / "data" / "names").mkdir(parents=True)
    for language, (ending, stems) in NAMES.items():
        text = "".join(f"{stem}{ending}\n" for stem in stems)
        (folder / "data" / "names" / f"{language}.txt").write_text(text, encoding="utf-8")
    pairs = [f"{e} {a}.\t{f} {b}." for e, f in SUBJECTS for a, b in ADJECTIVES] + SENTENCES
    (folder / "data" / "eng-fra.txt").write_text("\n".join(pairs) + "\n", encoding="utf-8")


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` run as ``__main__`` in ``folder`` beside its data: what it printed, its
    globals."""
    write_data(folder)
    return run_main(script, folder, monkeypatch, "tutorial.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in the text; both on
    the CPU (seq2seq asks for CUDA when there is one) and one thread, each library and
    Python's ``random`` (the tutorials' training pairs) seeded alike first."""
    torch = pytest.importorskip("torch")
    import random  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.accelerator, "is_available", lambda: False)
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    results = []
    for lib, text in (torch, script), (tricycle, script.replace("torch", "tricycle")):
        with one_thread(torch):
            lib.manual_seed(0)
            random.seed(0)
            results.append(run(text, tmp_path / lib.__name__, monkeypatch))
    return results


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def test_char_rnn_generation(tmp_path, monkeypatch):
    (theirs, their_space), (ours, space) = both(CHAR_RNN, tmp_path, monkeypatch)
    # the same lines, the twelve sampled names compared by their first letter (the starts)
    assert lines(ours)[:-12] == lines(theirs)[:-12]
    assert [name[0] for name in ours.splitlines()[-12:]] == list("RUSGERSPACHI")
    assert "# categories: 4" in ours and len(numbers(r"\((\d+) \d+%\)", ours)) == 4
    for run_ in their_space, space:  # the averages over 25 steps: the names are learnt
        fell(run_["all_losses"], 0.8)
    # the names sampled end at EOS, within max_length, of the alphabet
    assert all(0 < len(name) <= 21 for name in ours.splitlines()[-12:])


def test_seq2seq_translation(tmp_path, monkeypatch):
    (theirs, _), (ours, space) = both(SEQ2SEQ, tmp_path, monkeypatch)

    def kinds(printed: str) -> list[str]:  # the model's outputs aside (each run its own)
        return lines(re.sub(r"(?m)^(<|output =) .*$", r"\1 ...", printed))

    assert kinds(ours) == kinds(theirs)
    assert "Trimmed to 52 sentence pairs" in ours and "fra 39" in ours and "eng 33" in ours
    for printed in theirs, ours:  # the average loss each 5 epochs: it learns
        fell(numbers(r"\(\d+ \d+%\) ([\d.]+)", printed), 0.4)
        outputs = re.findall(r"(?m)^output = (.*)$", printed)  # English, SOS never predicted
        assert len(outputs) == 4 and all(o.split()[0] in ("i", "he", "she") for o in outputs)
        assert all("SOS" not in o for o in outputs), outputs
    encoder, decoder = space["encoder"], space["decoder"]
    assert not encoder.training and not decoder.training
    words, attentions = space["evaluate"](encoder, decoder, "je suis fatigue", space["input_lang"], space["output_lang"])  # fmt: skip
    assert attentions.shape == (1, 10, 4)  # MAX_LENGTH steps over the 4 input ids
    np.testing.assert_allclose(attentions.numpy().sum(-1), 1, rtol=1e-5)


def definitions(script: str, end: str, folder, monkeypatch) -> tuple[dict, dict]:
    """The tutorial's text up to ``end`` (its data read, its classes and functions defined,
    nothing trained), run under torch and under tricycle in ``folder``, both on the CPU as in
    ``both``: their globals."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # seq2seq's device: the CPU under both, on any machine
        monkeypatch.setattr(lib.accelerator, "is_available", lambda: False)
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    write_data(folder)
    monkeypatch.chdir(folder)
    text = script.split(end)[0]
    spaces = []
    for name in "torch", "tricycle":
        spaces.append({"__name__": "tutorial"})
        exec(compile(text.replace("torch", name), "tutorial.py", "exec"), spaces[-1])
    for lib in torch, spaces[1]["tricycle"]:
        lib.manual_seed(0)
    return spaces[0], spaces[1]


def same(ours, theirs, rtol=1e-5, atol=1e-6, err_msg="") -> None:
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.detach().numpy(), rtol=rtol, atol=atol, err_msg=err_msg)  # fmt: skip


def same_parameters(ours, theirs, rtol=1e-5, atol=1e-6, but=()) -> None:
    """Every tensor of tricycle's model, in torch's layout, as torch's of the same name (those
    named in ``but`` aside)."""
    import tricycle.nn as nn  # noqa: PLC0415

    expected = theirs.state_dict()
    for name, value in nn.to_torch(ours).items():
        if name in but:
            continue
        np.testing.assert_allclose(np.asarray(value), expected[name].numpy(), rtol=rtol, atol=atol, err_msg=name)  # fmt: skip


def test_char_rnn_step_as_torchs(tmp_path, monkeypatch):
    """The tutorial's ``train`` (the summed losses, ``loss.backward()``, ``p.data.add_(p.grad.data,
    alpha=-learning_rate)``) and ``sample``, on tricycle's RNN given torch's weights: torch's
    output, loss and parameters after two steps, and its names (dropout off: ``eval()``)."""
    import tricycle.nn as nn  # noqa: PLC0415

    theirs, ours = definitions(CHAR_RNN, "rnn = RNN(", tmp_path, monkeypatch)
    sampling = "max_length = 20" + CHAR_RNN.split("max_length = 20")[1].split("# Get multiple")[0]
    for name, space in ("torch", theirs), ("tricycle", ours):
        exec(sampling.replace("torch", name), space)  # ``sample``, defined after the training
        space["rnn"] = space["RNN"](space["n_letters"], 16, space["n_letters"]).eval()
    assert nn.from_torch(ours["rnn"], theirs["rnn"].state_dict()) == ([], [])
    for line in "Ivanov", "Zhang":
        out = [s["train"](s["categoryTensor"]("Russian"), s["inputTensor"](line), s["targetTensor"](line)) for s in (ours, theirs)]  # fmt: skip
        (output, loss), (their_output, their_loss) = out
        same(output, their_output)
        np.testing.assert_allclose(loss, their_loss, rtol=1e-6)
        same_parameters(ours["rnn"], theirs["rnn"])
    for start in "RUS":
        assert ours["sample"]("Russian", start) == theirs["sample"]("Russian", start)


@pytest.mark.parametrize("attention", [True, False])
def test_seq2seq_epoch_and_evaluate_as_torchs(attention, tmp_path, monkeypatch):
    """``train_epoch`` over two batches (the encoder, ``AttnDecoderRNN`` or ``DecoderRNN`` given
    torch's weights, teacher forcing, Adam on both) and ``evaluate`` (greedy decoding by
    ``topk``, the attention weights): torch's loss, parameters and words (dropout off)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    theirs, ours = definitions(SEQ2SEQ, "hidden_size = 32", tmp_path, monkeypatch)
    models = []
    for space in theirs, ours:
        language = space["get_dataloader"](4)[:2]
        encoder = space["EncoderRNN"](language[0].n_words, 8).eval()
        decoder = space["AttnDecoderRNN" if attention else "DecoderRNN"](8, language[1].n_words).eval()  # fmt: skip
        models.append((encoder, decoder, language))
    (encoder, decoder, (input_lang, output_lang)), (our_encoder, our_decoder, _) = models
    for model, ours_ in (encoder, our_encoder), (decoder, our_decoder):
        assert nn.from_torch(ours_, model.state_dict()) == ([], [])
    ids = [np.zeros((4, 10), np.int64) for _ in range(2)]  # the first pairs, as get_dataloader
    for k, (inp, tgt) in enumerate(theirs["pairs"][:8]):
        for array, lang, sentence in (ids[0], input_lang, inp), (ids[1], output_lang, tgt):
            words = theirs["indexesFromSentence"](lang, sentence) + [1]
            array[k % 4 if k < 4 else k - 4, : len(words)] = words
    losses = []
    for space, lib, (enc, dec, _) in (theirs, torch, models[0]), (ours, tricycle, models[1]):
        batches = [(lib.tensor(ids[0]), lib.tensor(ids[1]))] * 2
        optimisers = [space["optim"].Adam(m.parameters(), lr=0.01) for m in (enc, dec)]
        losses.append(space["train_epoch"](batches, enc, dec, *optimisers, space["nn"].NLLLoss()))
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    same_parameters(our_encoder, encoder, atol=1e-5)
    # Va's bias shifts every score alike, which softmax ignores: its gradient is zero up to
    # rounding, and Adam's step divides rounding by rounding (any step up to lr, either sign)
    same_parameters(our_decoder, decoder, atol=1e-5, but=("attention.Va.bias",))
    if attention:
        grad = our_decoder.attention.Va.bias.grad.numpy()
        np.testing.assert_allclose(grad, decoder.attention.Va.bias.grad.numpy(), atol=1e-6)
    for sentence in "je suis fatigue", "il n est pas aussi grand que son pere":
        (words, attn), (our_words, our_attn) = (
            space["evaluate"](enc, dec, sentence, input_lang, output_lang)
            for space, (enc, dec, _) in zip((theirs, ours), models)
        )
        assert our_words == words
        if attention:
            same(our_attn, attn, rtol=1e-4, atol=1e-6)
        else:
            assert our_attn is None is attn
