"""Karpathy's "Neural Networks: Zero to Hero" makemore notebooks (lectures/makemore/
makemore_part1..5), run on tricycle with ``torch`` replaced by ``tricycle`` in their text: the
course a learner has open beside tricycle (docs/pytorch.md's promise; the method of
tests/test_karpathy_lectures.py).

- part 1, bigrams: the count table ``N[ix1, ix2] += 1``, ``torch.multinomial`` with a
  ``torch.Generator().manual_seed(2147483647)``, ``P /= P.sum(1, keepdims=True)``, the
  likelihood of the words, then the one-layer net on ``F.one_hot(xs, num_classes=27).float()``
  trained by hand (``W.grad = None``, ``W.data += -50 * W.grad``) and sampled;
- part 2, the MLP: the embedding lookup ``C[X]``, ``emb.view(-1, 30)``, ``torch.tanh``,
  ``F.cross_entropy``, minibatches from ``torch.randint(0, X.shape[0], (32,))``, the step
  learning rate and the samples;
- part 3, activations and batch norm: Kaiming's gain by hand, ``bnmeani``/``bnstdi`` with the
  running statistics under ``torch.no_grad()``, then the hand-written ``Linear``,
  ``BatchNorm1d`` and ``Tanh`` with their ``parameters()`` lists, ``retain_grad()`` of every
  layer's output, the statistics of activations and gradients (``torch.histogram``) and the
  update-to-data ratios ``((lr*p.grad).std() / p.data.std()).log10().item()``;
- part 4, backprop ninja: the manual backward of every line of the forward pass, checked by
  ``cmp`` (``torch.all(dt == t.grad)`` and ``torch.allclose``), the fused cross-entropy and
  batch-norm backwards, then the net trained under ``torch.no_grad()`` on the manual gradients;
- part 5, the WaveNet: hand-written ``Embedding``, ``FlattenConsecutive``, ``Sequential`` and a
  ``BatchNorm1d`` over 3-d inputs (``dim=(0,1)``).

Each notebook's code cells are its text, in order; a line that differs ends in ``# port:``
and says why: steps shrunk to run in seconds, plots dropped (matplotlib), part 2's first cell
on the 5 words it was run on, ``x.max(dim=1)`` where the notebook has ``x.max(1)`` (whose
positional dim keeps numpy's meaning, documented in docs/pytorch.md). Part 4's
``dlogits[range(n), Yb] -= 1`` writes into softmax's output as written (``tricycle.rebase``). The data is makemore's ``names.txt`` (its first 2000 names, from the
local mirror of the repository; names made up here where it is absent), written beside the
script. The test runs each notebook under torch (skipped without it), then under tricycle, and
checks that both print the same lines (numbers, sampled names and tensor reprs aside), learn
(the losses fall), and that the course's own comparisons hold (part 4's ``cmp``: approximate
everywhere, exact wherever torch's is). Then it gives tricycle torch's trained values and
checks the same numbers: the losses, logits, gradients (of parameters and of the retained
activations) and running statistics, and part 4's manual gradients line by line. The fix the
course needed is tested against torch at the end: an integer tensor meeting a float tensor in
arithmetic gives the float's dtype (``F.one_hot(...) * dlogit_maxes`` stays float32), as
torch's.
"""

# ruff: noqa: E501, W291, W293, E741

import contextlib
import inspect
import io
import re
import subprocess

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import lines, numbers

# torch's warning at part 3's print of t.mean()
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad:UserWarning")


PART1 = r"""
words = open('names.txt', 'r').read().splitlines()
words[:10]
len(words)
min(len(w) for w in words)
max(len(w) for w in words)
b = {}
for w in words:
  chs = ['<S>'] + list(w) + ['<E>']
  for ch1, ch2 in zip(chs, chs[1:]):
    bigram = (ch1, ch2)
    b[bigram] = b.get(bigram, 0) + 1
sorted(b.items(), key = lambda kv: -kv[1])
import torch
N = torch.zeros((27, 27), dtype=torch.int32)
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}

for w in words:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    N[ix1, ix2] += 1

# import matplotlib.pyplot as plt  # port: plotting dropped (the cell's figure of the counts N)
N[0]
p = N[0].float()
p = p / p.sum()
p
g = torch.Generator().manual_seed(2147483647)
ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
itos[ix]
g = torch.Generator().manual_seed(2147483647)
p = torch.rand(3, generator=g)
p = p / p.sum()
p
torch.multinomial(p, num_samples=100, replacement=True, generator=g)
p.shape
P = (N+1).float()  # port: the notebook's cell 23, run before the cells that ask P's shape
P /= P.sum(1, keepdims=True)  # port: as above
P.shape
P.sum(1, keepdim=True).shape
P.sum(1).shape
g = torch.Generator().manual_seed(2147483647)

for i in range(5):
  
  out = []
  ix = 0
  while True:
    p = P[ix]
    ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
    out.append(itos[ix])
    if ix == 0:
      break
  print(''.join(out))
log_likelihood = 0.0
n = 0

for w in words:
#for w in ["andrejq"]:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    prob = P[ix1, ix2]
    logprob = torch.log(prob)
    log_likelihood += logprob
    n += 1
    #print(f'{ch1}{ch2}: {prob:.4f} {logprob:.4f}')

print(f'{log_likelihood=}')
nll = -log_likelihood
print(f'{nll=}')
print(f'{nll/n}')
xs, ys = [], []

for w in words[:1]:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    print(ch1, ch2)
    xs.append(ix1)
    ys.append(ix2)
    
xs = torch.tensor(xs)
ys = torch.tensor(ys)
import torch.nn.functional as F
xenc = F.one_hot(xs, num_classes=27).float()
xenc
xenc.shape
# plt.imshow(xenc)  # port: plotting dropped
xenc.dtype
W = torch.randn((27, 1))
xenc @ W
logits = xenc @ W # log-counts
counts = logits.exp() # equivalent N
probs = counts / counts.sum(1, keepdims=True)
probs
probs[0]
probs[0].shape
probs[0].sum()
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g)
xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
logits = xenc @ W # predict log-counts
counts = logits.exp() # counts, equivalent to N
probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
probs.shape

nlls = torch.zeros(5)
for i in range(5):
  # i-th bigram:
  x = xs[i].item() # input character index
  y = ys[i].item() # label character index
  print('--------')
  print(f'bigram example {i+1}: {itos[x]}{itos[y]} (indexes {x},{y})')
  print('input to the neural net:', x)
  print('output probabilities from the neural net:', probs[i])
  print('label (actual next character):', y)
  p = probs[i, y]
  print('probability assigned by the net to the the correct character:', p.item())
  logp = torch.log(p)
  print('log likelihood:', logp.item())
  nll = -logp
  print('negative log likelihood:', nll.item())
  nlls[i] = nll

print('=========')
print('average negative log likelihood, i.e. loss =', nlls.mean().item())
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g, requires_grad=True)
xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
logits = xenc @ W # predict log-counts
counts = logits.exp() # counts, equivalent to N
probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
loss = -probs[torch.arange(5), ys].log().mean()
print(loss.item())
W.grad = None # set to zero the gradient
loss.backward()
W.data += -0.1 * W.grad
xs, ys = [], []
for w in words:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    xs.append(ix1)
    ys.append(ix2)
xs = torch.tensor(xs)
ys = torch.tensor(ys)
num = xs.nelement()
print('number of examples: ', num)

# initialize the 'network'
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g, requires_grad=True)
for k in range(20):  # port: range(1) as saved (the lecture ran 100): enough steps to see the loss fall
  
  # forward pass
  xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
  logits = xenc @ W # predict log-counts
  counts = logits.exp() # counts, equivalent to N
  probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
  loss = -probs[torch.arange(num), ys].log().mean() + 0.01*(W**2).mean()
  print(loss.item())
  
  # backward pass
  W.grad = None # set to zero the gradient
  loss.backward()
  
  # update
  W.data += -50 * W.grad
g = torch.Generator().manual_seed(2147483647)

for i in range(5):
  
  out = []
  ix = 0
  while True:
    
    # ----------
    # BEFORE:
    #p = P[ix]
    # ----------
    # NOW:
    xenc = F.one_hot(torch.tensor([ix]), num_classes=27).float()
    logits = xenc @ W # predict log-counts
    counts = logits.exp() # counts, equivalent to N
    p = counts / counts.sum(1, keepdims=True) # probabilities for next character
    # ----------
    
    ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
    out.append(itos[ix])
    if ix == 0:
      break
  print(''.join(out))
"""

PART2 = r"""
import torch
import torch.nn.functional as F
# import matplotlib.pyplot as plt # for making figures  # port: plotting dropped
words = open('names.txt', 'r').read().splitlines()
words[:8]
len(words)
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
print(itos)

block_size = 3 # context length: how many characters do we take to predict the next one?
X, Y = [], []
for w in words[:5]:  # port: words, but the lecture ran this cell on the first 5 (its 32 examples, below)
  
  #print(w)
  context = [0] * block_size
  for ch in w + '.':
    ix = stoi[ch]
    X.append(context)
    Y.append(ix)
    #print(''.join(itos[i] for i in context), '--->', itos[ix])
    context = context[1:] + [ix] # crop and append
  
X = torch.tensor(X)
Y = torch.tensor(Y)
X.shape, X.dtype, Y.shape, Y.dtype
# build the dataset
block_size = 3 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  for w in words:

    #print(w)
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      #print(''.join(itos[i] for i in context), '--->', itos[ix])
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

import random
random.seed(42)
random.shuffle(words)
n1 = int(0.8*len(words))
n2 = int(0.9*len(words))

Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])
C = torch.randn((27, 2))
emb = C[X]
emb.shape
W1 = torch.randn((6, 100))
b1 = torch.randn(100)
h = torch.tanh(emb.view(-1, 6) @ W1 + b1)
h
h.shape
W2 = torch.randn((100, 27))
b2 = torch.randn(27)
logits = h @ W2 + b2
logits.shape
counts = logits.exp()
prob = counts / counts.sum(1, keepdims=True)
prob.shape
loss = -prob[torch.arange(32), Y].log().mean()
loss
Xtr.shape, Ytr.shape # dataset
g = torch.Generator().manual_seed(2147483647) # for reproducibility
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g)
b1 = torch.randn(200, generator=g)
W2 = torch.randn((200, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
sum(p.nelement() for p in parameters) # number of parameters in total
for p in parameters:
  p.requires_grad = True
lre = torch.linspace(-3, 0, 1000)
lrs = 10**lre
lri = []
lossi = []
stepi = []
for i in range(2000):  # port: 200000, shrunk to run in seconds
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (32,))
  
  # forward pass
  emb = C[Xtr[ix]] # (32, 3, 10)
  h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 200)
  logits = h @ W2 + b2 # (32, 27)
  loss = F.cross_entropy(logits, Ytr[ix])
  #print(loss.item())
  
  # backward pass
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update
  #lr = lrs[i]
  lr = 0.1 if i < 1000 else 0.01  # port: 100000, as above
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  #lri.append(lre[i])
  stepi.append(i)
  lossi.append(loss.log10().item())

#print(loss.item())
# plt.plot(stepi, lossi)  # port: plotting dropped
emb = C[Xtr] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ytr)
loss
emb = C[Xdev] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ydev)
loss
C[:,0].data, C[:,1].data  # port: plotting dropped (the scatter of the embedding C)
for i in range(C.shape[0]):
    (C[i,0].item(), C[i,1].item(), itos[i])  # port: plotting dropped (plt.text of each character)
context = [0] * block_size
C[torch.tensor([context])].shape


# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(20):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      emb = C[torch.tensor([context])] # (1,block_size,d)
      h = torch.tanh(emb.view(1, -1) @ W1 + b1)
      logits = h @ W2 + b2
      probs = F.softmax(logits, dim=1)
      ix = torch.multinomial(probs, num_samples=1, generator=g).item()
      context = context[1:] + [ix]
      out.append(ix)
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out))
"""

PART3 = r"""
import torch
import torch.nn.functional as F
# import matplotlib.pyplot as plt # for making figures  # port: plotting dropped
# read in all the words
words = open('names.txt', 'r').read().splitlines()
words[:8]
len(words)
# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
vocab_size = len(itos)
print(itos)
print(vocab_size)
# build the dataset
block_size = 3 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  
  for w in words:
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

import random
random.seed(42)
random.shuffle(words)
n1 = int(0.8*len(words))
n2 = int(0.9*len(words))

Xtr,  Ytr  = build_dataset(words[:n1])     # 80%
Xdev, Ydev = build_dataset(words[n1:n2])   # 10%
Xte,  Yte  = build_dataset(words[n2:])     # 10%

# MLP revisited
n_embd = 10 # the dimensionality of the character embedding vectors
n_hidden = 200 # the number of neurons in the hidden layer of the MLP

g = torch.Generator().manual_seed(2147483647) # for reproducibility
C  = torch.randn((vocab_size, n_embd),            generator=g)
W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5) #* 0.2
#b1 = torch.randn(n_hidden,                        generator=g) * 0.01
W2 = torch.randn((n_hidden, vocab_size),          generator=g) * 0.01
b2 = torch.randn(vocab_size,                      generator=g) * 0

# BatchNorm parameters
bngain = torch.ones((1, n_hidden))
bnbias = torch.zeros((1, n_hidden))
bnmean_running = torch.zeros((1, n_hidden))
bnstd_running = torch.ones((1, n_hidden))

parameters = [C, W1, W2, b2, bngain, bnbias]
print(sum(p.nelement() for p in parameters)) # number of parameters in total
for p in parameters:
  p.requires_grad = True
# same optimization as last time
max_steps = 400  # port: 200000, shrunk to run in seconds
batch_size = 32
lossi = []

for i in range(max_steps):
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
  Xb, Yb = Xtr[ix], Ytr[ix] # batch X,Y
  
  # forward pass
  emb = C[Xb] # embed the characters into vectors
  embcat = emb.view(emb.shape[0], -1) # concatenate the vectors
  # Linear layer
  hpreact = embcat @ W1 #+ b1 # hidden layer pre-activation
  # BatchNorm layer
  # -------------------------------------------------------------
  bnmeani = hpreact.mean(0, keepdim=True)
  bnstdi = hpreact.std(0, keepdim=True)
  hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
  with torch.no_grad():
    bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
    bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
  # -------------------------------------------------------------
  # Non-linearity
  h = torch.tanh(hpreact) # hidden layer
  logits = h @ W2 + b2 # output layer
  loss = F.cross_entropy(logits, Yb) # loss function
  
  # backward pass
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update
  lr = 0.1 if i < 200 else 0.01 # step learning rate decay  # port: 100000, as above
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  if i % 100 == 0: # print every once in a while  # port: 10000, as above
    print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')
  lossi.append(loss.log10().item())
  
# plt.plot(lossi)  # port: plotting dropped
# calibrate the batch norm at the end of training

with torch.no_grad():
  # pass the training set through
  emb = C[Xtr]
  embcat = emb.view(emb.shape[0], -1)
  hpreact = embcat @ W1 # + b1
  # measure the mean/std over the entire training set
  bnmean = hpreact.mean(0, keepdim=True)
  bnstd = hpreact.std(0, keepdim=True)

@torch.no_grad() # this decorator disables gradient tracking
def split_loss(split):
  x,y = {
    'train': (Xtr, Ytr),
    'val': (Xdev, Ydev),
    'test': (Xte, Yte),
  }[split]
  emb = C[x] # (N, block_size, n_embd)
  embcat = emb.view(emb.shape[0], -1) # concat into (N, block_size * n_embd)
  hpreact = embcat @ W1 # + b1
  #hpreact = bngain * (hpreact - hpreact.mean(0, keepdim=True)) / hpreact.std(0, keepdim=True) + bnbias
  hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
  h = torch.tanh(hpreact) # (N, n_hidden)
  logits = h @ W2 + b2 # (N, vocab_size)
  loss = F.cross_entropy(logits, y)
  print(split, loss.item())

split_loss('train')
split_loss('val')
# SUMMARY + PYTORCHIFYING -----------
# Let's train a deeper network
# The classes we create here are the same API as nn.Module in PyTorch

class Linear:
  
  def __init__(self, fan_in, fan_out, bias=True):
    self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5
    self.bias = torch.zeros(fan_out) if bias else None
  
  def __call__(self, x):
    self.out = x @ self.weight
    if self.bias is not None:
      self.out += self.bias
    return self.out
  
  def parameters(self):
    return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
  
  def __init__(self, dim, eps=1e-5, momentum=0.1):
    self.eps = eps
    self.momentum = momentum
    self.training = True
    # parameters (trained with backprop)
    self.gamma = torch.ones(dim)
    self.beta = torch.zeros(dim)
    # buffers (trained with a running 'momentum update')
    self.running_mean = torch.zeros(dim)
    self.running_var = torch.ones(dim)
  
  def __call__(self, x):
    # calculate the forward pass
    if self.training:
      xmean = x.mean(0, keepdim=True) # batch mean
      xvar = x.var(0, keepdim=True) # batch variance
    else:
      xmean = self.running_mean
      xvar = self.running_var
    xhat = (x - xmean) / torch.sqrt(xvar + self.eps) # normalize to unit variance
    self.out = self.gamma * xhat + self.beta
    # update the buffers
    if self.training:
      with torch.no_grad():
        self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
        self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
    return self.out
  
  def parameters(self):
    return [self.gamma, self.beta]

class Tanh:
  def __call__(self, x):
    self.out = torch.tanh(x)
    return self.out
  def parameters(self):
    return []

n_embd = 10 # the dimensionality of the character embedding vectors
n_hidden = 100 # the number of neurons in the hidden layer of the MLP
g = torch.Generator().manual_seed(2147483647) # for reproducibility

C = torch.randn((vocab_size, n_embd),            generator=g)
layers = [
  Linear(n_embd * block_size, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(           n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(           n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(           n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(           n_hidden, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(           n_hidden, vocab_size, bias=False), BatchNorm1d(vocab_size),
]
# layers = [
#   Linear(n_embd * block_size, n_hidden), Tanh(),
#   Linear(           n_hidden, n_hidden), Tanh(),
#   Linear(           n_hidden, n_hidden), Tanh(),
#   Linear(           n_hidden, n_hidden), Tanh(),
#   Linear(           n_hidden, n_hidden), Tanh(),
#   Linear(           n_hidden, vocab_size),
# ]

with torch.no_grad():
  # last layer: make less confident
  layers[-1].gamma *= 0.1
  #layers[-1].weight *= 0.1
  # all other layers: apply gain
  for layer in layers[:-1]:
    if isinstance(layer, Linear):
      layer.weight *= 1.0 #5/3

parameters = [C] + [p for layer in layers for p in layer.parameters()]
print(sum(p.nelement() for p in parameters)) # number of parameters in total
for p in parameters:
  p.requires_grad = True
# same optimization as last time
max_steps = 400  # port: 200000, as above
batch_size = 32
lossi = []
ud = []

for i in range(max_steps):
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
  Xb, Yb = Xtr[ix], Ytr[ix] # batch X,Y
  
  # forward pass
  emb = C[Xb] # embed the characters into vectors
  x = emb.view(emb.shape[0], -1) # concatenate the vectors
  for layer in layers:
    x = layer(x)
  loss = F.cross_entropy(x, Yb) # loss function
  
  # backward pass
  for layer in layers:
    layer.out.retain_grad() # AFTER_DEBUG: would take out retain_graph
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update
  lr = 0.1 if i < 150000 else 0.01 # step learning rate decay
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  if i % 100 == 0: # print every once in a while  # port: 10000, as above
    print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')
  lossi.append(loss.log10().item())
  with torch.no_grad():
    ud.append([((lr*p.grad).std() / p.data.std()).log10().item() for p in parameters])

  if i >= 200:  # port: 1000, as above
    break # AFTER_DEBUG: would take out obviously to run full optimization
# visualize histograms
# plt.figure(figsize=(20, 4)) # width and height of the plot  # port: plotting dropped
legends = []
for i, layer in enumerate(layers[:-1]): # note: exclude the output layer
  if isinstance(layer, Tanh):
    t = layer.out
    print('layer %d (%10s): mean %+.2f, std %.2f, saturated: %.2f%%' % (i, layer.__class__.__name__, t.mean(), t.std(), (t.abs() > 0.97).float().mean()*100))
    hy, hx = torch.histogram(t, density=True)
    # plt.plot(hx[:-1].detach(), hy.detach())  # port: plotting dropped
    legends.append(f'layer {i} ({layer.__class__.__name__}')
# plt.legend(legends);  # port: plotting dropped
# plt.title('activation distribution')  # port: plotting dropped
# visualize histograms
# plt.figure(figsize=(20, 4)) # width and height of the plot  # port: plotting dropped
legends = []
for i, layer in enumerate(layers[:-1]): # note: exclude the output layer
  if isinstance(layer, Tanh):
    t = layer.out.grad
    print('layer %d (%10s): mean %+f, std %e' % (i, layer.__class__.__name__, t.mean(), t.std()))
    hy, hx = torch.histogram(t, density=True)
    # plt.plot(hx[:-1].detach(), hy.detach())  # port: plotting dropped
    legends.append(f'layer {i} ({layer.__class__.__name__}')
# plt.legend(legends);  # port: plotting dropped
# plt.title('gradient distribution')  # port: plotting dropped
# visualize histograms
# plt.figure(figsize=(20, 4)) # width and height of the plot  # port: plotting dropped
legends = []
for i,p in enumerate(parameters):
  t = p.grad
  if p.ndim == 2:
    print('weight %10s | mean %+f | std %e | grad:data ratio %e' % (tuple(p.shape), t.mean(), t.std(), t.std() / p.std()))
    hy, hx = torch.histogram(t, density=True)
    # plt.plot(hx[:-1].detach(), hy.detach())  # port: plotting dropped
    legends.append(f'{i} {tuple(p.shape)}')
# plt.legend(legends)  # port: plotting dropped
# plt.title('weights gradient distribution');  # port: plotting dropped
# plt.figure(figsize=(20, 4))  # port: plotting dropped
legends = []
for i,p in enumerate(parameters):
  if p.ndim == 2:
    # plt.plot([ud[j][i] for j in range(len(ud))])  # port: plotting dropped
    legends.append('param %d' % i)
# plt.plot([0, len(ud)], [-3, -3], 'k') # these ratios should be ~1e-3, indicate on plot  # port: plotting dropped
# plt.legend(legends);  # port: plotting dropped

@torch.no_grad() # this decorator disables gradient tracking
def split_loss(split):
  x,y = {
    'train': (Xtr, Ytr),
    'val': (Xdev, Ydev),
    'test': (Xte, Yte),
  }[split]
  emb = C[x] # (N, block_size, n_embd)
  x = emb.view(emb.shape[0], -1) # concat into (N, block_size * n_embd)
  for layer in layers:
    x = layer(x)
  loss = F.cross_entropy(x, y)
  print(split, loss.item())

# put layers into eval mode
for layer in layers:
  layer.training = False
split_loss('train')
split_loss('val')
# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(20):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      # forward pass the neural net
      emb = C[torch.tensor([context])] # (1,block_size,n_embd)
      x = emb.view(emb.shape[0], -1) # concatenate the vectors
      for layer in layers:
        x = layer(x)
      logits = x
      probs = F.softmax(logits, dim=1)
      # sample from the distribution
      ix = torch.multinomial(probs, num_samples=1, generator=g).item()
      # shift the context window and track the samples
      context = context[1:] + [ix]
      out.append(ix)
      # if we sample the special '.' token, break
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out)) # decode and print the generated word
"""

PART4_SETUP = r"""
# there no change change in the first several cells from last lecture
import torch
import torch.nn.functional as F
# import matplotlib.pyplot as plt # for making figures  # port: plotting dropped
# read in all the words
words = open('names.txt', 'r').read().splitlines()
print(len(words))
print(max(len(w) for w in words))
print(words[:8])
# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
vocab_size = len(itos)
print(itos)
print(vocab_size)
# build the dataset
block_size = 3 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  
  for w in words:
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

import random
random.seed(42)
random.shuffle(words)
n1 = int(0.8*len(words))
n2 = int(0.9*len(words))

Xtr,  Ytr  = build_dataset(words[:n1])     # 80%
Xdev, Ydev = build_dataset(words[n1:n2])   # 10%
Xte,  Yte  = build_dataset(words[n2:])     # 10%
# ok biolerplate done, now we get to the action:
# utility function we will use later when comparing manual gradients to PyTorch gradients
def cmp(s, dt, t):
  ex = torch.all(dt == t.grad).item()
  app = torch.allclose(dt, t.grad)
  maxdiff = (dt - t.grad).abs().max().item()
  print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}')
n_embd = 10 # the dimensionality of the character embedding vectors
n_hidden = 64 # the number of neurons in the hidden layer of the MLP

g = torch.Generator().manual_seed(2147483647) # for reproducibility
C  = torch.randn((vocab_size, n_embd),            generator=g)
# Layer 1
W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5)
b1 = torch.randn(n_hidden,                        generator=g) * 0.1 # using b1 just for fun, it's useless because of BN
# Layer 2
W2 = torch.randn((n_hidden, vocab_size),          generator=g) * 0.1
b2 = torch.randn(vocab_size,                      generator=g) * 0.1
# BatchNorm parameters
bngain = torch.randn((1, n_hidden))*0.1 + 1.0
bnbias = torch.randn((1, n_hidden))*0.1

# Note: I am initializating many of these parameters in non-standard ways
# because sometimes initializating with e.g. all zeros could mask an incorrect
# implementation of the backward pass.

parameters = [C, W1, b1, W2, b2, bngain, bnbias]
print(sum(p.nelement() for p in parameters)) # number of parameters in total
for p in parameters:
  p.requires_grad = True
batch_size = 32
n = batch_size # a shorter variable also, for convenience
# construct a minibatch
ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
Xb, Yb = Xtr[ix], Ytr[ix] # batch X,Y
"""

PART4_EXERCISE1 = r"""
# forward pass, "chunkated" into smaller steps that are possible to backward one at a time

emb = C[Xb] # embed the characters into vectors
embcat = emb.view(emb.shape[0], -1) # concatenate the vectors
# Linear layer 1
hprebn = embcat @ W1 + b1 # hidden layer pre-activation
# BatchNorm layer
bnmeani = 1/n*hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff**2
bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True) # note: Bessel's correction (dividing by n-1, not n)
bnvar_inv = (bnvar + 1e-5)**-0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
# Non-linearity
h = torch.tanh(hpreact) # hidden layer
# Linear layer 2
logits = h @ W2 + b2 # output layer
# cross entropy loss (same as F.cross_entropy(logits, Yb))
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes # subtract max for numerical stability
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdims=True)
counts_sum_inv = counts_sum**-1 # if I use (1.0 / counts_sum) instead then I can't get backprop to be bit exact...
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()

# PyTorch backward pass
for p in parameters:
  p.grad = None
for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, # afaik there is no cleaner way
          norm_logits, logit_maxes, logits, h, hpreact, bnraw,
         bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
         embcat, emb]:
  t.retain_grad()
loss.backward()
loss
# Exercise 1: backprop through the whole thing manually, 
# backpropagating through exactly all of the variables 
# as they are defined in the forward pass above, one by one

dlogprobs = torch.zeros_like(logprobs)
dlogprobs[range(n), Yb] = -1.0/n
dprobs = (1.0 / probs) * dlogprobs
dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
dcounts = counts_sum_inv * dprobs
dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv
dcounts += torch.ones_like(counts) * dcounts_sum
dnorm_logits = counts * dcounts
dlogits = dnorm_logits.clone()
dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
dlogits += F.one_hot(logits.max(dim=1).indices, num_classes=logits.shape[1]) * dlogit_maxes  # port: max(1), whose positional dim keeps numpy's meaning (docs/pytorch.md)
dh = dlogits @ W2.T
dW2 = h.T @ dlogits
db2 = dlogits.sum(0)
dhpreact = (1.0 - h**2) * dh
dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
dbnraw = bngain * dhpreact
dbnbias = dhpreact.sum(0, keepdim=True)
dbndiff = bnvar_inv * dbnraw
dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
dbnvar = (-0.5*(bnvar + 1e-5)**-1.5) * dbnvar_inv
dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar
dbndiff += (2*bndiff) * dbndiff2
dhprebn = dbndiff.clone()
dbnmeani = (-dbndiff).sum(0)
dhprebn += 1.0/n * (torch.ones_like(hprebn) * dbnmeani)
dembcat = dhprebn @ W1.T
dW1 = embcat.T @ dhprebn
db1 = dhprebn.sum(0)
demb = dembcat.view(emb.shape)
dC = torch.zeros_like(C)
for k in range(Xb.shape[0]):
  for j in range(Xb.shape[1]):
    ix = Xb[k,j]
    dC[ix] += demb[k,j]
    
cmp('logprobs', dlogprobs, logprobs)
cmp('probs', dprobs, probs)
cmp('counts_sum_inv', dcounts_sum_inv, counts_sum_inv)
cmp('counts_sum', dcounts_sum, counts_sum)
cmp('counts', dcounts, counts)
cmp('norm_logits', dnorm_logits, norm_logits)
cmp('logit_maxes', dlogit_maxes, logit_maxes)
cmp('logits', dlogits, logits)
cmp('h', dh, h)
cmp('W2', dW2, W2)
cmp('b2', db2, b2)
cmp('hpreact', dhpreact, hpreact)
cmp('bngain', dbngain, bngain)
cmp('bnbias', dbnbias, bnbias)
cmp('bnraw', dbnraw, bnraw)
cmp('bnvar_inv', dbnvar_inv, bnvar_inv)
cmp('bnvar', dbnvar, bnvar)
cmp('bndiff2', dbndiff2, bndiff2)
cmp('bndiff', dbndiff, bndiff)
cmp('bnmeani', dbnmeani, bnmeani)
cmp('hprebn', dhprebn, hprebn)
cmp('embcat', dembcat, embcat)
cmp('W1', dW1, W1)
cmp('b1', db1, b1)
cmp('emb', demb, emb)
cmp('C', dC, C)
"""

PART4_REST = r"""
# Exercise 2: backprop through cross_entropy but all in one go
# to complete this challenge look at the mathematical expression of the loss,
# take the derivative, simplify the expression, and just write it out

# forward pass

# before:
# logit_maxes = logits.max(1, keepdim=True).values
# norm_logits = logits - logit_maxes # subtract max for numerical stability
# counts = norm_logits.exp()
# counts_sum = counts.sum(1, keepdims=True)
# counts_sum_inv = counts_sum**-1 # if I use (1.0 / counts_sum) instead then I can't get backprop to be bit exact...
# probs = counts * counts_sum_inv
# logprobs = probs.log()
# loss = -logprobs[range(n), Yb].mean()

# now:
loss_fast = F.cross_entropy(logits, Yb)
print(loss_fast.item(), 'diff:', (loss_fast - loss).item())
# backward pass

dlogits = F.softmax(logits, 1)
dlogits[range(n), Yb] -= 1
dlogits /= n

cmp('logits', dlogits, logits) # I can only get approximate to be true, my maxdiff is 6e-9
logits.shape, Yb.shape
F.softmax(logits, 1)[0]
dlogits[0] * n
dlogits[0].sum()
# plt.figure(figsize=(4, 4))  # port: plotting dropped
# plt.imshow(dlogits.detach(), cmap='gray')  # port: plotting dropped
# Exercise 3: backprop through batchnorm but all in one go
# to complete this challenge look at the mathematical expression of the output of batchnorm,
# take the derivative w.r.t. its input, simplify the expression, and just write it out

# forward pass

# before:
# bnmeani = 1/n*hprebn.sum(0, keepdim=True)
# bndiff = hprebn - bnmeani
# bndiff2 = bndiff**2
# bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True) # note: Bessel's correction (dividing by n-1, not n)
# bnvar_inv = (bnvar + 1e-5)**-0.5
# bnraw = bndiff * bnvar_inv
# hpreact = bngain * bnraw + bnbias

# now:
hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias
print('max diff:', (hpreact_fast - hpreact).abs().max())
# backward pass

# before we had:
# dbnraw = bngain * dhpreact
# dbndiff = bnvar_inv * dbnraw
# dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
# dbnvar = (-0.5*(bnvar + 1e-5)**-1.5) * dbnvar_inv
# dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar
# dbndiff += (2*bndiff) * dbndiff2
# dhprebn = dbndiff.clone()
# dbnmeani = (-dbndiff).sum(0)
# dhprebn += 1.0/n * (torch.ones_like(hprebn) * dbnmeani)

# calculate dhprebn given dhpreact (i.e. backprop through the batchnorm)
# (you'll also need to use some of the variables from the forward pass up above)

dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))

cmp('hprebn', dhprebn, hprebn) # I can only get approximate to be true, my maxdiff is 9e-10
dhprebn.shape, bngain.shape, bnvar_inv.shape, dbnraw.shape, dbnraw.sum(0).shape
# Exercise 4: putting it all together!
# Train the MLP neural net with your own backward pass

# init
n_embd = 10 # the dimensionality of the character embedding vectors
n_hidden = 200 # the number of neurons in the hidden layer of the MLP

g = torch.Generator().manual_seed(2147483647) # for reproducibility
C  = torch.randn((vocab_size, n_embd),            generator=g)
# Layer 1
W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5)
b1 = torch.randn(n_hidden,                        generator=g) * 0.1
# Layer 2
W2 = torch.randn((n_hidden, vocab_size),          generator=g) * 0.1
b2 = torch.randn(vocab_size,                      generator=g) * 0.1
# BatchNorm parameters
bngain = torch.randn((1, n_hidden))*0.1 + 1.0
bnbias = torch.randn((1, n_hidden))*0.1

parameters = [C, W1, b1, W2, b2, bngain, bnbias]
print(sum(p.nelement() for p in parameters)) # number of parameters in total
for p in parameters:
  p.requires_grad = True

# same optimization as last time
max_steps = 400  # port: 200000, shrunk to run in seconds
batch_size = 32
n = batch_size # convenience
lossi = []

# use this context manager for efficiency once your backward pass is written (TODO)
with torch.no_grad():

  # kick off optimization
  for i in range(max_steps):

    # minibatch construct
    ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix] # batch X,Y

    # forward pass
    emb = C[Xb] # embed the characters into vectors
    embcat = emb.view(emb.shape[0], -1) # concatenate the vectors
    # Linear layer
    hprebn = embcat @ W1 + b1 # hidden layer pre-activation
    # BatchNorm layer
    # -------------------------------------------------------------
    bnmean = hprebn.mean(0, keepdim=True)
    bnvar = hprebn.var(0, keepdim=True, unbiased=True)
    bnvar_inv = (bnvar + 1e-5)**-0.5
    bnraw = (hprebn - bnmean) * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    # -------------------------------------------------------------
    # Non-linearity
    h = torch.tanh(hpreact) # hidden layer
    logits = h @ W2 + b2 # output layer
    loss = F.cross_entropy(logits, Yb) # loss function

    # backward pass
    for p in parameters:
      p.grad = None
    #loss.backward() # use this for correctness comparisons, delete it later!

    # manual backprop! #swole_doge_meme
    # -----------------
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    # 2nd layer backprop
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    # tanh
    dhpreact = (1.0 - h**2) * dh
    # batchnorm backprop
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnbias = dhpreact.sum(0, keepdim=True)
    dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))
    # 1st layer
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    # embedding
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
      for j in range(Xb.shape[1]):
        ix = Xb[k,j]
        dC[ix] += demb[k,j]
    grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
    # -----------------

    # update
    lr = 0.1 if i < 200 else 0.01 # step learning rate decay  # port: 100000, as above
    for p, grad in zip(parameters, grads):
      #p.data += -lr * p.grad # old way of cheems doge (using PyTorch grad from .backward())
      p.data += -lr * grad # new way of swole doge TODO: enable

    # track stats
    if i % 100 == 0: # print every once in a while  # port: 10000, as above
      print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')
    lossi.append(loss.log10().item())

  #   if i >= 100: # TODO: delete early breaking when you're ready to train the full net
  #     break
# useful for checking your gradients
# for p,g in zip(parameters, grads):
#   cmp(str(tuple(p.shape)), g, p)
# calibrate the batch norm at the end of training

with torch.no_grad():
  # pass the training set through
  emb = C[Xtr]
  embcat = emb.view(emb.shape[0], -1)
  hpreact = embcat @ W1 + b1
  # measure the mean/std over the entire training set
  bnmean = hpreact.mean(0, keepdim=True)
  bnvar = hpreact.var(0, keepdim=True, unbiased=True)

# evaluate train and val loss

@torch.no_grad() # this decorator disables gradient tracking
def split_loss(split):
  x,y = {
    'train': (Xtr, Ytr),
    'val': (Xdev, Ydev),
    'test': (Xte, Yte),
  }[split]
  emb = C[x] # (N, block_size, n_embd)
  embcat = emb.view(emb.shape[0], -1) # concat into (N, block_size * n_embd)
  hpreact = embcat @ W1 + b1
  hpreact = bngain * (hpreact - bnmean) * (bnvar + 1e-5)**-0.5 + bnbias
  h = torch.tanh(hpreact) # (N, n_hidden)
  logits = h @ W2 + b2 # (N, vocab_size)
  loss = F.cross_entropy(logits, y)
  print(split, loss.item())

split_loss('train')
split_loss('val')
# I achieved:
# train 2.0718822479248047
# val 2.1162495613098145
# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(20):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      # ------------
      # forward pass:
      # Embedding
      emb = C[torch.tensor([context])] # (1,block_size,d)      
      embcat = emb.view(emb.shape[0], -1) # concat into (N, block_size * n_embd)
      hpreact = embcat @ W1 + b1
      hpreact = bngain * (hpreact - bnmean) * (bnvar + 1e-5)**-0.5 + bnbias
      h = torch.tanh(hpreact) # (N, n_hidden)
      logits = h @ W2 + b2 # (N, vocab_size)
      # ------------
      # Sample
      probs = F.softmax(logits, dim=1)
      ix = torch.multinomial(probs, num_samples=1, generator=g).item()
      context = context[1:] + [ix]
      out.append(ix)
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out))
"""

PART5 = r"""
import torch
import torch.nn.functional as F
# import matplotlib.pyplot as plt # for making figures  # port: plotting dropped
# read in all the words
words = open('names.txt', 'r').read().splitlines()
print(len(words))
print(max(len(w) for w in words))
print(words[:8])
# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
vocab_size = len(itos)
print(itos)
print(vocab_size)
# shuffle up the words
import random
random.seed(42)
random.shuffle(words)
# build the dataset
block_size = 8 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  
  for w in words:
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

n1 = int(0.8*len(words))
n2 = int(0.9*len(words))
Xtr,  Ytr  = build_dataset(words[:n1])     # 80%
Xdev, Ydev = build_dataset(words[n1:n2])   # 10%
Xte,  Yte  = build_dataset(words[n2:])     # 10%
for x,y in zip(Xtr[:20], Ytr[:20]):
  print(''.join(itos[ix.item()] for ix in x), '-->', itos[y.item()])
# Near copy paste of the layers we have developed in Part 3

# -----------------------------------------------------------------------------------------------
class Linear:
  
  def __init__(self, fan_in, fan_out, bias=True):
    self.weight = torch.randn((fan_in, fan_out)) / fan_in**0.5 # note: kaiming init
    self.bias = torch.zeros(fan_out) if bias else None
  
  def __call__(self, x):
    self.out = x @ self.weight
    if self.bias is not None:
      self.out += self.bias
    return self.out
  
  def parameters(self):
    return [self.weight] + ([] if self.bias is None else [self.bias])

# -----------------------------------------------------------------------------------------------
class BatchNorm1d:
  
  def __init__(self, dim, eps=1e-5, momentum=0.1):
    self.eps = eps
    self.momentum = momentum
    self.training = True
    # parameters (trained with backprop)
    self.gamma = torch.ones(dim)
    self.beta = torch.zeros(dim)
    # buffers (trained with a running 'momentum update')
    self.running_mean = torch.zeros(dim)
    self.running_var = torch.ones(dim)
  
  def __call__(self, x):
    # calculate the forward pass
    if self.training:
      if x.ndim == 2:
        dim = 0
      elif x.ndim == 3:
        dim = (0,1)
      xmean = x.mean(dim, keepdim=True) # batch mean
      xvar = x.var(dim, keepdim=True) # batch variance
    else:
      xmean = self.running_mean
      xvar = self.running_var
    xhat = (x - xmean) / torch.sqrt(xvar + self.eps) # normalize to unit variance
    self.out = self.gamma * xhat + self.beta
    # update the buffers
    if self.training:
      with torch.no_grad():
        self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
        self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
    return self.out
  
  def parameters(self):
    return [self.gamma, self.beta]

# -----------------------------------------------------------------------------------------------
class Tanh:
  def __call__(self, x):
    self.out = torch.tanh(x)
    return self.out
  def parameters(self):
    return []

# -----------------------------------------------------------------------------------------------
class Embedding:
  
  def __init__(self, num_embeddings, embedding_dim):
    self.weight = torch.randn((num_embeddings, embedding_dim))
    
  def __call__(self, IX):
    self.out = self.weight[IX]
    return self.out
  
  def parameters(self):
    return [self.weight]

# -----------------------------------------------------------------------------------------------
class FlattenConsecutive:
  
  def __init__(self, n):
    self.n = n
    
  def __call__(self, x):
    B, T, C = x.shape
    x = x.view(B, T//self.n, C*self.n)
    if x.shape[1] == 1:
      x = x.squeeze(1)
    self.out = x
    return self.out
  
  def parameters(self):
    return []

# -----------------------------------------------------------------------------------------------
class Sequential:
  
  def __init__(self, layers):
    self.layers = layers
  
  def __call__(self, x):
    for layer in self.layers:
      x = layer(x)
    self.out = x
    return self.out
  
  def parameters(self):
    # get parameters of all layers and stretch them out into one list
    return [p for layer in self.layers for p in layer.parameters()]

torch.manual_seed(42); # seed rng for reproducibility
# original network
# n_embd = 10 # the dimensionality of the character embedding vectors
# n_hidden = 300 # the number of neurons in the hidden layer of the MLP
# model = Sequential([
#   Embedding(vocab_size, n_embd),
#   FlattenConsecutive(8), Linear(n_embd * 8, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
#   Linear(n_hidden, vocab_size),
# ])

# hierarchical network
n_embd = 24 # the dimensionality of the character embedding vectors
n_hidden = 128 # the number of neurons in the hidden layer of the MLP
model = Sequential([
  Embedding(vocab_size, n_embd),
  FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  FlattenConsecutive(2), Linear(n_hidden*2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  FlattenConsecutive(2), Linear(n_hidden*2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
  Linear(n_hidden, vocab_size),
])

# parameter init
with torch.no_grad():
  model.layers[-1].weight *= 0.1 # last layer make less confident

parameters = model.parameters()
print(sum(p.nelement() for p in parameters)) # number of parameters in total
for p in parameters:
  p.requires_grad = True
# same optimization as last time
max_steps = 400  # port: 200000, shrunk to run in seconds
batch_size = 32
lossi = []

for i in range(max_steps):
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (batch_size,))
  Xb, Yb = Xtr[ix], Ytr[ix] # batch X,Y
  
  # forward pass
  logits = model(Xb)
  loss = F.cross_entropy(logits, Yb) # loss function
  
  # backward pass
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update: simple SGD
  lr = 0.1 if i < 200 else 0.01 # step learning rate decay  # port: 150000, as above
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  if i % 100 == 0: # print every once in a while  # port: 10000, as above
    print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')
  lossi.append(loss.log10().item())

# plt.plot(torch.tensor(lossi).view(-1, 1000).mean(1))  # port: plotting dropped
# put layers into eval mode (needed for batchnorm especially)
for layer in model.layers:
  layer.training = False
# evaluate the loss
@torch.no_grad() # this decorator disables gradient tracking inside pytorch
def split_loss(split):
  x,y = {
    'train': (Xtr, Ytr),
    'val': (Xdev, Ydev),
    'test': (Xte, Yte),
  }[split]
  logits = model(x)
  loss = F.cross_entropy(logits, y)
  print(split, loss.item())

split_loss('train')
split_loss('val')
# sample from the model
for _ in range(20):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      # forward pass the neural net
      logits = model(torch.tensor([context]))
      probs = F.softmax(logits, dim=1)
      # sample from the distribution
      ix = torch.multinomial(probs, num_samples=1).item()
      # shift the context window and track the samples
      context = context[1:] + [ix]
      out.append(ix)
      # if we sample the special '.' token, break
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out)) # decode and print the generated word
for x,y in zip(Xtr[7:15], Ytr[7:15]):
  print(''.join(itos[ix.item()] for ix in x), '-->', itos[y.item()])
# forward a single example:
logits = model(Xtr[[7]])
logits.shape
# forward all of them
logits = torch.zeros(8, 27)
for i in range(8):
  logits[i] = model(Xtr[[7+i]])
logits.shape
# convolution is a "for loop"
# allows us to forward Linear layers efficiently over space
"""

PART4 = PART4_SETUP + PART4_EXERCISE1 + PART4_REST

MAKEMORE_MIRROR = "/work/.mirror/karpathy+makemore/repo"


def names_txt() -> str:
    """makemore's names.txt, its first 2000 names (made-up names where the mirror is absent)."""
    try:
        shown = subprocess.run(
            ["git", "-C", MAKEMORE_MIRROR, "show", "HEAD:names.txt"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return made_up_names()
    return "\n".join(shown.splitlines()[:2000]) + "\n"


def made_up_names(count: int = 2000, seed: int = 0) -> str:
    """Names from syllables of all 26 letters (the notebooks count on 27 characters), after
    makemore's first five (part 2's first cell takes their 32 examples)."""
    rng = np.random.default_rng(seed)
    onsets = [*"bcdfghjklmnpqrstvwxz", "sh", "ch", "br", "qu"]
    vowels = [*"aeiouy", "a", "e", "ia"]
    made = ["emma", "olivia", "ava", "isabella", "sophia"]
    while len(made) < count:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.integers(1, 4)))
        made.append(word + rng.choice(["", "n", "h", "l", "s", "lyn"]))
    return "\n".join(made) + "\n"


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` run as ``__main__`` in ``folder`` beside names.txt: what it printed and the
    notebook's variables at its end."""
    folder.mkdir()
    (folder / "names.txt").write_text(names_txt(), encoding="utf-8")
    return run_main(script, folder, monkeypatch, "notebook.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch (one thread: a shared machine), then with ``torch`` replaced by
    ``tricycle`` in the text."""
    torch = pytest.importorskip("torch")
    with one_thread(torch):
        theirs = run(script, tmp_path / "torch", monkeypatch)
    with one_thread(torch):
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


SIZE = re.compile(r"torch\.Size\(\[([\d, ]*)\]\)")
SCALAR = re.compile(r"\b[Tt]ensor\(([-+\d.e]+|nan|inf)(, (name|grad_fn)=[^)]*)?\)")
TENSOR = re.compile(r"\b[Tt]ensor\(.*?\)", re.DOTALL)


def kinds(printed: str) -> list[str]:
    """The printed lines, numbers aside (``lines``), without the sampled names, with torch's
    ``torch.Size([3, 4])`` as tricycle's tuple, a one-value tensor's repr as its number and any
    other tensor's repr as ``<tensor>`` (the reprs differ, a documented difference)."""
    text = SIZE.sub(lambda m: str(tuple(int(n) for n in m[1].split(",") if n.strip())), printed)
    text = TENSOR.sub("<tensor>", SCALAR.sub(r"\1", text))
    return [line for line in lines(text) if not re.fullmatch(r"[a-z]*\.", line)]


def sampled(printed: str) -> list[str]:
    return [line for line in printed.splitlines() if re.fullmatch(r"[a-z]*\.", line)]


def progress(printed: str) -> list[float]:
    """The losses of the ``'{i:7d}/{max_steps:7d}: {loss.item():.4f}'`` lines."""
    return numbers(r"\d+/ *\d+: ([\d.]+)", printed)


def split_losses(printed: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"^(train|val) ([\d.]+)$", printed, re.M)}


def learned(printed: str, ceiling: float = 2.7) -> None:
    """The training losses fall and the evaluated ones end well below a uniform guess's."""
    losses = progress(printed)
    assert len(losses) >= 3 and min(losses[1:]) < 0.85 * losses[0], losses
    splits = split_losses(printed)
    assert set(splits) == {"train", "val"} and max(splits.values()) < ceiling, splits


def test_part1_bigrams(tmp_path, monkeypatch):
    (theirs, _), (ours, space) = both(PART1, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        assert len(sampled(printed)) == 10  # 5 from the counts, 5 from the net
        steps = printed.split("number of examples:")[1].splitlines()[1:]
        losses = [float(line) for line in steps if re.fullmatch(r"[\d.]+", line)]
        assert len(losses) == 20 and losses[-1] < 0.8 * losses[0], losses
    # the count model's likelihood is the data's, the same number in either library
    average = [numbers(r"([\d.]+)", p.split("nll=")[1].splitlines()[1])[0] for p in (ours, theirs)]
    assert average[0] == pytest.approx(average[1], rel=1e-5) and 2 < average[0] < 3
    assert numbers(r"log_likelihood=tensor\(([-\d.]+)\)", theirs)[0] == pytest.approx(
        numbers(r"log_likelihood=Tensor\(([-\d.]+)", ours)[0], rel=1e-5
    )
    assert space["N"].dtype == np.int32 and int(space["N"].sum().item()) == space["num"]


def test_part2_mlp(tmp_path, monkeypatch):
    (theirs, their_space), (ours, our_space) = both(PART2, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, space in (theirs, their_space), (ours, our_space):
        assert len(sampled(printed)) == 20
        lossi = np.array(space["lossi"])  # log10 of each step's loss
        first, last = lossi[:50].mean(), lossi[-200:].mean()
        assert last < first - 0.1, (first, last)
        assert space["loss"].item() < 0.5 * 10**first  # the dev loss (randn's init starts high)
    # torch's trained values, one step of the course's loop on one batch: the same numbers
    torch = pytest.importorskip("torch")
    their_space["ix"] = torch.randint(0, their_space["Xtr"].shape[0], (32,))
    step = "\n".join(line[2:] for line in STEP2.splitlines())
    leaves = ["C", "W1", "b1", "W2", "b2"]
    ours_after, theirs_after = same_numbers(their_space, our_space, step, ["loss", "logits", "h"], leaves)  # fmt: skip
    for name in "C", "W1", "b1", "W2", "b2":  # and the same update
        np.testing.assert_allclose(ours_after[name].numpy(), theirs_after[name].detach().numpy(), rtol=1e-5, atol=1e-6)  # fmt: skip


# the body of part 2's training loop, the batch's ids given
STEP2 = """\
  emb = C[Xtr[ix]] # (32, 3, 10)
  h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 200)
  logits = h @ W2 + b2 # (32, 27)
  loss = F.cross_entropy(logits, Ytr[ix])
  for p in parameters:
    p.grad = None
  loss.backward()
  lr = 0.1 if i < 1000 else 0.01
  for p in parameters:
    p.data += -lr * p.grad
"""


def as_tricycle(their_space: dict, our_space: dict) -> dict:
    """The notebook's variables under torch, as tricycle's: each tensor with the same values
    (and requires_grad), each object of a class the notebook defines as an object of the
    tricycle run's class of that name, lists as lists; one object stays one object."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    memo: dict[int, object] = {}

    def convert(value):
        if id(value) in memo:
            return memo[id(value)]
        if isinstance(value, torch.Tensor):
            made = tricycle.tensor(value.detach().numpy().copy(), requires_grad=value.requires_grad)
        elif isinstance(value, list):
            made = memo[id(value)] = []
            made.extend(convert(v) for v in value)
        elif isinstance(our_space.get(type(value).__name__), type) and not isinstance(value, type):
            made = memo[id(value)] = object.__new__(our_space[type(value).__name__])
            made.__dict__.update({k: convert(v) for k, v in vars(value).items()})
        else:  # numbers, strings, dicts of characters, functions
            made = value
        memo[id(value)] = made
        return made

    skip = ("torch", "F", "g", "__builtins__")
    return {
        k: our_space[k] if inspect.isfunction(v) else convert(v)
        for k, v in their_space.items()
        if k not in skip
    }


def on_torchs_values(their_space: dict, our_space: dict, snippet: str) -> tuple[dict, dict]:
    """``snippet`` (the course's lines) run under torch on the torch run's variables, and under
    tricycle on the same values (``as_tricycle``; the notebook's functions are the tricycle
    run's): the two spaces after it, tricycle's first, each with what it printed as
    ``printed``."""
    import tricycle  # noqa: PLC0415
    import tricycle.nn.functional as tF  # noqa: PLC0415

    ours = as_tricycle(their_space, our_space) | {"tricycle": tricycle, "F": tF}
    theirs = dict(their_space)
    for space, text in (theirs, snippet), (ours, snippet.replace("torch", "tricycle")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(text, space)
        space["printed"] = out.getvalue()
    return ours, theirs


def close(ours, theirs, name: str, rtol: float = 1e-4, atol: float = 1e-6) -> None:
    """A tricycle tensor has a torch tensor's values."""
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)  # fmt: skip


def same_numbers(
    their_space: dict, our_space: dict, snippet: str, outputs: list[str], leaves: list[str]
):
    """``on_torchs_values``: the same ``outputs`` and gradients of ``leaves``."""
    for name in leaves:
        their_space[name].grad = None
    ours, theirs = on_torchs_values(their_space, our_space, snippet)
    for name in outputs:
        close(ours[name], theirs[name], name, atol=1e-5)
    for name in leaves:
        close(ours[name].grad, theirs[name].grad, name)
    return ours, theirs


# the body of part 3's (and part 5's) training loop: forward, retain_grad, backward
STEP3 = """\
  emb = C[Xb] # embed the characters into vectors
  x = emb.view(emb.shape[0], -1) # concatenate the vectors
  for layer in layers:
    x = layer(x)
  loss = F.cross_entropy(x, Yb) # loss function
  for layer in layers:
    layer.out.retain_grad() # AFTER_DEBUG: would take out retain_graph
  for p in parameters:
    p.grad = None
  loss.backward()
"""
STEP5 = """\
  logits = model(Xb)
  loss = F.cross_entropy(logits, Yb) # loss function
  for p in parameters:
    p.grad = None
  loss.backward()
"""


def dedent(body: str) -> str:
    return "\n".join(line[2:] for line in body.splitlines())


def same_training_step(their_space, our_space, step: str, layers, output: str) -> None:
    """The loop's step on torch's trained values, in eval mode (the notebook's last) then in
    training mode: the same logits, loss, gradients of every parameter and retained output,
    and running statistics after it."""
    for training in False, True:
        for layer in layers(their_space):
            layer.training = training
        ours, theirs = on_torchs_values(their_space, our_space, dedent(step))
        close(ours[output], theirs[output], output, atol=1e-5)
        close(ours["loss"], theirs["loss"], "loss")
        for i, (p, q) in enumerate(zip(ours["parameters"], theirs["parameters"], strict=True)):
            close(p.grad, q.grad, f"parameter {i}", atol=1e-6)
        for i, (a, b) in enumerate(zip(layers(ours), layers(theirs), strict=True)):
            if b.out.retains_grad:  # part 3's
                close(a.out.grad, b.out.grad, f"layer {i}'s output", atol=1e-7)
            if hasattr(b, "running_mean"):
                close(a.running_mean, b.running_mean, f"layer {i}'s running_mean", atol=1e-6)
                close(a.running_var, b.running_var, f"layer {i}'s running_var", atol=1e-6)


def test_part3_batchnorm(tmp_path, monkeypatch):
    (theirs, their_space), (ours, our_space) = both(PART3, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, space in (theirs, their_space), (ours, our_space):
        assert len(sampled(printed)) == 20
        end = re.search(r"^val [\d.]+\n", printed, re.M).end()  # the two runs of the notebook
        learned(printed[:end])  # the MLP with batch norm written in
        learned(printed[end:])  # the classes, six layers deep
        ratios = np.array(space["ud"])  # (steps, parameters): the update-to-data ratios' log10
        assert ratios.shape == (201, len(space["parameters"])) and np.isfinite(ratios).all()
    same_training_step(their_space, our_space, STEP3, lambda space: space["layers"], "x")


def test_part5_wavenet(tmp_path, monkeypatch):
    (theirs, their_space), (ours, our_space) = both(PART5, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        assert len(sampled(printed)) == 20
        learned(printed)
    assert our_space["logits"].shape == (8, 27)  # the "for loop" of a convolution
    same_training_step(their_space, our_space, STEP5, lambda space: space["model"].layers, "logits")


CMP = re.compile(
    r"^(\w+) +\| exact: (True|False) *\| approximate: (True|False) *\| maxdiff: (\S+)$", re.M
)
GRADIENTS = ["logprobs", "probs", "counts_sum_inv", "counts_sum", "counts", "norm_logits",
             "logit_maxes", "logits", "h", "W2", "b2", "hpreact", "bngain", "bnbias", "bnraw",
             "bnvar_inv", "bnvar", "bndiff2", "bndiff", "bnmeani", "hprebn", "embcat", "W1", "b1",
             "emb", "C"]  # fmt: skip


def checks(printed: str) -> dict:
    """cmp's lines: name -> (exact, approximate), in the order printed (a name may repeat)."""
    return [(name, exact == "True", approximate == "True") for name, exact, approximate, _ in CMP.findall(printed)]  # fmt: skip


def hold_as_torchs(ours: list, theirs: list) -> None:
    """cmp's checks hold under tricycle wherever they hold under torch: approximate (torch's
    own ``dC`` may miss ``allclose``'s 1e-8 on some data: its sum runs in another order than
    its embedding's backward), and exact wherever torch's is bit for bit its autograd's."""
    assert [c[0] for c in ours] == [c[0] for c in theirs]
    for (name, exact, approximate), (_, torch_exact, torch_approximate) in zip(ours, theirs, strict=True):  # fmt: skip
        assert (approximate or not torch_approximate) and (exact or not torch_exact), name


def test_part4_backprop_ninja(tmp_path, monkeypatch):
    (theirs, their_space), (ours, our_space) = both(PART4, tmp_path, monkeypatch)
    exactness = re.compile(r"(exact|approximate): (True|False)")  # compared below
    assert [exactness.sub(r"\1:", line) for line in kinds(ours)] == [exactness.sub(r"\1:", line) for line in kinds(theirs)]  # fmt: skip
    assert [c[0] for c in checks(ours)] == [*GRADIENTS, "logits", "hprebn"]
    hold_as_torchs(checks(ours), checks(theirs))
    for printed in theirs, ours:
        assert len(sampled(printed)) == 20
        learned(printed)  # exercise 4: trained on the manual gradients alone
    # exercise 1 on torch's trained values: each manual gradient is torch's, and cmp agrees
    ours_ex, theirs_ex = on_torchs_values(their_space, our_space, PART4_EXERCISE1)
    hold_as_torchs(checks(ours_ex["printed"]), checks(theirs_ex["printed"]))
    close(ours_ex["loss"], theirs_ex["loss"], "loss")
    for name in GRADIENTS:
        close(ours_ex["d" + name], theirs_ex["d" + name], "d" + name, atol=1e-7)
        close(ours_ex[name].grad, theirs_ex[name].grad, name + ".grad", atol=1e-7)
