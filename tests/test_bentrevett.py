"""Ben Trevett's tutorials, run on tricycle with ``torch`` replaced by ``tricycle`` in their text
(docs/pytorch.md's promise; the method of tests/test_mlbook_ch16_19.py):

- bentrevett/pytorch-seq2seq, notebooks 1 to 3: the LSTM encoder-decoder ("Sequence to Sequence
  Learning with Neural Networks": two-layer ``nn.LSTM``s, teacher forcing, ``outputs[t] =
  output`` into a ``zeros`` tensor, ``clip_grad_norm_``, ``CrossEntropyLoss(ignore_index=)``,
  greedy translation, BLEU), the GRU encoder-decoder whose context feeds every step, and
  Bahdanau's attention (a bidirectional ``GRU``, ``bmm`` over the encoder's outputs, the
  attention weights kept per step);
- bentrevett/pytorch-sentiment-analysis, notebooks 1 to 3: the neural bag of words, the
  bidirectional two-layer LSTM over ``pack_padded_sequence(..., enforce_sorted=False)`` and the
  CNN of ``Conv1d``s with max over time, each starting from pretrained word vectors
  (``embedding.weight.data = ...``), trained with Adam, saved, loaded, and asked the sentiment of
  new sentences. Notebook 4 fine-tunes transformers' pretrained BERT: left out.

The notebooks' code cells are held here (the cells the notebooks share once: notebooks 2 and 3
of each repository run notebook 1's data cells, which show a few more values). Stand-ins for
what is not installed, only what the cells call: ``datasets`` (``load_dataset`` of a small
German-English corpus in Multi30k's place and of made-up reviews in IMDb's (those of
tests/test_mlbook_ch14_15.py), ``map``, ``with_format``, ``train_test_split``, ``unique``),
``spacy`` (a tokenizer splitting words and punctuation), ``torchtext`` (``basic_english``,
``build_vocab_from_iterator``'s ``Vocab``, ``GloVe`` as made-up vectors), ``tqdm`` (quiet) and
``evaluate``'s BLEU. Each changed line ends in ``# port:`` and says why: sizes and epochs
shrunk, the plots dropped (test time), tricycle's layers' ``weights`` (documented) and torch's
``repeat`` written ``tile`` (documented). Each notebook runs under torch (skipped without it),
then under tricycle, seeded and on the CPU: both print the same lines (numbers aside; the
untrained translations' words aside) and the same count of parameters, the losses fall, and
given torch's weights (``nn.from_torch``) each model gives torch's outputs, loss and gradients
on a batch, torch's parameters after the notebook's step (``clip_grad_norm_``, Adam), and
torch's greedy translation (with its attention weights) or sentiment of a new sentence.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import math
import re
import sys
import zlib
from collections import Counter

import numpy as np
import pytest

from tests.helpers import module, package, run_cells, torch_and_tricycle
from tests.test_d2l_optim_gan import same_state
from tests.test_mlbook_ch14_15 import reviews
from tests.test_mlbook_ch16_19 import MODEL, layers, same_numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_tutorials_rl_text import get_tokenizer

# notebook 1's cells up to its model (notebooks 2 and 3 run the same, fewer of them shown)
SEQ2SEQ_DATA = r"""
# NOTE: If you are running this notebook on Google Colab,
#       then uncomment the two lines below and then run this cell!

#!pip install datasets evaluate --upgrade
#!python -m spacy download de_core_news_sm
# %%
import torch
import torch.nn as nn
import torch.optim as optim
import random
import numpy as np
import spacy
import datasets
import torchtext
import tqdm
import evaluate
# %%
seed = 1234

random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cudnn.deterministic = True
# %%
dataset = datasets.load_dataset("bentrevett/multi30k")
# %%
dataset
# %%
train_data, valid_data, test_data = (
    dataset["train"],
    dataset["validation"],
    dataset["test"],
)
# %%
train_data[0]
# %%
en_nlp = spacy.load("en_core_web_sm")
de_nlp = spacy.load("de_core_news_sm")
# %%
string = "What a lovely day it is today!"

[token.text for token in en_nlp.tokenizer(string)]
# %%
def tokenize_example(example, en_nlp, de_nlp, max_length, lower, sos_token, eos_token):
    en_tokens = [token.text for token in en_nlp.tokenizer(example["en"])][:max_length]
    de_tokens = [token.text for token in de_nlp.tokenizer(example["de"])][:max_length]
    if lower:
        en_tokens = [token.lower() for token in en_tokens]
        de_tokens = [token.lower() for token in de_tokens]
    en_tokens = [sos_token] + en_tokens + [eos_token]
    de_tokens = [sos_token] + de_tokens + [eos_token]
    return {"en_tokens": en_tokens, "de_tokens": de_tokens}
# %%
max_length = 1_000
lower = True
sos_token = "<sos>"
eos_token = "<eos>"

fn_kwargs = {
    "en_nlp": en_nlp,
    "de_nlp": de_nlp,
    "max_length": max_length,
    "lower": lower,
    "sos_token": sos_token,
    "eos_token": eos_token,
}

train_data = train_data.map(tokenize_example, fn_kwargs=fn_kwargs)
valid_data = valid_data.map(tokenize_example, fn_kwargs=fn_kwargs)
test_data = test_data.map(tokenize_example, fn_kwargs=fn_kwargs)
# %%
train_data[0]
# %%
min_freq = 2
unk_token = "<unk>"
pad_token = "<pad>"

special_tokens = [
    unk_token,
    pad_token,
    sos_token,
    eos_token,
]

en_vocab = torchtext.vocab.build_vocab_from_iterator(
    train_data["en_tokens"],
    min_freq=min_freq,
    specials=special_tokens,
)

de_vocab = torchtext.vocab.build_vocab_from_iterator(
    train_data["de_tokens"],
    min_freq=min_freq,
    specials=special_tokens,
)
# %%
en_vocab.get_itos()[:10]
# %%
en_vocab.get_itos()[9]
# %%
de_vocab.get_itos()[:10]
# %%
en_vocab.get_stoi()["the"]
# %%
en_vocab["the"]
# %%
len(en_vocab), len(de_vocab)
# %%
"the" in en_vocab
# %%
"The" in en_vocab
# %%
# en_vocab["The"]
# %%
assert en_vocab[unk_token] == de_vocab[unk_token]
assert en_vocab[pad_token] == de_vocab[pad_token]

unk_index = en_vocab[unk_token]
pad_index = en_vocab[pad_token]
# %%
en_vocab.set_default_index(unk_index)
de_vocab.set_default_index(unk_index)
# %%
en_vocab["The"]
# %%
en_vocab.get_itos()[0]
# %%
tokens = ["i", "love", "watching", "crime", "shows"]
# %%
en_vocab.lookup_indices(tokens)
# %%
en_vocab.lookup_tokens(en_vocab.lookup_indices(tokens))
# %%
def numericalize_example(example, en_vocab, de_vocab):
    en_ids = en_vocab.lookup_indices(example["en_tokens"])
    de_ids = de_vocab.lookup_indices(example["de_tokens"])
    return {"en_ids": en_ids, "de_ids": de_ids}
# %%
fn_kwargs = {"en_vocab": en_vocab, "de_vocab": de_vocab}

train_data = train_data.map(numericalize_example, fn_kwargs=fn_kwargs)
valid_data = valid_data.map(numericalize_example, fn_kwargs=fn_kwargs)
test_data = test_data.map(numericalize_example, fn_kwargs=fn_kwargs)
# %%
train_data[0]
# %%
en_vocab.lookup_tokens(train_data[0]["en_ids"])
# %%
data_type = "torch"
format_columns = ["en_ids", "de_ids"]

train_data = train_data.with_format(
    type=data_type, columns=format_columns, output_all_columns=True
)

valid_data = valid_data.with_format(
    type=data_type,
    columns=format_columns,
    output_all_columns=True,
)

test_data = test_data.with_format(
    type=data_type,
    columns=format_columns,
    output_all_columns=True,
)
# %%
train_data[0]
# %%
type(train_data[0]["en_ids"])
# %%
def get_collate_fn(pad_index):
    def collate_fn(batch):
        batch_en_ids = [example["en_ids"] for example in batch]
        batch_de_ids = [example["de_ids"] for example in batch]
        batch_en_ids = nn.utils.rnn.pad_sequence(batch_en_ids, padding_value=pad_index)
        batch_de_ids = nn.utils.rnn.pad_sequence(batch_de_ids, padding_value=pad_index)
        batch = {
            "en_ids": batch_en_ids,
            "de_ids": batch_de_ids,
        }
        return batch

    return collate_fn
# %%
def get_data_loader(dataset, batch_size, pad_index, shuffle=False):
    collate_fn = get_collate_fn(pad_index)
    data_loader = torch.utils.data.DataLoader(
        dataset=dataset,
        batch_size=batch_size,
        collate_fn=collate_fn,
        shuffle=shuffle,
    )
    return data_loader
# %%
batch_size = 32  # port: 128: the corpus is 64 pairs

train_data_loader = get_data_loader(train_data, batch_size, pad_index, shuffle=True)
valid_data_loader = get_data_loader(valid_data, batch_size, pad_index)
test_data_loader = get_data_loader(test_data, batch_size, pad_index)
"""

# notebook 1's model
SEQ2SEQ_1_MODEL = r"""
class Encoder(nn.Module):
    def __init__(self, input_dim, embedding_dim, hidden_dim, n_layers, dropout):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.n_layers = n_layers
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        self.rnn = nn.LSTM(embedding_dim, hidden_dim, n_layers, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [src length, batch size]
        embedded = self.dropout(self.embedding(src))
        # embedded = [src length, batch size, embedding dim]
        outputs, (hidden, cell) = self.rnn(embedded)
        # outputs = [src length, batch size, hidden dim * n directions]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        # outputs are always from the top hidden layer
        return hidden, cell
# %%
class Decoder(nn.Module):
    def __init__(self, output_dim, embedding_dim, hidden_dim, n_layers, dropout):
        super().__init__()
        self.output_dim = output_dim
        self.hidden_dim = hidden_dim
        self.n_layers = n_layers
        self.embedding = nn.Embedding(output_dim, embedding_dim)
        self.rnn = nn.LSTM(embedding_dim, hidden_dim, n_layers, dropout=dropout)
        self.fc_out = nn.Linear(hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):
        # input = [batch size]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        # n directions in the decoder will both always be 1, therefore:
        # hidden = [n layers, batch size, hidden dim]
        # context = [n layers, batch size, hidden dim]
        input = input.unsqueeze(0)
        # input = [1, batch size]
        embedded = self.dropout(self.embedding(input))
        # embedded = [1, batch size, embedding dim]
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        # output = [seq length, batch size, hidden dim * n directions]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        # seq length and n directions will always be 1 in this decoder, therefore:
        # output = [1, batch size, hidden dim]
        # hidden = [n layers, batch size, hidden dim]
        # cell = [n layers, batch size, hidden dim]
        prediction = self.fc_out(output.squeeze(0))
        # prediction = [batch size, output dim]
        return prediction, hidden, cell
# %%
class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        assert (
            encoder.hidden_dim == decoder.hidden_dim
        ), "Hidden dimensions of encoder and decoder must be equal!"
        assert (
            encoder.n_layers == decoder.n_layers
        ), "Encoder and decoder must have equal number of layers!"

    def forward(self, src, trg, teacher_forcing_ratio):
        # src = [src length, batch size]
        # trg = [trg length, batch size]
        # teacher_forcing_ratio is probability to use teacher forcing
        # e.g. if teacher_forcing_ratio is 0.75 we use ground-truth inputs 75% of the time
        batch_size = trg.shape[1]
        trg_length = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        # tensor to store decoder outputs
        outputs = torch.zeros(trg_length, batch_size, trg_vocab_size).to(self.device)
        # last hidden state of the encoder is used as the initial hidden state of the decoder
        hidden, cell = self.encoder(src)
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        # first input to the decoder is the <sos> tokens
        input = trg[0, :]
        # input = [batch size]
        for t in range(1, trg_length):
            # insert input token embedding, previous hidden and previous cell states
            # receive output tensor (predictions) and new hidden and cell states
            output, hidden, cell = self.decoder(input, hidden, cell)
            # output = [batch size, output dim]
            # hidden = [n layers, batch size, hidden dim]
            # cell = [n layers, batch size, hidden dim]
            # place predictions in a tensor holding predictions for each token
            outputs[t] = output
            # decide if we are going to use teacher forcing or not
            teacher_force = random.random() < teacher_forcing_ratio
            # get the highest predicted token from our predictions
            top1 = output.argmax(1)
            # if teacher forcing, use actual next token as next input
            # if not, use predicted token
            input = trg[t] if teacher_force else top1
            # input = [batch size]
        return outputs
# %%
input_dim = len(de_vocab)
output_dim = len(en_vocab)
encoder_embedding_dim = 16  # port: 256: a shared CPU
decoder_embedding_dim = 16  # port: 256
hidden_dim = 32  # port: 512
n_layers = 2
encoder_dropout = 0.5
decoder_dropout = 0.5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

encoder = Encoder(
    input_dim,
    encoder_embedding_dim,
    hidden_dim,
    n_layers,
    encoder_dropout,
)

decoder = Decoder(
    output_dim,
    decoder_embedding_dim,
    hidden_dim,
    n_layers,
    decoder_dropout,
)

model = Seq2Seq(encoder, decoder, device).to(device)
# %%
def init_weights(m):
    for name, param in m.named_parameters():
        nn.init.uniform_(param.data, -0.08, 0.08)


model.apply(init_weights)
"""

# the training cells, the same in the three notebooks but for the file's name (tut1)
SEQ2SEQ_TRAIN = r"""
def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


print(f"The model has {count_parameters(model):,} trainable parameters")
# %%
optimizer = optim.Adam(model.parameters())
# %%
criterion = nn.CrossEntropyLoss(ignore_index=pad_index)
# %%
def train_fn(
    model, data_loader, optimizer, criterion, clip, teacher_forcing_ratio, device
):
    model.train()
    epoch_loss = 0
    for i, batch in enumerate(data_loader):
        src = batch["de_ids"].to(device)
        trg = batch["en_ids"].to(device)
        # src = [src length, batch size]
        # trg = [trg length, batch size]
        optimizer.zero_grad()
        output = model(src, trg, teacher_forcing_ratio)
        # output = [trg length, batch size, trg vocab size]
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        # output = [(trg length - 1) * batch size, trg vocab size]
        trg = trg[1:].view(-1)
        # trg = [(trg length - 1) * batch size]
        loss = criterion(output, trg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(data_loader)
# %%
def evaluate_fn(model, data_loader, criterion, device):
    model.eval()
    epoch_loss = 0
    with torch.no_grad():
        for i, batch in enumerate(data_loader):
            src = batch["de_ids"].to(device)
            trg = batch["en_ids"].to(device)
            # src = [src length, batch size]
            # trg = [trg length, batch size]
            output = model(src, trg, 0)  # turn off teacher forcing
            # output = [trg length, batch size, trg vocab size]
            output_dim = output.shape[-1]
            output = output[1:].view(-1, output_dim)
            # output = [(trg length - 1) * batch size, trg vocab size]
            trg = trg[1:].view(-1)
            # trg = [(trg length - 1) * batch size]
            loss = criterion(output, trg)
            epoch_loss += loss.item()
    return epoch_loss / len(data_loader)
# %%
n_epochs = 2  # port: 10
clip = 1.0
teacher_forcing_ratio = 0.5

best_valid_loss = float("inf")

for epoch in tqdm.tqdm(range(n_epochs)):
    train_loss = train_fn(
        model,
        train_data_loader,
        optimizer,
        criterion,
        clip,
        teacher_forcing_ratio,
        device,
    )
    valid_loss = evaluate_fn(
        model,
        valid_data_loader,
        criterion,
        device,
    )
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), "tut1-model.pt")
    print(f"\tTrain Loss: {train_loss:7.3f} | Train PPL: {np.exp(train_loss):7.3f}")
    print(f"\tValid Loss: {valid_loss:7.3f} | Valid PPL: {np.exp(valid_loss):7.3f}")
# %%
model.load_state_dict(torch.load("tut1-model.pt"))

test_loss = evaluate_fn(model, test_data_loader, criterion, device)

print(f"| Test Loss: {test_loss:.3f} | Test PPL: {np.exp(test_loss):7.3f} |")
"""

# notebook 1's translate_sentence and its uses
SEQ2SEQ_1_TRANSLATE = r"""
def translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
    max_output_length=25,
):
    model.eval()
    with torch.no_grad():
        if isinstance(sentence, str):
            tokens = [token.text for token in de_nlp.tokenizer(sentence)]
        else:
            tokens = [token for token in sentence]
        if lower:
            tokens = [token.lower() for token in tokens]
        tokens = [sos_token] + tokens + [eos_token]
        ids = de_vocab.lookup_indices(tokens)
        tensor = torch.LongTensor(ids).unsqueeze(-1).to(device)
        hidden, cell = model.encoder(tensor)
        inputs = en_vocab.lookup_indices([sos_token])
        for _ in range(max_output_length):
            inputs_tensor = torch.LongTensor([inputs[-1]]).to(device)
            output, hidden, cell = model.decoder(inputs_tensor, hidden, cell)
            predicted_token = output.argmax(-1).item()
            inputs.append(predicted_token)
            if predicted_token == en_vocab[eos_token]:
                break
        tokens = en_vocab.lookup_tokens(inputs)
    return tokens
# %%
sentence = test_data[0]["de"]
expected_translation = test_data[0]["en"]

sentence, expected_translation
# %%
translation = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
sentence = "Ein Mann sitzt auf einer Bank."
# %%
translation = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
translations = [
    translate_sentence(
        example["de"],
        model,
        en_nlp,
        de_nlp,
        en_vocab,
        de_vocab,
        lower,
        sos_token,
        eos_token,
        device,
    )
    for example in tqdm.tqdm(test_data)
]
"""

# the BLEU cells (notebook 1's; 2 and 3 show fewer)
SEQ2SEQ_BLEU = r"""
bleu = evaluate.load("bleu")
# %%
predictions = [" ".join(translation[1:-1]) for translation in translations]

references = [[example["en"]] for example in test_data]
# %%
predictions[0], references[0]
# %%
def get_tokenizer_fn(nlp, lower):
    def tokenizer_fn(s):
        tokens = [token.text for token in nlp.tokenizer(s)]
        if lower:
            tokens = [token.lower() for token in tokens]
        return tokens

    return tokenizer_fn
# %%
tokenizer_fn = get_tokenizer_fn(en_nlp, lower)
# %%
tokenizer_fn(predictions[0]), tokenizer_fn(references[0][0])
# %%
results = bleu.compute(
    predictions=predictions, references=references, tokenizer=tokenizer_fn
)
# %%
results

"""

# notebook 2's model
SEQ2SEQ_2_MODEL = r"""
class Encoder(nn.Module):
    def __init__(self, input_dim, embedding_dim, hidden_dim, dropout):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        self.rnn = nn.GRU(embedding_dim, hidden_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [src length, batch size]
        embedded = self.dropout(self.embedding(src))
        # embedded = [src length, batch size, embedding dim]
        outputs, hidden = self.rnn(embedded)  # no cell state in GRU!
        # outputs = [src length, batch size, hidden dim * n directions]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # outputs are always from the top hidden layer
        return hidden
# %%
class Decoder(nn.Module):
    def __init__(self, output_dim, embedding_dim, hidden_dim, dropout):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.output_dim = output_dim
        self.embedding = nn.Embedding(output_dim, embedding_dim)
        self.rnn = nn.GRU(embedding_dim + hidden_dim, hidden_dim)
        self.fc_out = nn.Linear(embedding_dim + hidden_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, context):
        # input = [batch size]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # context = [n layers * n directions, batch size, hidden dim]
        # n layers and n directions in the decoder will both always be 1, therefore:
        # hidden = [1, batch size, hidden dim]
        # context = [1, batch size, hidden dim]
        input = input.unsqueeze(0)
        # input = [1, batch size]
        embedded = self.dropout(self.embedding(input))
        # embedded = [1, batch size, embedding dim]
        emb_con = torch.cat((embedded, context), dim=2)
        # emb_con = [1, batch size, embedding dim + hidden dim]
        output, hidden = self.rnn(emb_con, hidden)
        # output = [seq len, batch size, hidden dim * n directions]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # seq len, n layers and n directions will always be 1 in this decoder, therefore:
        # output = [1, batch size, hidden dim]
        # hidden = [1, batch size, hidden dim]
        output = torch.cat(
            (embedded.squeeze(0), hidden.squeeze(0), context.squeeze(0)), dim=1
        )
        # output = [batch size, embedding dim + hidden dim * 2]
        prediction = self.fc_out(output)
        # prediction = [batch size, output dim]
        return prediction, hidden
# %%
class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        assert (
            encoder.hidden_dim == decoder.hidden_dim
        ), "Hidden dimensions of encoder and decoder must be equal!"

    def forward(self, src, trg, teacher_forcing_ratio):
        # src = [src length, batch size]
        # trg = [trg length, batch size]
        # teacher_forcing_ratio is probability to use teacher forcing
        # e.g. if teacher_forcing_ratio is 0.75 we use ground-truth inputs 75% of the time
        batch_size = trg.shape[1]
        trg_length = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        # tensor to store decoder outputs
        outputs = torch.zeros(trg_length, batch_size, trg_vocab_size).to(self.device)
        # last hidden state of the encoder is the context
        context = self.encoder(src)
        # context = [n layers * n directions, batch size, hidden dim]
        # context also used as the initial hidden state of the decoder
        hidden = context
        # hidden = [n layers * n directions, batch size, hidden dim]
        # first input to the decoder is the <sos> tokens
        input = trg[0, :]
        for t in range(1, trg_length):
            # insert input token embedding, previous hidden state and the context state
            # receive output tensor (predictions) and new hidden state
            output, hidden = self.decoder(input, hidden, context)
            # output = [batch size, output dim]
            # hidden = [1, batch size, hidden dim]
            # place predictions in a tensor holding predictions for each token
            outputs[t] = output
            # decide if we are going to use teacher forcing or not
            teacher_force = random.random() < teacher_forcing_ratio
            # get the highest predicted token from our predictions
            top1 = output.argmax(1)
            # if teacher forcing, use actual next token as next input
            # if not, use predicted token
            input = trg[t] if teacher_force else top1
            # input = [batch size]
        return outputs
# %%
input_dim = len(de_vocab)
output_dim = len(en_vocab)
encoder_embedding_dim = 16  # port: 256: a shared CPU
decoder_embedding_dim = 16  # port: 256
hidden_dim = 32  # port: 512
encoder_dropout = 0.5
decoder_dropout = 0.5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

encoder = Encoder(
    input_dim,
    encoder_embedding_dim,
    hidden_dim,
    encoder_dropout,
)

decoder = Decoder(
    output_dim,
    decoder_embedding_dim,
    hidden_dim,
    decoder_dropout,
)

model = Seq2Seq(encoder, decoder, device).to(device)
# %%
def init_weights(m):
    for name, param in m.named_parameters():
        nn.init.normal_(param.data, mean=0, std=0.01)


model.apply(init_weights)
"""

# notebook 2's
SEQ2SEQ_2_TRANSLATE = r"""
def translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
    max_output_length=25,
):
    model.eval()
    with torch.no_grad():
        if isinstance(sentence, str):
            tokens = [token.text for token in de_nlp.tokenizer(sentence)]
        else:
            tokens = [token for token in sentence]
        if lower:
            tokens = [token.lower() for token in tokens]
        tokens = [sos_token] + tokens + [eos_token]
        ids = de_vocab.lookup_indices(tokens)
        tensor = torch.LongTensor(ids).unsqueeze(-1).to(device)
        context = model.encoder(tensor)
        hidden = context
        inputs = en_vocab.lookup_indices([sos_token])
        for _ in range(max_output_length):
            inputs_tensor = torch.LongTensor([inputs[-1]]).to(device)
            output, hidden = model.decoder(inputs_tensor, hidden, context)
            predicted_token = output.argmax(-1).item()
            inputs.append(predicted_token)
            if predicted_token == en_vocab[eos_token]:
                break
        tokens = en_vocab.lookup_tokens(inputs)
    return tokens
# %%
sentence = test_data[0]["de"]
expected_translation = test_data[0]["en"]

sentence, expected_translation
# %%
translation = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
sentence = "Ein Mann sieht sich einen Film an."
# %%
translation = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
translations = [
    translate_sentence(
        example["de"],
        model,
        en_nlp,
        de_nlp,
        en_vocab,
        de_vocab,
        lower,
        sos_token,
        eos_token,
        device,
    )
    for example in tqdm.tqdm(test_data)
]
"""

# notebook 3's model
SEQ2SEQ_3_MODEL = r"""
# import matplotlib.pyplot as plt  # port: notebook 3's imports: the attention plots are dropped (test time)
# import matplotlib.ticker as ticker  # port: as above
# %%
class Encoder(nn.Module):
    def __init__(
        self, input_dim, embedding_dim, encoder_hidden_dim, decoder_hidden_dim, dropout
    ):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        self.rnn = nn.GRU(embedding_dim, encoder_hidden_dim, bidirectional=True)
        self.fc = nn.Linear(encoder_hidden_dim * 2, decoder_hidden_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [src length, batch size]
        embedded = self.dropout(self.embedding(src))
        # embedded = [src length, batch size, embedding dim]
        outputs, hidden = self.rnn(embedded)
        # outputs = [src length, batch size, hidden dim * n directions]
        # hidden = [n layers * n directions, batch size, hidden dim]
        # hidden is stacked [forward_1, backward_1, forward_2, backward_2, ...]
        # outputs are always from the last layer
        # hidden [-2, :, : ] is the last of the forwards RNN
        # hidden [-1, :, : ] is the last of the backwards RNN
        # initial decoder hidden is final hidden state of the forwards and backwards
        # encoder RNNs fed through a linear layer
        hidden = torch.tanh(
            self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        )
        # outputs = [src length, batch size, encoder hidden dim * 2]
        # hidden = [batch size, decoder hidden dim]
        return outputs, hidden
# %%
class Attention(nn.Module):
    def __init__(self, encoder_hidden_dim, decoder_hidden_dim):
        super().__init__()
        self.attn_fc = nn.Linear(
            (encoder_hidden_dim * 2) + decoder_hidden_dim, decoder_hidden_dim
        )
        self.v_fc = nn.Linear(decoder_hidden_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        # hidden = [batch size, decoder hidden dim]
        # encoder_outputs = [src length, batch size, encoder hidden dim * 2]
        batch_size = encoder_outputs.shape[1]
        src_length = encoder_outputs.shape[0]
        # repeat decoder hidden state src_length times
        hidden = hidden.unsqueeze(1).tile(1, src_length, 1)  # port: torch's repeat is tile (documented)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        # hidden = [batch size, src length, decoder hidden dim]
        # encoder_outputs = [batch size, src length, encoder hidden dim * 2]
        energy = torch.tanh(self.attn_fc(torch.cat((hidden, encoder_outputs), dim=2)))
        # energy = [batch size, src length, decoder hidden dim]
        attention = self.v_fc(energy).squeeze(2)
        # attention = [batch size, src length]
        return torch.softmax(attention, dim=1)
# %%
class Decoder(nn.Module):
    def __init__(
        self,
        output_dim,
        embedding_dim,
        encoder_hidden_dim,
        decoder_hidden_dim,
        dropout,
        attention,
    ):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, embedding_dim)
        self.rnn = nn.GRU((encoder_hidden_dim * 2) + embedding_dim, decoder_hidden_dim)
        self.fc_out = nn.Linear(
            (encoder_hidden_dim * 2) + decoder_hidden_dim + embedding_dim, output_dim
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        # input = [batch size]
        # hidden = [batch size, decoder hidden dim]
        # encoder_outputs = [src length, batch size, encoder hidden dim * 2]
        input = input.unsqueeze(0)
        # input = [1, batch size]
        embedded = self.dropout(self.embedding(input))
        # embedded = [1, batch size, embedding dim]
        a = self.attention(hidden, encoder_outputs)
        # a = [batch size, src length]
        a = a.unsqueeze(1)
        # a = [batch size, 1, src length]
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        # encoder_outputs = [batch size, src length, encoder hidden dim * 2]
        weighted = torch.bmm(a, encoder_outputs)
        # weighted = [batch size, 1, encoder hidden dim * 2]
        weighted = weighted.permute(1, 0, 2)
        # weighted = [1, batch size, encoder hidden dim * 2]
        rnn_input = torch.cat((embedded, weighted), dim=2)
        # rnn_input = [1, batch size, (encoder hidden dim * 2) + embedding dim]
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        # output = [seq length, batch size, decoder hid dim * n directions]
        # hidden = [n layers * n directions, batch size, decoder hid dim]
        # seq len, n layers and n directions will always be 1 in this decoder, therefore:
        # output = [1, batch size, decoder hidden dim]
        # hidden = [1, batch size, decoder hidden dim]
        # this also means that output == hidden
        assert (output == hidden).all()
        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        # prediction = [batch size, output dim]
        return prediction, hidden.squeeze(0), a.squeeze(1)
# %%
class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device

    def forward(self, src, trg, teacher_forcing_ratio):
        # src = [src length, batch size]
        # trg = [trg length, batch size]
        # teacher_forcing_ratio is probability to use teacher forcing
        # e.g. if teacher_forcing_ratio is 0.75 we use teacher forcing 75% of the time
        batch_size = src.shape[1]
        trg_length = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        # tensor to store decoder outputs
        outputs = torch.zeros(trg_length, batch_size, trg_vocab_size).to(self.device)
        # encoder_outputs is all hidden states of the input sequence, back and forwards
        # hidden is the final forward and backward hidden states, passed through a linear layer
        encoder_outputs, hidden = self.encoder(src)
        # outputs = [src length, batch size, encoder hidden dim * 2]
        # hidden = [batch size, decoder hidden dim]
        # first input to the decoder is the <sos> tokens
        input = trg[0, :]
        for t in range(1, trg_length):
            # insert input token embedding, previous hidden state and all encoder hidden states
            # receive output tensor (predictions) and new hidden state
            output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
            # output = [batch size, output dim]
            # hidden = [n layers, batch size, decoder hidden dim]
            # place predictions in a tensor holding predictions for each token
            outputs[t] = output
            # decide if we are going to use teacher forcing or not
            teacher_force = random.random() < teacher_forcing_ratio
            # get the highest predicted token from our predictions
            top1 = output.argmax(1)
            # if teacher forcing, use actual next token as next input
            # if not, use predicted token
            input = trg[t] if teacher_force else top1
            # input = [batch size]
        return outputs
# %%
input_dim = len(de_vocab)
output_dim = len(en_vocab)
encoder_embedding_dim = 16  # port: 256: a shared CPU
decoder_embedding_dim = 16  # port: 256
encoder_hidden_dim = 32  # port: 512
decoder_hidden_dim = 32  # port: 512
encoder_dropout = 0.5
decoder_dropout = 0.5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

attention = Attention(encoder_hidden_dim, decoder_hidden_dim)

encoder = Encoder(
    input_dim,
    encoder_embedding_dim,
    encoder_hidden_dim,
    decoder_hidden_dim,
    encoder_dropout,
)

decoder = Decoder(
    output_dim,
    decoder_embedding_dim,
    encoder_hidden_dim,
    decoder_hidden_dim,
    decoder_dropout,
    attention,
)

model = Seq2Seq(encoder, decoder, device).to(device)
# %%
def init_weights(m):
    for name, param in m.named_parameters():
        if "weight" in name:
            nn.init.normal_(param.data, mean=0, std=0.01)
        else:
            nn.init.constant_(param.data, 0)


model.apply(init_weights)
"""

# notebook 3's
SEQ2SEQ_3_TRANSLATE = r"""
def translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
    max_output_length=25,
):
    model.eval()
    with torch.no_grad():
        if isinstance(sentence, str):
            de_tokens = [token.text for token in de_nlp.tokenizer(sentence)]
        else:
            de_tokens = [token for token in sentence]
        if lower:
            de_tokens = [token.lower() for token in de_tokens]
        de_tokens = [sos_token] + de_tokens + [eos_token]
        ids = de_vocab.lookup_indices(de_tokens)
        tensor = torch.LongTensor(ids).unsqueeze(-1).to(device)
        encoder_outputs, hidden = model.encoder(tensor)
        inputs = en_vocab.lookup_indices([sos_token])
        attentions = torch.zeros(max_output_length, 1, len(ids))
        for i in range(max_output_length):
            inputs_tensor = torch.LongTensor([inputs[-1]]).to(device)
            output, hidden, attention = model.decoder(
                inputs_tensor, hidden, encoder_outputs
            )
            attentions[i] = attention
            predicted_token = output.argmax(-1).item()
            inputs.append(predicted_token)
            if predicted_token == en_vocab[eos_token]:
                break
        en_tokens = en_vocab.lookup_tokens(inputs)
    return en_tokens, de_tokens, attentions[: len(en_tokens) - 1]
# %%
def plot_attention(sentence, translation, attention):
    fig, ax = plt.subplots(figsize=(10, 10))
    attention = attention.squeeze(1).numpy()
    cax = ax.matshow(attention, cmap="bone")
    ax.set_xticks(ticks=np.arange(len(sentence)), labels=sentence, rotation=90, size=15)
    translation = translation[1:]
    ax.set_yticks(ticks=np.arange(len(translation)), labels=translation, size=15)
    plt.show()
    plt.close()
# %%
sentence = test_data[0]["de"]
expected_translation = test_data[0]["en"]

sentence, expected_translation
# %%
translation, sentence_tokens, attention = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
sentence_tokens
# %%
# plot_attention(sentence_tokens, translation, attention)  # port: the plot dropped (test time)
# %%
sentence = "Ein Mann sieht sich einen Film an."
# %%
translation, sentence_tokens, attention = translate_sentence(
    sentence,
    model,
    en_nlp,
    de_nlp,
    en_vocab,
    de_vocab,
    lower,
    sos_token,
    eos_token,
    device,
)
# %%
translation
# %%
# plot_attention(sentence_tokens, translation, attention)  # port: the plot dropped (test time)
# %%
translations = [
    translate_sentence(
        example["de"],
        model,
        en_nlp,
        de_nlp,
        en_vocab,
        de_vocab,
        lower,
        sos_token,
        eos_token,
        device,
    )[0]
    for example in tqdm.tqdm(test_data)
]
"""

# the sentiment notebooks' first cells (notebook 1's: 2 and 3 show fewer values)
SENTIMENT_START = r"""
import collections

import datasets
# import matplotlib.pyplot as plt  # port: the plots are dropped (test time)
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torchtext
import tqdm
# %%
seed = 1234

np.random.seed(seed)
torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cudnn.deterministic = True
# %%
train_data, test_data = datasets.load_dataset("imdb", split=["train", "test"])
# %%
train_data, test_data
# %%
train_data.features
# %%
train_data[0]
# %%
tokenizer = torchtext.data.utils.get_tokenizer("basic_english")
# %%
tokenizer("Hello world! How are you doing today? I'm doing fantastic!")
"""

# notebook 1's (and 3's) tokenize_example
NBOW_TOKENIZE = r"""
def tokenize_example(example, tokenizer, max_length):
    tokens = tokenizer(example["text"])[:max_length]
    return {"tokens": tokens}
"""

# notebook 2's: the lengths too
LSTM_TOKENIZE = r"""
def tokenize_example(example, tokenizer, max_length):
    tokens = tokenizer(example["text"])[:max_length]
    length = len(tokens)
    return {"tokens": tokens, "length": length}
"""

# the split, the vocabulary and the ids (notebook 1's cells)
SENTIMENT_VOCAB = r"""
max_length = 256

train_data = train_data.map(
    tokenize_example, fn_kwargs={"tokenizer": tokenizer, "max_length": max_length}
)
test_data = test_data.map(
    tokenize_example, fn_kwargs={"tokenizer": tokenizer, "max_length": max_length}
)
# %%
train_data
# %%
train_data.features
# %%
train_data[0]["tokens"][:25]
# %%
test_size = 0.25

train_valid_data = train_data.train_test_split(test_size=test_size)
train_data = train_valid_data["train"]
valid_data = train_valid_data["test"]
# %%
len(train_data), len(valid_data), len(test_data)
# %%
min_freq = 5
special_tokens = ["<unk>", "<pad>"]

vocab = torchtext.vocab.build_vocab_from_iterator(
    train_data["tokens"],
    min_freq=min_freq,
    specials=special_tokens,
)
# %%
len(vocab)
# %%
vocab.get_itos()[:10]
# %%
vocab["and"]
# %%
unk_index = vocab["<unk>"]
pad_index = vocab["<pad>"]
# %%
"some_token" in vocab
# %%
vocab.set_default_index(unk_index)
# %%
vocab["some_token"]
# %%
vocab.lookup_indices(["hello", "world", "some_token", "<pad>"])
# %%
def numericalize_example(example, vocab):
    ids = vocab.lookup_indices(example["tokens"])
    return {"ids": ids}
# %%
train_data = train_data.map(numericalize_example, fn_kwargs={"vocab": vocab})
valid_data = valid_data.map(numericalize_example, fn_kwargs={"vocab": vocab})
test_data = test_data.map(numericalize_example, fn_kwargs={"vocab": vocab})
# %%
train_data[0]["tokens"][:10]
# %%
vocab.lookup_indices(train_data[0]["tokens"][:10])
# %%
train_data[0]["ids"][:10]
"""

# notebook 1's format (3's: its first cell)
NBOW_FORMAT = r"""
train_data = train_data.with_format(type="torch", columns=["ids", "label"])
valid_data = valid_data.with_format(type="torch", columns=["ids", "label"])
test_data = test_data.with_format(type="torch", columns=["ids", "label"])
# %%
train_data[0]["label"]
# %%
train_data[0]["ids"][:10]
# %%
train_data[0].keys()
# %%
vocab.lookup_tokens(train_data[0]["ids"][:10].tolist())
"""

# notebook 2's
LSTM_FORMAT = r"""
train_data = train_data.with_format(type="torch", columns=["ids", "label", "length"])
valid_data = valid_data.with_format(type="torch", columns=["ids", "label", "length"])
test_data = test_data.with_format(type="torch", columns=["ids", "label", "length"])
# %%
train_data[0]
"""

# notebooks 1 and 3's collate_fn
COLLATE = r"""
def get_collate_fn(pad_index):
    def collate_fn(batch):
        batch_ids = [i["ids"] for i in batch]
        batch_ids = nn.utils.rnn.pad_sequence(
            batch_ids, padding_value=pad_index, batch_first=True
        )
        batch_label = [i["label"] for i in batch]
        batch_label = torch.stack(batch_label)
        batch = {"ids": batch_ids, "label": batch_label}
        return batch

    return collate_fn
"""

# notebook 2's: the lengths too
LSTM_COLLATE = r"""
def get_collate_fn(pad_index):
    def collate_fn(batch):
        batch_ids = [i["ids"] for i in batch]
        batch_ids = nn.utils.rnn.pad_sequence(
            batch_ids, padding_value=pad_index, batch_first=True
        )
        batch_length = [i["length"] for i in batch]
        batch_length = torch.stack(batch_length)
        batch_label = [i["label"] for i in batch]
        batch_label = torch.stack(batch_label)
        batch = {"ids": batch_ids, "length": batch_length, "label": batch_label}
        return batch

    return collate_fn
"""

# the data loaders
LOADERS = r"""
def get_data_loader(dataset, batch_size, pad_index, shuffle=False):
    collate_fn = get_collate_fn(pad_index)
    data_loader = torch.utils.data.DataLoader(
        dataset=dataset,
        batch_size=batch_size,
        collate_fn=collate_fn,
        shuffle=shuffle,
    )
    return data_loader
# %%
batch_size = 32  # port: 512: the made-up reviews are 96

train_data_loader = get_data_loader(train_data, batch_size, pad_index, shuffle=True)
valid_data_loader = get_data_loader(valid_data, batch_size, pad_index)
test_data_loader = get_data_loader(test_data, batch_size, pad_index)
"""

# notebook 1's model
NBOW_MODEL = r"""
class NBoW(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.fc = nn.Linear(embedding_dim, output_dim)

    def forward(self, ids):
        # ids = [batch size, seq len]
        embedded = self.embedding(ids)
        # embedded = [batch size, seq len, embedding dim]
        pooled = embedded.mean(dim=1)
        # pooled = [batch size, embedding dim]
        prediction = self.fc(pooled)
        # prediction = [batch size, output dim]
        return prediction
# %%
vocab_size = len(vocab)
embedding_dim = 16  # port: 300 (and the made-up vectors' size)
output_dim = len(train_data.unique("label"))

model = NBoW(vocab_size, embedding_dim, output_dim, pad_index)
"""

# notebook 2's model
LSTM_MODEL = r"""
class LSTM(nn.Module):
    def __init__(
        self,
        vocab_size,
        embedding_dim,
        hidden_dim,
        output_dim,
        n_layers,
        bidirectional,
        dropout_rate,
        pad_index,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.lstm = nn.LSTM(
            embedding_dim,
            hidden_dim,
            n_layers,
            bidirectional=bidirectional,
            dropout=dropout_rate,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, ids, length):
        # ids = [batch size, seq len]
        # length = [batch size]
        embedded = self.dropout(self.embedding(ids))
        # embedded = [batch size, seq len, embedding dim]
        packed_embedded = nn.utils.rnn.pack_padded_sequence(
            embedded, length, batch_first=True, enforce_sorted=False
        )
        packed_output, (hidden, cell) = self.lstm(packed_embedded)
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        output, output_length = nn.utils.rnn.pad_packed_sequence(packed_output)
        # output = [batch size, seq len, hidden dim * n directions]
        if self.lstm.bidirectional:
            hidden = self.dropout(torch.cat([hidden[-1], hidden[-2]], dim=-1))
            # hidden = [batch size, hidden dim * 2]
        else:
            hidden = self.dropout(hidden[-1])
            # hidden = [batch size, hidden dim]
        prediction = self.fc(hidden)
        # prediction = [batch size, output dim]
        return prediction
# %%
vocab_size = len(vocab)
embedding_dim = 16  # port: 300 (and the made-up vectors' size)
hidden_dim = 16  # port: 300
output_dim = len(train_data.unique("label"))
n_layers = 2
bidirectional = True
dropout_rate = 0.5

model = LSTM(
    vocab_size,
    embedding_dim,
    hidden_dim,
    output_dim,
    n_layers,
    bidirectional,
    dropout_rate,
    pad_index,
)
"""

# notebook 3's model
CNN_MODEL = r"""
class CNN(nn.Module):
    def __init__(
        self,
        vocab_size,
        embedding_dim,
        n_filters,
        filter_sizes,
        output_dim,
        dropout_rate,
        pad_index,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.convs = nn.ModuleList(
            [
                nn.Conv1d(embedding_dim, n_filters, filter_size)
                for filter_size in filter_sizes
            ]
        )
        self.fc = nn.Linear(len(filter_sizes) * n_filters, output_dim)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, ids):
        # ids = [batch size, seq len]
        embedded = self.dropout(self.embedding(ids))
        # embedded = [batch size, seq len, embedding dim]
        embedded = embedded.permute(0, 2, 1)
        # embedded = [batch size, embedding dim, seq len]
        conved = [torch.relu(conv(embedded)) for conv in self.convs]
        # conved_n = [batch size, n filters, seq len - filter_sizes[n] + 1]
        pooled = [conv.max(dim=-1).values for conv in conved]
        # pooled_n = [batch size, n filters]
        cat = self.dropout(torch.cat(pooled, dim=-1))
        # cat = [batch size, n filters * len(filter_sizes)]
        prediction = self.fc(cat)
        # prediction = [batch size, output dim]
        return prediction
# %%
vocab_size = len(vocab)
embedding_dim = 16  # port: 300 (and the made-up vectors' size)
n_filters = 8  # port: 100
filter_sizes = [3, 5, 7]
output_dim = len(train_data.unique("label"))
dropout_rate = 0.25

model = CNN(
    vocab_size,
    embedding_dim,
    n_filters,
    filter_sizes,
    output_dim,
    dropout_rate,
    pad_index,
)
"""

# count_parameters
COUNT = r"""
def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


print(f"The model has {count_parameters(model):,} trainable parameters")
"""

# notebook 2's initialisation
LSTM_INIT = r"""
def initialize_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_normal_(m.weights if hasattr(m, 'weights') else m.weight)  # port: tricycle's Linear holds weights (in, out) (documented)
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LSTM):
        for name, param in m.named_parameters():
            if "bias" in name:
                nn.init.zeros_(param)
            elif "weight" in name:
                nn.init.orthogonal_(param)
# %%
model.apply(initialize_weights)
"""

# notebook 3's initialisation
CNN_INIT = r"""
def initialize_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_normal_(m.weights if hasattr(m, 'weights') else m.weight)  # port: tricycle's Linear holds weights (in, out) (documented)
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Conv1d):
        nn.init.kaiming_normal_(m.weights if hasattr(m, "weights") else m.weight, nonlinearity="relu")  # port: tricycle's layers hold weights (documented)
        nn.init.zeros_(m.bias)
# %%
model.apply(initialize_weights)
"""

# the pretrained vectors (notebook 1's cells: 2 and 3 show fewer values)
GLOVE = r"""
vectors = torchtext.vocab.GloVe()
# %%
hello_vector = vectors.get_vecs_by_tokens("hello")
# %%
hello_vector.shape
# %%
hello_vector[:32]
# %%
pretrained_embedding = vectors.get_vecs_by_tokens(vocab.get_itos())
# %%
pretrained_embedding.shape
# %%
model.embedding.weights if hasattr(model.embedding, 'weights') else model.embedding.weight  # port: tricycle's layers hold weights (documented)
# %%
pretrained_embedding
# %%
(model.embedding.weights if hasattr(model.embedding, 'weights') else model.embedding.weight).data = pretrained_embedding  # port: tricycle's layers hold weights (documented)
# %%
model.embedding.weights if hasattr(model.embedding, 'weights') else model.embedding.weight  # port: tricycle's layers hold weights (documented)
"""

# notebooks 1 and 3's optimiser
OPTIMIZER = r"""
optimizer = optim.Adam(model.parameters())
"""

# notebook 2's
LSTM_OPTIMIZER = r"""
lr = 5e-4

optimizer = optim.Adam(model.parameters(), lr=lr)
"""

# the loss and the device
CRITERION = r"""
criterion = nn.CrossEntropyLoss()
# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

device
# %%
model = model.to(device)
criterion = criterion.to(device)
"""

# notebooks 1 and 3's train and evaluate
TRAIN = r"""
def train(data_loader, model, criterion, optimizer, device):
    model.train()
    epoch_losses = []
    epoch_accs = []
    for batch in tqdm.tqdm(data_loader, desc="training..."):
        ids = batch["ids"].to(device)
        label = batch["label"].to(device)
        prediction = model(ids)
        loss = criterion(prediction, label)
        accuracy = get_accuracy(prediction, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_losses.append(loss.item())
        epoch_accs.append(accuracy.item())
    return np.mean(epoch_losses), np.mean(epoch_accs)
# %%
def evaluate(data_loader, model, criterion, device):
    model.eval()
    epoch_losses = []
    epoch_accs = []
    with torch.no_grad():
        for batch in tqdm.tqdm(data_loader, desc="evaluating..."):
            ids = batch["ids"].to(device)
            label = batch["label"].to(device)
            prediction = model(ids)
            loss = criterion(prediction, label)
            accuracy = get_accuracy(prediction, label)
            epoch_losses.append(loss.item())
            epoch_accs.append(accuracy.item())
    return np.mean(epoch_losses), np.mean(epoch_accs)
"""

# notebook 2's: with the lengths
LSTM_TRAIN = r"""
def train(dataloader, model, criterion, optimizer, device):
    model.train()
    epoch_losses = []
    epoch_accs = []
    for batch in tqdm.tqdm(dataloader, desc="training..."):
        ids = batch["ids"].to(device)
        length = batch["length"]
        label = batch["label"].to(device)
        prediction = model(ids, length)
        loss = criterion(prediction, label)
        accuracy = get_accuracy(prediction, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_losses.append(loss.item())
        epoch_accs.append(accuracy.item())
    return np.mean(epoch_losses), np.mean(epoch_accs)
# %%
def evaluate(dataloader, model, criterion, device):
    model.eval()
    epoch_losses = []
    epoch_accs = []
    with torch.no_grad():
        for batch in tqdm.tqdm(dataloader, desc="evaluating..."):
            ids = batch["ids"].to(device)
            length = batch["length"]
            label = batch["label"].to(device)
            prediction = model(ids, length)
            loss = criterion(prediction, label)
            accuracy = get_accuracy(prediction, label)
            epoch_losses.append(loss.item())
            epoch_accs.append(accuracy.item())
    return np.mean(epoch_losses), np.mean(epoch_accs)
"""

# the accuracy and the training loop (the file's name is each notebook's)
LOOP = r"""
def get_accuracy(prediction, label):
    batch_size, _ = prediction.shape
    predicted_classes = prediction.argmax(dim=-1)
    correct_predictions = predicted_classes.eq(label).sum()
    accuracy = correct_predictions / batch_size
    return accuracy
# %%
n_epochs = 5  # port: 10
best_valid_loss = float("inf")

metrics = collections.defaultdict(list)

for epoch in range(n_epochs):
    train_loss, train_acc = train(
        train_data_loader, model, criterion, optimizer, device
    )
    valid_loss, valid_acc = evaluate(valid_data_loader, model, criterion, device)
    metrics["train_losses"].append(train_loss)
    metrics["train_accs"].append(train_acc)
    metrics["valid_losses"].append(valid_loss)
    metrics["valid_accs"].append(valid_acc)
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), "nbow.pt")
    print(f"epoch: {epoch}")
    print(f"train_loss: {train_loss:.3f}, train_acc: {train_acc:.3f}")
    print(f"valid_loss: {valid_loss:.3f}, valid_acc: {valid_acc:.3f}")
"""

# the plots
PLOTS = r"""
# port: the curves of the losses and the accuracies (two figures) are dropped (test time)
"""

# the test
TEST = r"""
model.load_state_dict(torch.load("nbow.pt"))

test_loss, test_acc = evaluate(test_data_loader, model, criterion, device)
# %%
print(f"test_loss: {test_loss:.3f}, test_acc: {test_acc:.3f}")
"""

# notebook 1's predict_sentiment and its uses
NBOW_PREDICT = r"""
def predict_sentiment(text, model, tokenizer, vocab, device):
    tokens = tokenizer(text)
    ids = vocab.lookup_indices(tokens)
    tensor = torch.LongTensor(ids).unsqueeze(dim=0).to(device)
    prediction = model(tensor).squeeze(dim=0)
    probability = torch.softmax(prediction, dim=-1)
    predicted_class = prediction.argmax(dim=-1).item()
    predicted_probability = probability[predicted_class].item()
    return predicted_class, predicted_probability
# %%
text = "This film is terrible!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is great!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is not terrible, it's great!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is not great, it's terrible!"

predict_sentiment(text, model, tokenizer, vocab, device)

"""

# notebook 2's
LSTM_PREDICT = r"""
def predict_sentiment(text, model, tokenizer, vocab, device):
    tokens = tokenizer(text)
    ids = vocab.lookup_indices(tokens)
    length = torch.LongTensor([len(ids)])
    tensor = torch.LongTensor(ids).unsqueeze(dim=0).to(device)
    prediction = model(tensor, length).squeeze(dim=0)
    probability = torch.softmax(prediction, dim=-1)
    predicted_class = prediction.argmax(dim=-1).item()
    predicted_probability = probability[predicted_class].item()
    return predicted_class, predicted_probability
# %%
text = "This film is terrible!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is great!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is not terrible, it's great!"

predict_sentiment(text, model, tokenizer, vocab, device)
# %%
text = "This film is not great, it's terrible!"

predict_sentiment(text, model, tokenizer, vocab, device)

"""

# notebook 3's
CNN_PREDICT = r"""
def predict_sentiment(text, model, tokenizer, vocab, device, min_length, pad_index):
    tokens = tokenizer(text)
    ids = vocab.lookup_indices(tokens)
    if len(ids) < min_length:
        ids += [pad_index] * (min_length - len(ids))
    tensor = torch.LongTensor(ids).unsqueeze(dim=0).to(device)
    prediction = model(tensor).squeeze(dim=0)
    probability = torch.softmax(prediction, dim=-1)
    predicted_class = prediction.argmax(dim=-1).item()
    predicted_probability = probability[predicted_class].item()
    return predicted_class, predicted_probability
# %%
text = "This film is terrible!"
min_length = max(filter_sizes)

predict_sentiment(text, model, tokenizer, vocab, device, min_length, pad_index)
# %%
text = "This film is great!"

predict_sentiment(text, model, tokenizer, vocab, device, min_length, pad_index)
# %%
text = "This film is not terrible, it's great!"

predict_sentiment(text, model, tokenizer, vocab, device, min_length, pad_index)
# %%
text = "This film is not great, it's terrible!"

predict_sentiment(text, model, tokenizer, vocab, device, min_length, pad_index)

"""

# the stand-ins


class Dataset:
    """``datasets.Dataset``: rows of a table (dicts); with a format (``with_format``), a row's
    columns of that format's library as its tensors."""

    def __init__(self, rows: list[dict], form=None) -> None:
        self.rows, self.form = rows, form

    def map(self, function, fn_kwargs=None):
        return Dataset([{**row, **function(row, **(fn_kwargs or {}))} for row in self.rows])

    def with_format(self, type=None, columns=None, output_all_columns=False):  # noqa: A002
        return Dataset(self.rows, (sys.modules[type], columns, output_all_columns))

    def train_test_split(self, test_size):
        # as datasets' when no seed is given: a permutation drawn from numpy's global state
        order, n_test = np.random.permutation(len(self.rows)), math.ceil(test_size * len(self.rows))
        parts = {"test": order[:n_test], "train": order[n_test:]}
        return {key: Dataset([self.rows[i] for i in part]) for key, part in parts.items()}

    def unique(self, column):
        return list(dict.fromkeys(row[column] for row in self.rows))

    @property
    def features(self):
        return {key: type(value).__name__ for key, value in self.rows[0].items()}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, key):
        if isinstance(key, str):
            return [row[key] for row in self.rows]
        row = self.rows[key]
        if self.form is None:
            return dict(row)
        lib, columns, everything = self.form
        tensors = {column: lib.tensor(row[column]) for column in columns}
        return {**row, **tensors} if everything else tensors

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"Dataset({{\n    features: {list(self.rows[0])},\n    num_rows: {len(self)}\n}})"


SUBJECTS = [("ein mann", "a man"), ("eine frau", "a woman"), ("ein hund", "a dog"), ("ein kind", "a child"), ("ein junge", "a boy"), ("ein mädchen", "a girl")]  # fmt: skip
VERBS = [("sitzt", "sits"), ("steht", "stands"), ("läuft", "runs"), ("schläft", "sleeps")]
PLACES = [("auf einer bank", "on a bench"), ("im park", "in the park"), ("vor einem haus", "in front of a house"), ("am strand", "on the beach")]  # fmt: skip


def sentences(n: int, seed: int) -> list[dict]:
    """``n`` German sentences and their English, as Multi30k's rows: a subject, a verb and a
    place, capitalised, with a full stop."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        (s_de, s_en), (v_de, v_en), (p_de, p_en) = (w[rng.integers(len(w))] for w in (SUBJECTS, VERBS, PLACES))  # fmt: skip
        rows.append({"en": f"{s_en} {v_en} {p_en}.".capitalize(), "de": f"{s_de} {v_de} {p_de}.".capitalize()})  # fmt: skip
    return rows


def load_dataset(path, split=None):
    """The corpus in Multi30k's place (train, validation, test), the reviews in IMDb's."""
    if path == "bentrevett/multi30k":
        sizes = {"train": 64, "validation": 8, "test": 4}
        return {key: Dataset(sentences(n, seed)) for seed, (key, n) in enumerate(sizes.items())}
    assert path == "imdb"
    made = {"train": reviews(128, 6), "test": reviews(32, 7)}
    return [Dataset([{"text": t, "label": int(mood == "pos")} for mood, t in made[s]]) for s in split]  # fmt: skip


class Token:
    def __init__(self, text):
        self.text = text


def spacy_load(name):
    """spacy's language: its ``tokenizer`` splits words and punctuation."""
    return module(name, tokenizer=lambda text: [Token(t) for t in re.findall(r"\w+|[^\w\s]", text)])  # fmt: skip


class Vocab:
    """torchtext's ``Vocab``: tokens to indices; an unknown token is an error until a default
    index is set."""

    def __init__(self, itos: list[str]) -> None:
        self.itos, self.stoi, self.default = itos, {t: i for i, t in enumerate(itos)}, None

    def get_itos(self):
        return self.itos

    def get_stoi(self):
        return self.stoi

    def set_default_index(self, index):
        self.default = index

    def __getitem__(self, token):
        if token not in self.stoi and self.default is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self.stoi.get(token, self.default)

    def __contains__(self, token):
        return token in self.stoi

    def __len__(self):
        return len(self.itos)

    def lookup_indices(self, tokens):
        return [self[t] for t in tokens]

    def lookup_tokens(self, indices):
        return [self.itos[i] for i in indices]


def build_vocab_from_iterator(iterator, min_freq=1, specials=None):
    """The specials, then the tokens seen ``min_freq`` times or more by falling count (ties by
    the token), as torchtext's."""
    counts = Counter(token for tokens in iterator for token in tokens)
    ordered = sorted((t for t, n in counts.items() if n >= min_freq and t not in (specials or [])), key=lambda t: (-counts[t], t))  # fmt: skip
    return Vocab([*(specials or []), *ordered])


EMBEDDING_DIM = 16  # the ports' embedding_dim


def glove(lib) -> type:
    """torchtext's ``GloVe``, made up: each token's vector drawn from its own seed (a token
    ending in "_token" unknown: zeros), as ``lib``'s tensors."""

    class GloVe:
        def __init__(self, name="840B", dim=EMBEDDING_DIM):
            self.dim = dim

        def vector(self, token):
            if token.endswith("_token"):
                return np.zeros(self.dim, np.float32)
            return np.random.default_rng(zlib.crc32(token.encode())).normal(size=self.dim).astype(np.float32)  # fmt: skip

        def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
            if isinstance(tokens, str):
                return lib.tensor(self.vector(tokens))
            return lib.tensor(np.stack([self.vector(t) for t in tokens]))

    return GloVe


def grams(words: list[str], max_order: int) -> Counter:
    return Counter(tuple(words[i : i + n]) for n in range(1, max_order + 1) for i in range(len(words) - n + 1))  # fmt: skip


class Bleu:
    """evaluate's ``bleu``: the n-gram precisions' geometric mean times the brevity penalty."""

    def compute(self, predictions, references, tokenizer=str.split, max_order=4, smooth=False):
        matches, possible, length, reference_length = [0] * max_order, [0] * max_order, 0, 0
        for prediction, refs in zip(predictions, references, strict=True):
            words, refs = tokenizer(prediction), [tokenizer(r) for r in refs]
            length, reference_length = length + len(words), reference_length + min(map(len, refs))  # fmt: skip
            merged = Counter()
            for ref in refs:
                merged |= grams(ref, max_order)
            for gram, count in (grams(words, max_order) & merged).items():
                matches[len(gram) - 1] += count
            for n in range(max_order):
                possible[n] += max(len(words) - n, 0)
        precisions = [((m + 1) / (p + 1)) if smooth else (m / p if p else 0.0) for m, p in zip(matches, possible, strict=True)]  # fmt: skip
        mean = math.exp(sum(map(math.log, precisions)) / max_order) if min(precisions) > 0 else 0.0  # fmt: skip
        ratio = length / reference_length
        penalty = 1.0 if ratio > 1.0 else (math.exp(1 - 1 / ratio) if ratio else 0.0)
        return {"bleu": mean * penalty, "precisions": precisions, "brevity_penalty": penalty, "length_ratio": ratio, "translation_length": length, "reference_length": reference_length}  # fmt: skip


def stand_ins(lib, monkeypatch) -> None:
    """``datasets``, ``spacy``, ``tqdm``, ``evaluate`` and ``<lib>text``, in ``sys.modules``."""
    module("datasets", monkeypatch, load_dataset=load_dataset)
    module("spacy", monkeypatch, load=spacy_load)
    module("tqdm", monkeypatch, tqdm=lambda iterable, desc=None: iterable)
    module("evaluate", monkeypatch, load=lambda name: Bleu())
    base = module("base", build_vocab_from_iterator=build_vocab_from_iterator, GloVe=glove(lib), get_tokenizer=get_tokenizer)  # fmt: skip
    parts = {"vocab": ["build_vocab_from_iterator", "GloVe"], "data": [], "data.utils": ["get_tokenizer"]}  # fmt: skip
    package(lib.__name__ + "text", monkeypatch, base, parts)


def run(text: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """The notebook in ``lib``'s words, run in ``folder`` with the stand-ins: what it printed
    (each cell's last value too) and its globals."""
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    stand_ins(lib, monkeypatch)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_cells(text.replace("torch", lib.__name__), space)
    return out.getvalue(), space


def both(text: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, on the CPU on one thread."""
    with torch_and_tricycle(monkeypatch) as (torch, tricycle):
        return run(text, torch, tmp_path / "torch", monkeypatch), run(text, tricycle, tmp_path / "tricycle", monkeypatch)  # fmt: skip


def notebook(*blocks: str) -> str:
    return "\n# %%\n".join(block.strip("\n") for block in blocks)


SEQ2SEQ = {
    n: notebook(
        SEQ2SEQ_DATA, model, SEQ2SEQ_TRAIN.replace("tut1", f"tut{n}"), translate, SEQ2SEQ_BLEU
    )
    for n, model, translate in [
        (1, SEQ2SEQ_1_MODEL, SEQ2SEQ_1_TRANSLATE),
        (2, SEQ2SEQ_2_MODEL, SEQ2SEQ_2_TRANSLATE),
        (3, SEQ2SEQ_3_MODEL, SEQ2SEQ_3_TRANSLATE),
    ]
}
SENTIMENT = {
    "nbow": notebook(
        SENTIMENT_START,
        NBOW_TOKENIZE,
        SENTIMENT_VOCAB,
        NBOW_FORMAT,
        COLLATE,
        LOADERS,
        NBOW_MODEL,
        COUNT,
        GLOVE,
        OPTIMIZER,
        CRITERION,
        TRAIN,
        LOOP,
        PLOTS,
        TEST,
        NBOW_PREDICT,
    ),
    "lstm": notebook(
        SENTIMENT_START,
        LSTM_TOKENIZE,
        SENTIMENT_VOCAB,
        LSTM_FORMAT,
        LSTM_COLLATE,
        LOADERS,
        LSTM_MODEL,
        COUNT,
        LSTM_INIT,
        GLOVE,
        LSTM_OPTIMIZER,
        CRITERION,
        LSTM_TRAIN,
        LOOP,
        PLOTS,
        TEST,
        LSTM_PREDICT,
    ).replace("nbow.pt", "lstm.pt"),
    "cnn": notebook(
        SENTIMENT_START,
        NBOW_TOKENIZE,
        SENTIMENT_VOCAB,
        NBOW_FORMAT,
        COLLATE,
        LOADERS,
        CNN_MODEL,
        COUNT,
        CNN_INIT,
        GLOVE,
        OPTIMIZER,
        CRITERION,
        TRAIN,
        LOOP,
        PLOTS,
        TEST,
        CNN_PREDICT,
    ).replace("nbow.pt", "cnn.pt"),
}


def normal(printed: str) -> list[str]:
    """``kinds`` of what was printed, the models' reprs as their layers' names (tricycle's
    reprs differ: its Linear is its Dense, its lines count the parameters) and each run of
    quoted words as one (the untrained models' translations differ) without torch's
    "Parameter containing:" line."""
    printed = MODEL.sub(
        lambda m: str(layers(m[0])) + "\n", printed.replace("Parameter containing:\n", "")
    )
    return kinds(re.sub(r"'[^']*'", "'w'", re.sub(r"\[('[^']*'(, '[^']*')*)?\]", "['w']", printed)))


PARAMETERS = r"The model has [\d,]+ trainable parameters"


def first_batch(space: dict) -> dict:
    return next(iter(space["test_data_loader"]))


def same_step(their: dict, our: dict, clip: bool) -> None:
    """After ``same_numbers``'s backward: the notebooks' step (the gradients clipped to norm
    ``clip`` where they clip, an Adam step) gives torch's gradient norm and parameters."""
    for s in their, our:
        if clip:
            s["norm"] = float(s["nn"].utils.clip_grad_norm_(s["model"].parameters(), s["clip"]))
        s["optim"].Adam(s["model"].parameters()).step()
    if clip:
        assert our["norm"] == pytest.approx(their["norm"], rel=1e-4)
    same_state(our["model"], their["model"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("number", [1, 2, 3])
def test_seq2seq(number, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SEQ2SEQ[number], tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert re.findall(PARAMETERS, ours) == re.findall(PARAMETERS, theirs)
    for printed, s in (theirs, their), (ours, our):
        losses = [float(x) for x in re.findall(r"Train Loss: +([\d.]+)", printed)]
        assert len(losses) == 2 and losses[-1] < losses[0], losses  # it learns
        assert len(s["translations"]) == 4 and all(t[0] == "<sos>" for t in s["translations"])
        assert 0 <= s["results"]["bleu"] <= 1
    # given torch's weights, teacher forcing throughout (no draw decides) and no dropout: the
    # outputs of a batch, its loss and the gradients are torch's

    def step(lib, model):
        s = their if lib.__name__ == "torch" else our
        batch = first_batch(s)
        model.eval()
        output = model(batch["de_ids"], batch["en_ids"], 1.0)
        loss = s["criterion"](output[1:].view(-1, output.shape[-1]), batch["en_ids"][1:].view(-1))
        return loss, output

    same_numbers(their["model"], our["model"], step)
    same_step(their, our, clip=True)
    # and the greedy translation of a sentence (notebook 3: its attention weights too)
    names = ("model", "en_nlp", "de_nlp", "en_vocab", "de_vocab", "lower", "sos_token", "eos_token", "device")  # fmt: skip
    found = [s["translate_sentence"]("Ein Hund läuft im Park.", *(s[n] for n in names)) for s in (their, our)]  # fmt: skip
    if number == 3:
        np.testing.assert_allclose(found[1][2].numpy(), found[0][2].numpy(), rtol=1e-4, atol=1e-6)
        found = [tokens for tokens, _, _ in found]
    assert found[1] == found[0]


@pytest.mark.parametrize("name", ["nbow", "lstm", "cnn"])
def test_sentiment(name, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SENTIMENT[name], tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert re.findall(PARAMETERS, ours) == re.findall(PARAMETERS, theirs)
    for printed in theirs, ours:
        losses = [float(x) for x in re.findall(r"train_loss: ([\d.]+)", printed)]
        assert len(losses) == 5 and losses[-1] < losses[0], losses  # it learns
        assert len(re.findall(r"^\((0|1), 0\.\d+\)$", printed, flags=re.MULTILINE)) == 4

    def step(lib, model):
        batch = first_batch(their if lib.__name__ == "torch" else our)
        model.eval()
        inputs = (batch["ids"], batch["length"]) if name == "lstm" else (batch["ids"],)
        prediction = model(*inputs)
        return lib.nn.CrossEntropyLoss()(prediction, batch["label"]), prediction

    same_numbers(their["model"], our["model"], step)
    same_step(their, our, clip=False)
    # and the sentiment of a new sentence: torch's class and probability
    extra = ("min_length", "pad_index") if name == "cnn" else ()
    names = ("model", "tokenizer", "vocab", "device", *extra)
    found = [s["predict_sentiment"]("This film is great!", *(s[n] for n in names)) for s in (their, our)]  # fmt: skip
    assert found[1][0] == found[0][0] and found[1][1] == pytest.approx(found[0][1], rel=1e-5)
