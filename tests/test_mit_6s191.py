"""MIT 6.S191 "Introduction to Deep Learning", its PyTorch labs run on tricycle with ``torch``
replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_bentrevett.py):

- lab1 part 1 (PT_Part1_Intro_Solution): tensors of each rank, ``torch.add``/``subtract``/
  ``multiply`` (of Python numbers too), a dense layer of ``nn.Parameter``s, ``nn.Sequential``,
  subclassed modules, autograd of x**2 and gradient descent by hand on ``torch.tensor([x])``;
- lab1 part 2 (PT_Part2_Music_Generation_Solution): the LSTM character model over ABC tunes
  (a few tunes held here in place of the dataset), ``get_batch``, the loss, Adam training with
  checkpoints, and generation by ``torch.multinomial`` (no audio);
- lab2 part 1 (PT_Part1_MNIST_Solution): the fully connected model and the CNN trained on
  small synthetic 28x28 digits in place of MNIST, evaluated, their predictions plotted;
- lab2 part 2 (PT_Part2_Debiasing_Solution): the CNN face classifier (``BatchNorm2d``,
  ``ReLU(inplace=True)``, ``BCEWithLogitsLoss``) and the DB-VAE (its decoder of
  ``ConvTranspose2d``s, the VAE and debiasing losses, the reparameterisation, the resampling
  probabilities from histograms of the latent means) on small synthetic faces in place of
  CelebA/ImageNet.

The ``mitdeeplearning`` package's parts they call (util.py's ``LossHistory`` and
``PeriodicPlotter``, lab1.py's ``load_training_data`` and ``extract_song_snippet``, lab2.py's
plots, ``TrainingDatasetLoader``, ``plot_sample``) are held as text, with ``torch`` replaced; stand-ins for ``torchvision`` (``datasets.MNIST``, ``transforms``),
``torchsummary``, ``tqdm``, ``h5py`` (the training file's arrays) and ``IPython``. Each changed line ends in ``# port:`` and says why: sizes and
epochs shrunk, comet_ml (an online logger) and audio dropped, one notebook line indented as its
block (the notebook's own IndentationError). Each notebook runs under torch (skipped without
it), then under tricycle, seeded and on the CPU: both print the same lines (numbers aside),
the models learn, and given torch's weights (``nn.from_torch``) the models give torch's
outputs, loss and gradients.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import re

import numpy as np
import pytest

from tests.helpers import Compose, module, package, run_cells, to_tensor, torch_and_tricycle
from tests.test_mlbook_ch16_19 import layers, normal, same_numbers

# mitdeeplearning/util.py, lab1.py and lab2.py: the parts the labs call
MDL = r'''
import os
import regex as re
import time
import numpy as np
import pytest
import matplotlib.pyplot as plt
import sys
import glob
import h5py  # port: a stand-in (the test's arrays)

TUNES = None  # port: the dataset (data/irish.abc) is the test's few tunes


class LossHistory:
    def __init__(self, smoothing_factor=0.0):
        self.alpha = smoothing_factor
        self.loss = []

    def append(self, value):
        self.loss.append(
            self.alpha * self.loss[-1] + (1 - self.alpha) * value
            if len(self.loss) > 0
            else value
        )

    def get(self):
        return self.loss


class PeriodicPlotter:
    def __init__(self, sec, xlabel="", ylabel="", scale=None):
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.sec = sec
        self.scale = scale

        self.tic = time.time()

    def plot(self, data):
        pass  # port: no live plots (test time; IPython's display)


def plot_sample(x, y, vae, backend='tf'):
    """Plot original and reconstructed images side by side.
    
    Args:
        x: Input images array of shape [B, H, W, C] (TF) or [B, C, H, W] (PT)
        y: Labels array of shape [B] where 1 indicates a face
        vae: VAE model (TensorFlow or PyTorch)
        framework: 'tf' or 'pt' indicating which framework to use
    """
    plt.figure(figsize=(2, 1))

    if backend == 'tf':
        idx = np.where(y == 1)[0][0]
        _, _, _, recon = vae(x)
        recon = np.clip(recon, 0, 1)

    elif backend == 'pt':
        import torch 
        y = y.detach().cpu().numpy()
        face_indices = np.where(y == 1)[0]
        idx = face_indices[0] if len(face_indices) > 0 else 0

        with torch.inference_mode():
            _, _, _, recon = vae(x)
        recon = torch.clamp(recon, 0, 1)
        recon = recon.permute(0, 2, 3, 1).detach().cpu().numpy()
        x = x.permute(0, 2, 3, 1).detach().cpu().numpy()

    else:
        raise ValueError("framework must be 'tf' or 'pt'")

    plt.subplot(1, 2, 1)
    plt.imshow(x[idx])
    plt.grid(False)

    plt.subplot(1, 2, 2) 
    plt.imshow(recon[idx])
    plt.grid(False)

    if backend == 'pt':
        plt.show()


def load_training_data():
    text = TUNES  # port: the test's tunes in place of data/irish.abc
    songs = extract_song_snippet(text)
    return songs


def extract_song_snippet(text):
    pattern = "(^|\n\n)(.*?)\n\n"
    search_results = re.findall(pattern, text, overlapped=True, flags=re.DOTALL)
    songs = [song[1] for song in search_results]
    print("Found {} songs in text".format(len(songs)))
    return songs


def plot_image_prediction(i, predictions_array, true_label, img):
    predictions_array, true_label, img = predictions_array[i], true_label[i], img[i]
    plt.grid(False)
    plt.xticks([])
    plt.yticks([])

    plt.imshow(np.squeeze(img), cmap=plt.cm.binary)

    predicted_label = np.argmax(predictions_array)
    if predicted_label == true_label:
        color = "blue"
    else:
        color = "red"

    plt.xlabel(
        "{} {:2.0f}% ({})".format(
            predicted_label, 100 * np.max(predictions_array), true_label
        ),
        color=color,
    )


def plot_value_prediction(i, predictions_array, true_label):
    predictions_array, true_label = predictions_array[i], true_label[i]
    plt.grid(False)
    plt.xticks([])
    plt.yticks([])
    thisplot = plt.bar(range(10), predictions_array, color="#777777")
    plt.ylim([0, 1])
    predicted_label = np.argmax(predictions_array)

    thisplot[predicted_label].set_color("red")
    thisplot[true_label].set_color("blue")


class TrainingDatasetLoader(object):
    def __init__(self, data_path, channels_last=True):
        print("Opening {}".format(os.path.basename(data_path)))  # port: the name (the folder differs per run)
        sys.stdout.flush()

        self.cache = h5py.File(data_path, "r")

        print("Loading data into memory...")
        sys.stdout.flush()
        self.images = self.cache["images"][:]
        self.channels_last = channels_last
        self.labels = self.cache["labels"][:].astype(np.float32)
        self.image_dims = self.images.shape
        n_train_samples = self.image_dims[0]

        self.train_inds = np.random.permutation(np.arange(n_train_samples))

        self.pos_train_inds = self.train_inds[self.labels[self.train_inds, 0] == 1.0]
        self.neg_train_inds = self.train_inds[self.labels[self.train_inds, 0] != 1.0]

    def get_train_size(self):
        return self.train_inds.shape[0]

    def get_train_steps_per_epoch(self, batch_size, factor=10):
        return self.get_train_size() // factor // batch_size

    def get_batch(self, n, only_faces=False, p_pos=None, p_neg=None, return_inds=False):
        if only_faces:
            selected_inds = np.random.choice(
                self.pos_train_inds, size=n, replace=False, p=p_pos
            )
        else:
            selected_pos_inds = np.random.choice(
                self.pos_train_inds, size=n // 2, replace=False, p=p_pos
            )
            selected_neg_inds = np.random.choice(
                self.neg_train_inds, size=n // 2, replace=False, p=p_neg
            )
            selected_inds = np.concatenate((selected_pos_inds, selected_neg_inds))

        sorted_inds = np.sort(selected_inds)
        train_img = (self.images[sorted_inds, :, :, ::-1] / 255.0).astype(np.float32)
        train_label = self.labels[sorted_inds, ...]

        if not self.channels_last:
            train_img = np.ascontiguousarray(
                np.transpose(train_img, (0, 3, 1, 2))
            )  # [B, H, W, C] -> [B, C, H, W]
        return (
            (train_img, train_label, sorted_inds)
            if return_inds
            else (train_img, train_label)
        )

    def get_n_most_prob_faces(self, prob, n):
        idx = np.argsort(prob)[::-1]
        most_prob_inds = self.pos_train_inds[idx[: 10 * n : 10]]
        return (self.images[most_prob_inds, ...] / 255.0).astype(np.float32)

    def get_all_train_faces(self):
        return self.images[self.pos_train_inds]


def get_test_faces(channels_last=True):
    images = {"LF": [], "LM": [], "DF": [], "DM": []}
    for key, shade in zip(images.keys(), (1.0, 0.9, 0.5, 0.4)):  # port: the test's faces in place of data/faces's PNGs (cv2)
        for face in FACES(5, shade):  # port: the test's faces
            image = face / 255.0  # port: the test's faces
            if not channels_last:
                image = np.transpose(image, (2, 0, 1))
            images[key].append(image)

    return images["LF"], images["LM"], images["DF"], images["DM"]
'''

# a few tunes in ABC notation, in the layout of data/irish.abc (songs apart by a blank line)
TUNES = """X:1
T:Alexander's
Z: id:dc-hornpipe-1
M:C|
L:1/8
K:D Major
(3ABc|dAFA DFAd|fdcd FAdf|gfge fefd|(3efe (3dcB A2 (3ABc|!
dAFA DFAd|fdcd FAdf|gfge fefd|(3efe dc d2:|!

X:2
T:An Buachaill Dreoite
Z: id:dc-hornpipe-2
M:C|
L:1/8
K:G Major
GF|DGGB d2GB|d2GF Gc (3AGF|DGGB d2GB|dBcA F2GF|!
DGGB d2GF|DGGF G2Ge|fgaf gbag|fdcA G2:|!

X:3
T:Belfast
Z: id:dc-hornpipe-3
M:C|
L:1/8
K:D Major
ag|(3faf df AdFA|DFAd f2ef|gbec dfAF|GABG E2ag|!
(3faf df AdFA|DFAd f2ef|gbec dfAF|EFGE D2:|!

X:4
T:Blackbird
Z: id:dc-setdance-1
M:C|
L:1/8
K:D Major
dc|B2AG FGAF|GFGA Bcde|fedc BAGF|E2E2 E2dc|!
B2AG FGAF|GFGA Bcde|fedc BAGF|E2D2 D2:|!

"""
PART1 = r"""
import torch
import torch.nn as nn

# Download and import the MIT Introduction to Deep Learning package
# !pip install mitdeeplearning --quiet  # port: installed by the test (a stand-in)
import mitdeeplearning as mdl

import numpy as np
import pytest
# import matplotlib.pyplot as plt  # port: the plot dropped (test time)
# %%
integer = torch.tensor(1234)
decimal = torch.tensor(3.14159265359)

print(f"`integer` is a {integer.ndim}-d Tensor: {integer}")
print(f"`decimal` is a {decimal.ndim}-d Tensor: {decimal}")
# %%
fibonacci = torch.tensor([1, 1, 2, 3, 5, 8])
count_to_100 = torch.tensor(range(100))

print(f"`fibonacci` is a {fibonacci.ndim}-d Tensor with shape: {fibonacci.shape}")
print(f"`count_to_100` is a {count_to_100.ndim}-d Tensor with shape: {count_to_100.shape}")
# %%
### Defining higher-order Tensors ###

'''TODO: Define a 2-d Tensor'''
matrix = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]) # TODO
# matrix = # TODO

assert isinstance(matrix, torch.Tensor), "matrix must be a torch Tensor object"
assert matrix.ndim == 2

'''TODO: Define a 4-d Tensor.'''
# Use torch.zeros to initialize a 4-d Tensor of zeros with size 10 x 3 x 256 x 256.
#   You can think of this as 10 images where each image is RGB 256 x 256.
images = torch.zeros(10, 3, 256, 256) # TODO
# images = # TODO

assert isinstance(images, torch.Tensor), "images must be a torch Tensor object"
assert images.ndim == 4, "images must have 4 dimensions"
assert images.shape == (10, 3, 256, 256), "images is incorrect shape"
print(f"images is a {images.ndim}-d Tensor with shape: {images.shape}")
# %%
row_vector = matrix[1]
column_vector = matrix[:, 1]
scalar = matrix[0, 1]

print(f"`row_vector`: {row_vector}")
print(f"`column_vector`: {column_vector}")
print(f"`scalar`: {scalar}")
# %%
# Create the nodes in the graph and initialize values
a = torch.tensor(15)
b = torch.tensor(61)

# Add them!
c1 = torch.add(a, b)
c2 = a + b  # PyTorch overrides the "+" operation so that it is able to act on Tensors
print(f"c1: {c1}")
print(f"c2: {c2}")
# %%
### Defining Tensor computations ###

# Construct a simple computation function
def func(a, b):
    '''TODO: Define the operation for c, d, e.'''
    c = torch.add(a, b)  # TODO
    # c = # TODO
    d = torch.subtract(b, 1)  # TODO
    # d = # TODO
    e = torch.multiply(c, d)  # TODO
    # e = # TODO
    return e
# %%
# Consider example values for a,b
a, b = 1.5, 2.5
# Execute the computation
e_out = func(a, b)
print(f"e_out: {e_out}")
# %%
### Defining a dense layer ###

# num_inputs: number of input nodes
# num_outputs: number of output nodes
# x: input to the layer

class OurDenseLayer(torch.nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(OurDenseLayer, self).__init__()
        # Define and initialize parameters: a weight matrix W and bias b
        # Note that the parameter initialize is random!
        self.W = torch.nn.Parameter(torch.randn(num_inputs, num_outputs))
        self.bias = torch.nn.Parameter(torch.randn(num_outputs))

    def forward(self, x):
        '''TODO: define the operation for z (hint: use torch.matmul).'''
        z = torch.matmul(x, self.W) + self.bias  # TODO
        # z = # TODO

        '''TODO: define the operation for out (hint: use torch.sigmoid).'''
        y = torch.sigmoid(z)  # TODO
        # y = # TODO
        return y
# %%
# Define a layer and test the output!
num_inputs = 2
num_outputs = 3
layer = OurDenseLayer(num_inputs, num_outputs)
x_input = torch.tensor([[1, 2.]])
y = layer(x_input)

print(f"input shape: {x_input.shape}")
print(f"output shape: {y.shape}")
print(f"output result: {y}")
# %%
### Defining a neural network using the PyTorch Sequential API ###

# define the number of inputs and outputs
n_input_nodes = 2
n_output_nodes = 3

# Define the model
'''TODO: Use the Sequential API to define a neural network with a
    single linear (dense!) layer, followed by non-linearity to compute z'''
# model = nn.Sequential( ''' TODO ''' )
model = nn.Sequential(
    # linear layer with input size 2 and output size 3
    nn.Linear(n_input_nodes, n_output_nodes),
    # Sigmoid activation function
    nn.Sigmoid()
)
# %%
# Test the model with example input
x_input = torch.tensor([[1, 2.]])
model_output = model(x_input)
print(f"input shape: {x_input.shape}")
print(f"output shape: {y.shape}")
print(f"output result: {y}")
# %%
### Defining a model using subclassing ###

class LinearWithSigmoidActivation(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(LinearWithSigmoidActivation, self).__init__()
        '''TODO: define a model with a single Linear layer and sigmoid activation.'''
        self.linear = nn.Linear(num_inputs, num_outputs)
        self.activation = nn.Sigmoid()
        # self.linear = '''TODO: linear layer'''
        # self.activation = '''TODO: sigmoid activation'''

    def forward(self, inputs):
        linear_output = self.linear(inputs)
        output = self.activation(linear_output)
        return output
# %%
n_input_nodes = 2
n_output_nodes = 3
model = LinearWithSigmoidActivation(n_input_nodes, n_output_nodes)
x_input = torch.tensor([[1, 2.]])
y = model(x_input)
print(f"input shape: {x_input.shape}")
print(f"output shape: {y.shape}")
print(f"output result: {y}")
# %%
### Custom behavior with subclassing nn.Module ###

class LinearButSometimesIdentity(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(LinearButSometimesIdentity, self).__init__()
        self.linear = nn.Linear(num_inputs, num_outputs)

    '''TODO: Implement the behavior where the network outputs the input, unchanged,
        under control of the isidentity argument.'''
    def forward(self, inputs, isidentity=False):
        if isidentity:
            return inputs  # TODO
        else:
            return self.linear(inputs) # TODO
    # def forward(self, inputs, isidentity=False):
      # TODO
# %%
# Test the IdentityModel
model = LinearButSometimesIdentity(num_inputs=2, num_outputs=3)
x_input = torch.tensor([[1, 2.]])

'''TODO: pass the input into the model and call with and without the input identity option.'''
out_with_linear = model(x_input)  # TODO
# out_with_linear = # TODO

out_with_identity = model(x_input, isidentity=True)  # TODO
# out_with_identity = # TODO

print(f"input: {x_input}")
print("Network linear output: {}; network identity output: {}".format(out_with_linear, out_with_identity))
# %%
### Gradient computation ###

# y = x^2
# Example: x = 3.0
x = torch.tensor(3.0, requires_grad=True)
y = x ** 2
y.backward()  # Compute the gradient

dy_dx = x.grad
print("dy_dx of y=x^2 at x=3.0 is: ", dy_dx)
assert dy_dx == 6.0
# %%
### Function minimization with autograd and gradient descent ###

# Initialize a random value for our intial x
x = torch.randn(1)
print(f"Initializing x={x.item()}")

learning_rate = 1e-2  # Learning rate
history = []
x_f = 4  # Target value


# We will run gradient descent for a number of iterations. At each iteration, we compute the loss,
#   compute the derivative of the loss with respect to x, and perform the update.
for i in range(500):
    x = torch.tensor([x], requires_grad=True)

    # Compute the loss as the square of the difference between x and x_f
    loss = (x - x_f) ** 2  # TODO
    # loss = # TODO

    # Backpropagate through the loss to compute gradients
    loss.backward()

    # Update x with gradient descent
    x = x.item() - learning_rate * x.grad

    history.append(x.item())

# Plot the evolution of x as we optimize toward x_f!
# plt.plot(history)  # port: the plot dropped (test time)
# plt.plot([0, 500], [x_f, x_f])  # port: the plot dropped
# plt.legend(('Predicted', 'True'))  # port: the plot dropped
# plt.xlabel('Iteration')  # port: the plot dropped
# plt.ylabel('x value')  # port: the plot dropped
# plt.show()  # port: the plot dropped
"""
MUSIC = r"""
# !pip install comet_ml > /dev/null 2>&1  # port: comet_ml dropped (an online logger)
# import comet_ml  # port: comet_ml dropped
# TODO: ENTER YOUR API KEY HERE!! instructions above
COMET_API_KEY = ""

# Import PyTorch and other relevant libraries
import torch
import torch.nn as nn
import torch.optim as optim

# Download and import the MIT Introduction to Deep Learning package
# !pip install mitdeeplearning --quiet  # port: installed by the test (a stand-in)
import mitdeeplearning as mdl

# Import all remaining packages
import numpy as np
import pytest
import os
import time
import functools
# from IPython import display as ipythondisplay  # port: no audio
from tqdm import tqdm
# from scipy.io.wavfile import write  # port: no audio
# !apt-get install abcmidi timidity > /dev/null 2>&1  # port: no audio


# Check that we are using a GPU, if not switch runtimes
#   using Runtime > Change Runtime Type > GPU
# assert torch.cuda.is_available(), "Please enable GPU from runtime settings"  # port: on the CPU
# assert COMET_API_KEY != "", "Please insert your Comet API Key"  # port: comet_ml dropped
# %%
# Download the dataset
songs = mdl.lab1.load_training_data()

# Print one of the songs to inspect it in greater detail!
example_song = songs[0]
print("\nExample song: ")
print(example_song)
# %%
# Convert the ABC notation to audio file and listen to it
# mdl.lab1.play_song(example_song)  # port: no audio
# %%
# Join our list of song strings into a single string containing all songs
songs_joined = "\n\n".join(songs)

# Find all unique characters in the joined string
vocab = sorted(set(songs_joined))
print("There are", len(vocab), "unique characters in the dataset")
# %%
### Define numerical representation of text ###

# Create a mapping from character to unique index.
# For example, to get the index of the character "d",
#   we can evaluate `char2idx["d"]`.
char2idx = {u: i for i, u in enumerate(vocab)}

# Create a mapping from indices to characters. This is
#   the inverse of char2idx and allows us to convert back
#   from unique index to the character in our vocabulary.
idx2char = np.array(vocab)
# %%
print('{')
for char, _ in zip(char2idx, range(20)):
    print('  {:4s}: {:3d},'.format(repr(char), char2idx[char]))
print('  ...\n}')
# %%
### Vectorize the songs string ###

'''TODO: Write a function to convert the all songs string to a vectorized
    (i.e., numeric) representation. Use the appropriate mapping
    above to convert from vocab characters to the corresponding indices.

  NOTE: the output of the `vectorize_string` function
  should be a np.array with `N` elements, where `N` is
  the number of characters in the input string
'''
def vectorize_string(string):
  vectorized_output = np.array([char2idx[char] for char in string])
  return vectorized_output

# def vectorize_string(string):
  # TODO

vectorized_songs = vectorize_string(songs_joined)
# %%
print ('{} ---- characters mapped to int ----> {}'.format(repr(songs_joined[:10]), vectorized_songs[:10]))
# check that vectorized_songs is a numpy array
assert isinstance(vectorized_songs, np.ndarray), "returned result should be a numpy array"
# %%
### Batch definition to create training examples ###

def get_batch(vectorized_songs, seq_length, batch_size):
    # the length of the vectorized songs string
    n = vectorized_songs.shape[0] - 1
    # randomly choose the starting indices for the examples in the training batch
    idx = np.random.choice(n - seq_length, batch_size)

    '''TODO: construct a list of input sequences for the training batch'''
    input_batch = [vectorized_songs[i: i + seq_length] for i in idx]

    '''TODO: construct a list of output sequences for the training batch'''
    output_batch = [vectorized_songs[i + 1: i + seq_length + 1] for i in idx]

    # Convert the input and output batches to tensors
    x_batch = torch.tensor(input_batch, dtype=torch.long)
    y_batch = torch.tensor(output_batch, dtype=torch.long)

    return x_batch, y_batch

# Perform some simple tests to make sure your batch function is working properly!
test_args = (vectorized_songs, 10, 2)
x_batch, y_batch = get_batch(*test_args)
assert x_batch.shape == (2, 10), "x_batch shape is incorrect"
assert y_batch.shape == (2, 10), "y_batch shape is incorrect"
print("Batch function works correctly!")
# %%
x_batch, y_batch = get_batch(vectorized_songs, seq_length=5, batch_size=1)

for i, (input_idx, target_idx) in enumerate(zip(x_batch[0], y_batch[0])):
    print("Step {:3d}".format(i))
    print("  input: {} ({:s})".format(input_idx, repr(idx2char[input_idx.item()])))
    print("  expected output: {} ({:s})".format(target_idx, repr(idx2char[target_idx.item()])))
# %%
### Defining the RNN Model ###

'''TODO: Add LSTM and Linear layers to define the RNN model using nn.Module'''
class LSTMModel(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_size):
        super(LSTMModel, self).__init__()
        self.hidden_size = hidden_size

        # Define each of the network layers
        # Layer 1: Embedding layer to transform indices into dense vectors
        #   of a fixed embedding size
        self.embedding = nn.Embedding(vocab_size, embedding_dim)

        # Layer 2: LSTM with hidden_size `hidden_size`. note: number of layers defaults to 1.
        # TODO: Use the nn.LSTM() module from pytorch.
        self.lstm = nn.LSTM(embedding_dim, hidden_size, batch_first=True)
        # self.lstm = nn.LSTM('''TODO''')

        # Layer 3: Linear (fully-connected) layer that transforms the LSTM output
        #   into the vocabulary size.
        # TODO: Add the Linear layer.
        self.fc = nn.Linear(hidden_size, vocab_size)
        # self.fc = nn.Linear('''TODO''')

    def init_hidden(self, batch_size, device):
        # Initialize hidden state and cell state with zeros
        return (torch.zeros(1, batch_size, self.hidden_size).to(device),
                torch.zeros(1, batch_size, self.hidden_size).to(device))

    def forward(self, x, state=None, return_state=False):
        x = self.embedding(x)

        if state is None:
            state = self.init_hidden(x.size(0), x.device)
        out, state = self.lstm(x, state)

        out = self.fc(out)
        return out if not return_state else (out, state)
# %%
# Instantiate the model! Build a simple model with default hyperparameters. You
#     will get the chance to change these later.
vocab_size = len(vocab)
embedding_dim = 16  # port: 256 shrunk (test time)
hidden_size = 32  # port: 1024 shrunk (test time)
batch_size = 8

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

model = LSTMModel(vocab_size, embedding_dim, hidden_size).to(device)

# print out a summary of the model
print(model)
# %%
# Test the model with some sample data
x, y = get_batch(vectorized_songs, seq_length=100, batch_size=32)
x = x.to(device)
y = y.to(device)

pred = model(x)
print("Input shape:      ", x.shape, " # (batch_size, sequence_length)")
print("Prediction shape: ", pred.shape, "# (batch_size, sequence_length, vocab_size)")
# %%
sampled_indices = torch.multinomial(torch.softmax(pred[0], dim=-1), num_samples=1)
sampled_indices = sampled_indices.squeeze(-1).cpu().numpy()
sampled_indices
# %%
print("Input: \n", repr("".join(idx2char[x[0].cpu()])))
print()
print("Next Char Predictions: \n", repr("".join(idx2char[sampled_indices])))
# %%
### Defining the loss function ###

# '''TODO: define the compute_loss function to compute and return the loss between
#     the true labels and predictions (logits). '''
cross_entropy = nn.CrossEntropyLoss() # instantiates the function
def compute_loss(labels, logits):
    '''
    Inputs:
      labels: (batch_size, sequence_length)
      logits: (batch_size, sequence_length, vocab_size)

    Output:
      loss: scalar cross entropy loss over the batch and sequence length
    '''  # port: quoted with ''' (the test holds the notebook in a string quoted with three ")

    # Batch the labels so that the shape of the labels should be (B * L,)
    batched_labels = labels.view(-1)

    ''' TODO: Batch the logits so that the shape of the logits should be (B * L, V) '''
    batched_logits = logits.view(-1, logits.size(-1))
    # batched_logits = ''' TODO ''' # TODO  # port: quoted with '''

    '''TODO: Compute the cross-entropy loss using the batched  next characters and predictions'''
    loss = cross_entropy(batched_logits, batched_labels)
    # loss = ''' TODO ''' # TODO  # port: quoted with '''
    return loss
# %%
### compute the loss on the predictions from the untrained model from earlier. ###
y.shape  # (batch_size, sequence_length)
pred.shape  # (batch_size, sequence_length, vocab_size)

'''TODO: compute the loss using the true next characters from the example batch
    and the predictions from the untrained model several cells above'''
example_batch_loss = compute_loss(y, pred)
# example_batch_loss = compute_loss('''TODO''', '''TODO''') # TODO

print(f"Prediction shape: {pred.shape} # (batch_size, sequence_length, vocab_size)")
print(f"scalar_loss:      {example_batch_loss.mean().item()}")
# %%
### Hyperparameter setting and optimization ###

vocab_size = len(vocab)

# Model parameters:
params = dict(
  num_training_iterations = 40,  # Increase this to train longer  # port: 3000 shrunk (test time)
  batch_size = 8,  # Experiment between 1 and 64
  seq_length = 30,  # Experiment between 50 and 500  # port: 100 shrunk (test time)
  learning_rate = 5e-3,  # Experiment between 1e-5 and 1e-1
  embedding_dim = 16,  # port: 256 shrunk (test time)
  hidden_size = 32,  # Experiment between 1 and 2048  # port: 1024 shrunk (test time)
)

# Checkpoint location:
checkpoint_dir = './training_checkpoints'
checkpoint_prefix = os.path.join(checkpoint_dir, "my_ckpt")
os.makedirs(checkpoint_dir, exist_ok=True)
# %%
### Create a Comet experiment to track our training run ###
# port: comet_ml dropped (an online logger): create_experiment's cell left out
# %%
### Define optimizer and training operation ###

'''TODO: instantiate a new LSTMModel model for training using the hyperparameters
    created above.'''
model = LSTMModel(vocab_size, params["embedding_dim"], params["hidden_size"])
# model = LSTMModel('''TODO: arguments''')

# Move the model to the GPU
model.to(device)

'''TODO: instantiate an optimizer with its learning rate.
  Checkout the PyTorch website for a list of supported optimizers.
  https://pytorch.org/docs/stable/optim.html
  Try using the Adam optimizer to start.'''
optimizer = torch.optim.Adam(model.parameters(), lr=params["learning_rate"])
# optimizer = # TODO

def train_step(x, y):
  # Set the model's mode to train
  model.train()

  # Zero gradients for every step
  optimizer.zero_grad()

  # Forward pass
  '''TODO: feed the current input into the model and generate predictions'''
  y_hat = model(x) # TODO
  # y_hat = model('''TODO''')

  # Compute the loss
  '''TODO: compute the loss!'''
  loss = compute_loss(y, y_hat) # TODO
  # loss = compute_loss('''TODO''', '''TODO''')

  # Backward pass
  '''TODO: complete the gradient computation and update step.
    Remember that in PyTorch there are two steps to the training loop:
    1. Backpropagate the loss
    2. Update the model parameters using the optimizer
  '''
  loss.backward() # TODO
  optimizer.step() # TODO

  return loss

##################
# Begin training!#
##################

history = []
plotter = mdl.util.PeriodicPlotter(sec=2, xlabel='Iterations', ylabel='Loss')
# experiment = create_experiment()  # port: comet_ml dropped

if hasattr(tqdm, '_instances'): tqdm._instances.clear() # clear if it exists
for iter in tqdm(range(params["num_training_iterations"])):

    # Grab a batch and propagate it through the network
    x_batch, y_batch = get_batch(vectorized_songs, params["seq_length"], params["batch_size"])

    # Convert numpy arrays to PyTorch tensors
    x_batch = torch.tensor(x_batch, dtype=torch.long).to(device)
    y_batch = torch.tensor(y_batch, dtype=torch.long).to(device)

    # Take a train step
    loss = train_step(x_batch, y_batch)

    # Log the loss to the Comet interface
    # experiment.log_metric("loss", loss.item(), step=iter)  # port: comet_ml dropped

    # Update the progress bar and visualize within notebook
    history.append(loss.item())
    plotter.plot(history)

    # Save model checkpoint
    if iter % 100 == 0:
        torch.save(model.state_dict(), checkpoint_prefix)

# Save the final trained model
torch.save(model.state_dict(), checkpoint_prefix)
# experiment.flush()  # port: comet_ml dropped
# %%
### Prediction of a generated song ###

def generate_text(model, start_string, generation_length=1000):
  # Evaluation step (generating ABC text using the learned RNN model)

  '''TODO: convert the start string to numbers (vectorize)'''
  input_idx = [char2idx[s] for s in start_string] # TODO
  # input_idx = ['''TODO''']
  input_idx = torch.tensor([input_idx], dtype=torch.long).to(device)

  # Initialize the hidden state
  state = model.init_hidden(input_idx.size(0), device)

  # Empty string to store our results
  text_generated = []
  tqdm._instances.clear()

  for i in tqdm(range(generation_length)):
    '''TODO: evaluate the inputs and generate the next character predictions'''
    predictions, state = model(input_idx, state, return_state=True)
    # predictions, hidden_state = model('''TODO''', '''TODO''', return_state=True)

    # Remove the batch dimension
    predictions = predictions.squeeze(0)

    '''TODO: use a multinomial distribution to sample over the probabilities'''
    input_idx = torch.multinomial(torch.softmax(predictions, dim=-1), num_samples=1)
    # input_idx = torch.multinomial('''TODO''', dim=-1), num_samples=1)

    '''TODO: add the predicted character to the generated text!'''
    # Hint: consider what format the prediction is in vs. the output
    text_generated.append(idx2char[input_idx].item()) # TODO
    # text_generated.append('''TODO''')


  return (start_string + ''.join(text_generated))
# %%
'''TODO: Use the model and the function defined above to generate ABC format text of length 1000!
    As you may notice, ABC files start with "X" - this may be a good start string.'''
generated_text = generate_text(model, start_string="X", generation_length=200) # TODO  # port: 1000 shrunk (test time)
# generated_text = generate_text('''TODO''', '''TODO''', '''TODO''')
# %%
### Play back generated songs ###

generated_songs = mdl.lab1.extract_song_snippet(generated_text)

# port: no audio (abc2wav, timidity): the songs are not played
# %%
# when done, end the comet experiment
# experiment.end()  # port: comet_ml dropped
"""
MNIST = r"""
# Import PyTorch and other relevant libraries
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
from torchsummary import summary

# MIT introduction to deep learning package
# !pip install mitdeeplearning --quiet  # port: installed by the test (a stand-in)
import mitdeeplearning as mdl

# other packages
import matplotlib.pyplot as plt
import numpy as np
import pytest
import random
from tqdm import tqdm
# %%
# !pip install comet_ml > /dev/null 2>&1  # port: comet_ml dropped (an online logger)
# import comet_ml  # port: comet_ml dropped
# TODO: ENTER YOUR API KEY HERE!!
COMET_API_KEY = ""

# Check that we are using a GPU, if not switch runtimes
#   using Runtime > Change Runtime Type > GPU
# assert torch.cuda.is_available(), "Please enable GPU from runtime settings"  # port: on the CPU
# assert COMET_API_KEY != "", "Please insert your Comet API Key"  # port: comet_ml dropped

# Set GPU for computation
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# %%
# start a first comet experiment for the first part of the lab
# comet_ml.init(project_name="6S191_lab2_part1_NN")  # port: comet_ml dropped
# comet_model_1 = comet_ml.Experiment()  # port: comet_ml dropped
# %%
# Download and transform the MNIST dataset
transform = transforms.Compose([
    # Convert images to PyTorch tensors which also scales data from [0,255] to [0,1]
    transforms.ToTensor()
])

# Download training and test datasets
train_dataset = datasets.MNIST(root='./data', train=True, download=True, transform=transform)
test_dataset = datasets.MNIST(root='./data', train=False, download=True, transform=transform)
# %%
image, label = train_dataset[0]
print(image.size())  # For a tensor: torch.Size([1, 28, 28])
print(label)  # For a label: integer (e.g., 5)
# %%
# port: the cell plotting 36 digits dropped (test time)
# %%
def build_fc_model():
    fc_model = nn.Sequential(
        # First define a Flatten layer
        nn.Flatten(),

        nn.Linear(28 * 28, 128),
        # '''TODO: Define the activation function.'''
        nn.ReLU(),

        # '''TODO: Define the second Linear layer'''
        nn.Linear(128, 10),
        )
    return fc_model

fc_model_sequential = build_fc_model()
# %%
# Define the fully connected model
class FullyConnectedModel(nn.Module):
    def __init__(self):
        super(FullyConnectedModel, self).__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(28 * 28, 128)

        # '''TODO: Define the activation function for the first fully connected layer'''
        self.relu = nn.ReLU()

        # '''TODO: Define the second Linear layer to output the classification probabilities'''
        self.fc2 = nn.Linear(128, 10)
        # self.fc2 = # TODO

    def forward(self, x):
        x = self.flatten(x)
        x = self.fc1(x)

        # '''TODO: Implement the rest of forward pass of the model using the layers you have defined above'''
        x = self.relu(x)
        x = self.fc2(x)
        # '''TODO'''

        return x

fc_model = FullyConnectedModel().to(device) # send the model to GPU
# %%
'''TODO: Experiment with different optimizers and learning rates. How do these affect
    the accuracy of the trained model? Which optimizers and/or learning rates yield
    the best performance?'''
# Define loss function and optimizer
loss_function = nn.CrossEntropyLoss()
optimizer = optim.SGD(fc_model.parameters(), lr=0.1)
# %%
# Create DataLoaders for batch processing
BATCH_SIZE = 64
trainset_loader = DataLoader(train_dataset, batch_size=BATCH_SIZE, shuffle=True)
testset_loader = DataLoader(test_dataset, batch_size=BATCH_SIZE, shuffle=False)
# %%
def train(model, dataloader, criterion, optimizer, epochs):
    model.train()  # Set the model to training mode
    for epoch in range(epochs):
        total_loss = 0
        correct_pred = 0
        total_pred = 0

        for images, labels in trainset_loader:
            # Move tensors to GPU so compatible with model
            images, labels = images.to(device), labels.to(device)
            # Clear gradients before performing backward pass
            optimizer.zero_grad()
            # Forward pass
            outputs = fc_model(images)
            # Calculate loss based on model predictions
            loss = loss_function(outputs, labels)
            # Backpropagate and update model parameters
            loss.backward()
            optimizer.step()
            # multiply loss by total nos. of samples in batch
            total_loss += loss.item()*images.size(0)

            # Calculate accuracy
            predicted = torch.argmax(outputs, dim=1)  # Get predicted class
            correct_pred += (predicted == labels).sum().item()  # Count correct predictions
            total_pred += labels.size(0) # Count total predictions

        # Compute metrics
        total_epoch_loss = total_loss / total_pred
        epoch_accuracy = correct_pred / total_pred
        print(f"Epoch {epoch + 1}, Loss: {total_epoch_loss}, Accuracy: {epoch_accuracy:.4f}")
# %%
# TODO: Train the model by calling the function appropriately
EPOCHS = 3  # port: 5 shrunk (test time)
train(fc_model, trainset_loader, loss_function, optimizer, EPOCHS)
# train('''TODO''') # TODO

# comet_model_1.end()  # port: comet_ml dropped
# %%
'''TODO: Use the model we have defined in its eval state to complete
and call the evaluate function, and calculate the accuracy of the model'''

def evaluate(model, dataloader, loss_function):
    # Evaluate model performance on the test dataset
    model.eval()
    test_loss = 0
    correct_pred = 0
    total_pred = 0
    # Disable gradient calculations when in inference mode
    with torch.no_grad():
        for images, labels in testset_loader:
            # TODO: ensure evalaution happens on the GPU
            images, labels = images.to(device), labels.to(device)
            # images, labels = # TODO

            # TODO: feed the images into the model and obtain the predictions (forward pass)
            outputs = model(images)
            # outputs = # TODO

            loss = loss_function(outputs, labels)

            # TODO: Calculate test loss
            test_loss += loss.item() * images.size(0)
            # test_loss += # TODO

            '''TODO: make a prediction and determine whether it is correct!'''  # port: indented as its block (the notebook's 11 spaces are an IndentationError)
            # TODO: identify the digit with the highest probability prediction for the images in the test dataset.
            predicted = torch.argmax(outputs, dim=1)
            # predicted = # TODO

            # TODO: tally the number of correct predictions
            correct_pred += (predicted == labels).sum().item()
            # correct_pred += TODO
            # TODO: tally the total number of predictions
            total_pred += labels.size(0)
            # total_pred += TODO

    # Compute average loss and accuracy
    test_loss /= total_pred
    test_acc = correct_pred / total_pred
    return test_loss, test_acc

# TODO: call the evaluate function to evaluate the trained model!!
test_loss, test_acc = evaluate(fc_model, trainset_loader, loss_function)
# test_loss, test_acc = # TODO

print('Test accuracy:', test_acc)
# %%
### Basic CNN in PyTorch ###

class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        # TODO: Define the first convolutional layer
        self.conv1 = nn.Conv2d(1, 24, kernel_size=3)
        # self.conv1 = # TODO

        # TODO: Define the first max pooling layer
        self.pool1 = nn.MaxPool2d(kernel_size=2)
        # self.pool1 = # TODO

        # TODO: Define the second convolutional layer
        self.conv2 = nn.Conv2d(24, 36, kernel_size=3)
        # self.conv2 = # TODO

        # TODO: Define the second max pooling layer
        self.pool2 = nn.MaxPool2d(kernel_size=2)
        # self.pool2 = # TODO

        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(36 * 5 * 5, 128)
        self.relu = nn.ReLU()

        # TODO: Define the Linear layer that outputs the classification
        # logits over class labels. Remember that CrossEntropyLoss operates over logits.
        self.fc2 = nn.Linear(128, 10)
        # self.fc2 = # TODO


    def forward(self, x):
        # First convolutional and pooling layers
        x = self.conv1(x)
        x = self.relu(x)
        x = self.pool1(x)

        # '''TODO: Implement the rest of forward pass of the model using the layers you have defined above'''
        #     '''hint: this will involve another set of convolutional/pooling layers and then the linear layers'''
        x = self.conv2(x)
        x = self.relu(x)
        x = self.pool2(x)

        x = self.flatten(x)
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)

        return x

# Instantiate the model
cnn_model = CNN().to(device)
# Initialize the model by passing some data through
image, label = train_dataset[0]
image = image.to(device).unsqueeze(0)  # Add batch dimension → Shape: (1, 1, 28, 28)
output = cnn_model(image)
# Print the model summary
print(cnn_model)
# %%
# Rebuild the CNN model
cnn_model = CNN().to(device)

# Define hyperparams
batch_size = 64
epochs = 2  # port: 7 shrunk (test time)
optimizer = optim.SGD(cnn_model.parameters(), lr=1e-1)  # port: 1e-2 raised (a few steps)

# TODO: instantiate the cross entropy loss function
loss_function = nn.CrossEntropyLoss()
# loss_function = # TODO

# Redefine trainloader with new batch size parameter (tweak as see fit if optimizing)
trainset_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=True)
testset_loader = DataLoader(test_dataset, batch_size=batch_size, shuffle=False)
# %%
loss_history = mdl.util.LossHistory(smoothing_factor=0.95) # to record the evolution of the loss
plotter = mdl.util.PeriodicPlotter(sec=2, xlabel='Iterations', ylabel='Loss', scale='semilogy')

# Initialize new comet experiment
# comet_ml.init(project_name="6.s191lab2_part1_CNN")  # port: comet_ml dropped
# comet_model_2 = comet_ml.Experiment()  # port: comet_ml dropped

if hasattr(tqdm, '_instances'): tqdm._instances.clear() # clear if it exists

# Training loop!
cnn_model.train()

for epoch in range(epochs):
    total_loss = 0
    correct_pred = 0
    total_pred = 0

    # First grab a batch of training data which our data loader returns as a tensor
    for idx, (images, labels) in enumerate(tqdm(trainset_loader)):
        images, labels = images.to(device), labels.to(device)

        # Forward pass
        #'''TODO: feed the images into the model and obtain the predictions'''
        logits = cnn_model(images)
        # logits = # TODO

        #'''TODO: compute the categorical cross entropy loss
        loss = loss_function(logits, labels)
        # loss = # TODO
        # Get the loss and log it to comet and the loss_history record
        loss_value = loss.item()
        # comet_model_2.log_metric("loss", loss_value, step=idx)  # port: comet_ml dropped
        loss_history.append(loss_value) # append the loss to the loss_history record
        plotter.plot(loss_history.get())

        # Backpropagation/backward pass
        '''TODO: Compute gradients for all model parameters and propagate backwads
            to update model parameters. remember to reset your optimizer!'''
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        # Get the prediction and tally metrics
        predicted = torch.argmax(logits, dim=1)
        correct_pred += (predicted == labels).sum().item()
        total_pred += labels.size(0)

    # Compute metrics
    total_epoch_loss = total_loss / total_pred
    epoch_accuracy = correct_pred / total_pred
    print(f"Epoch {epoch + 1}, Loss: {total_epoch_loss}, Accuracy: {epoch_accuracy:.4f}")

# comet_model_2.log_figure(figure=plt)  # port: comet_ml dropped
# %%
'''TODO: Evaluate the CNN model!'''

test_loss, test_acc = evaluate(cnn_model, trainset_loader, loss_function)
# test_loss, test_acc = # TODO

print('Test accuracy:', test_acc)
# %%
test_image, test_label = test_dataset[0]
test_image = test_image.to(device).unsqueeze(0)

# put the model in evaluation (inference) mode
cnn_model.eval()
predictions_test_image = cnn_model(test_image)
# %%
'''TODO: identify the digit with the highest likelihood prediction for the first
    image in the test dataset. '''
predictions_value = predictions_test_image.cpu().detach().numpy() #.cpu() to copy tensor to memory first
prediction = np.argmax(predictions_value)
# prediction = # TODO
print(prediction)
# %%
print("Label of this digit is:", test_label)
plt.imshow(test_image[0,0,:,:].cpu(), cmap=plt.cm.binary)
# comet_model_2.log_figure(figure=plt)  # port: comet_ml dropped
# %%
# Initialize variables to store all data
all_predictions = []
all_labels = []
all_images = []

# Process test set in batches
with torch.no_grad():
    for images, labels in testset_loader:
        outputs = cnn_model(images)

        # Apply softmax to get probabilities from the predicted logits
        probabilities = torch.nn.functional.softmax(outputs, dim=1)

        # Get predicted classes
        predicted = torch.argmax(probabilities, dim=1)

        all_predictions.append(probabilities)
        all_labels.append(labels)
        all_images.append(images)

all_predictions = torch.cat(all_predictions)  # Shape: (total_samples, num_classes)
all_labels = torch.cat(all_labels)            # Shape: (total_samples,)
all_images = torch.cat(all_images)            # Shape: (total_samples, 1, 28, 28)

# Convert tensors to NumPy for compatibility with plotting functions
predictions = all_predictions.cpu().numpy()  # Shape: (total_samples, num_classes)
test_labels = all_labels.cpu().numpy()       # Shape: (total_samples,)
test_images = all_images.cpu().numpy()       # Shape: (total_samples, 1, 28, 28)
# %%
#@title Change the slider to look at the model's predictions! { run: "auto" }

image_index = 79 #@param {type:"slider", min:0, max:100, step:1}
plt.subplot(1,2,1)
mdl.lab2.plot_image_prediction(image_index, predictions, test_labels, test_images)
plt.subplot(1,2,2)
mdl.lab2.plot_value_prediction(image_index, predictions, test_labels)
# comet_model_2.log_figure(figure=plt)  # port: comet_ml dropped
# %%
# port: the grid of 20 predictions (the last cell) dropped (test time)
"""

# (''' is written \'\'\' in this string: the test puts the quotes back)
DEBIAS = r'''
import IPython

IPython.display.YouTubeVideo("59bMh59JQDo")
# %%
## Comet ML
# !pip install comet_ml --quiet  # port: comet_ml dropped (an online logger)
# import comet_ml  # port: comet_ml dropped

# TODO: ENTER YOUR API KEY HERE!! instructions above
COMET_API_KEY = ""
# assert COMET_API_KEY != "", "Please insert your Comet API Key"  # port: comet_ml dropped

# MIT introduction to deep learning package
# !pip install mitdeeplearning --quiet  # port: installed by the test (a stand-in)
import mitdeeplearning as mdl
# %%
import os
import random
import IPython
import functools
import matplotlib.pyplot as plt
import numpy as np
import pytest
from tqdm import tqdm
from pathlib import Path

# Import torch
import torch
import torch.nn as nn
import torch.optim as optim
import torch.nn.functional as F
import torch.backends.cudnn as cudnn


# Check that we are using a GPU, if not switch runtimes
#   using Runtime > Change Runtime Type > GPU
if torch.cuda.is_available():
    device = torch.device("cuda")
    cudnn.benchmark = True
else:
  device = torch.device("cpu")  # port: on the CPU (the notebook raises ValueError without a GPU)
# %%
CACHE_DIR = Path.home() / ".cache" / "mitdeeplearning"
CACHE_DIR.mkdir(parents=True, exist_ok=True)

# Get the training data: both images from CelebA and ImageNet
path_to_training_data = CACHE_DIR.joinpath("train_face.h5")

# Create a simple check to avoid re-downloading
if path_to_training_data.is_file():
    print(f"Using cached training data from {path_to_training_data.name}")  # port: the name (the folder differs per run)
else:
    print(f"Downloading training data to {path_to_training_data}")
    url = "https://www.dropbox.com/s/hlz8atheyozp1yx/train_face.h5?dl=1"
    torch.hub.download_url_to_file(url, path_to_training_data)

# Instantiate a TrainingDatasetLoader using the downloaded dataset
channels_last = False
loader = mdl.lab2.TrainingDatasetLoader(
    path_to_training_data, channels_last=channels_last
)
# %%
number_of_training_examples = loader.get_train_size()
(images, labels) = loader.get_batch(100)
# %%
B, C, H, W = images.shape
# %%
### Examining the CelebA training dataset ###

# @title Change the sliders to look at positive and negative training examples! { run: "auto" }

face_images = images[np.where(labels == 1)[0]].transpose(0, 2, 3, 1)
not_face_images = images[np.where(labels == 0)[0]].transpose(0, 2, 3, 1)

idx_face = 23  # @param {type:"slider", min:0, max:50, step:1}
idx_not_face = 9  # @param {type:"slider", min:0, max:50, step:1}

plt.figure(figsize=(5, 5))
plt.subplot(1, 2, 1)
plt.imshow(face_images[idx_face])
plt.title("Face")
plt.grid(False)

plt.subplot(1, 2, 2)
plt.imshow(not_face_images[idx_not_face])
plt.title("Not Face")
plt.grid(False)
# %%
### Define the CNN model ###

n_filters = 12  # base number of convolutional filters
in_channels = images.shape[1]

def make_standard_classifier(n_outputs):
  """Create a standard CNN classifier."""

  # Start by first defining a convolutional block
  class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)
        self.relu = nn.ReLU(inplace=True)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.relu(x)
        x = self.bn(x)
        return x

  # now use the block to define the classifier
  model = nn.Sequential(
      ConvBlock(in_channels, n_filters, kernel_size=5, stride=2, padding=2),
      ConvBlock(n_filters, 2*n_filters, kernel_size=5, stride=2, padding=2),
      ConvBlock(2*n_filters, 4*n_filters, kernel_size=3, stride=2, padding=1),
      ConvBlock(4*n_filters, 6*n_filters, kernel_size=3, stride=2, padding=1),
      nn.Flatten(),
      nn.Linear(H // 16 * W // 16 * 6 * n_filters, 512),
      nn.ReLU(inplace=True),
      nn.Linear(512, n_outputs),
  )

  return model.to(device)

# call the function to instantiate a classifier model
standard_classifier = make_standard_classifier(n_outputs=1)
print(standard_classifier)
# %%
### Create a Comet experiment to track our training run ###
# port: comet_ml dropped (an online logger): create_experiment's cell left out
# %%
### Train the standard CNN ###
loss_fn = nn.BCEWithLogitsLoss()
# Training hyperparameters
params = dict(
    batch_size=32,
    num_epochs=2,  # keep small to run faster
    learning_rate=5e-4,
)

# experiment = create_experiment("6S191_Lab2_Part2_CNN", params)  # port: comet_ml dropped

optimizer = optim.Adam(
    standard_classifier.parameters(), lr=params["learning_rate"]
)  # define our optimizer
loss_history = mdl.util.LossHistory(smoothing_factor=0.99)  # to record loss evolution
plotter = mdl.util.PeriodicPlotter(sec=2, scale="semilogy")
if hasattr(tqdm, "_instances"):
    tqdm._instances.clear()  # clear if it exists

# set the model to train mode
standard_classifier.train()


def standard_train_step(x, y):
    x = torch.from_numpy(x).float().to(device)
    y = torch.from_numpy(y).float().to(device)

    # clear the gradients
    optimizer.zero_grad()

    # feed the images into the model
    logits = standard_classifier(x)
    # Compute the loss
    loss = loss_fn(logits, y)

    # Backpropagation
    loss.backward()
    optimizer.step()

    return loss


# The training loop!
step = 0
for epoch in range(params["num_epochs"]):
    for idx in tqdm(range(loader.get_train_size() // params["batch_size"])):
        # Grab a batch of training data and propagate through the network
        x, y = loader.get_batch(params["batch_size"])
        loss = standard_train_step(x, y)
        loss_value = loss.detach().cpu().numpy()

        # Record the loss and plot the evolution of the loss as a function of training
        loss_history.append(loss_value)
        plotter.plot(loss_history.get())

        # experiment.log_metric("loss", loss_value, step=step)  # port: comet_ml dropped
        step += 1

# experiment.end()  # port: comet_ml dropped
# %%
### Evaluation of standard CNN ###

# set the model to eval mode
standard_classifier.eval()

# TRAINING DATA
# Evaluate on a subset of CelebA+Imagenet
(batch_x, batch_y) = loader.get_batch(64)  # port: 5000 shrunk (the few training images)
batch_x = torch.from_numpy(batch_x).float().to(device)
batch_y = torch.from_numpy(batch_y).float().to(device)

with torch.inference_mode():
    y_pred_logits = standard_classifier(batch_x)
    y_pred_standard = torch.round(torch.sigmoid(y_pred_logits))
    acc_standard = torch.mean((batch_y == y_pred_standard).float())

print(
    "Standard CNN accuracy on (potentially biased) training set: {:.4f}".format(
        acc_standard.item()
    )
)
# %%
### Load test dataset and plot examples ###

test_faces = mdl.lab2.get_test_faces(channels_last=channels_last)
keys = ["Light Female", "Light Male", "Dark Female", "Dark Male"]

fig, axs = plt.subplots(1, len(keys), figsize=(7.5, 7.5))
for i, (group, key) in enumerate(zip(test_faces, keys)):
    axs[i].imshow(np.hstack(group).transpose(1, 2, 0))
    axs[i].set_title(key, fontsize=15)
    axs[i].axis("off")
# %%
### Evaluate the standard CNN on the test data ###

standard_classifier_probs_list = []  # store each demographic's probabilities

with torch.inference_mode():
    for x in test_faces:
        x = torch.from_numpy(np.array(x, dtype=np.float32)).to(device)
        logits = standard_classifier(x)  # [B, 1]
        probs = torch.sigmoid(logits)  # [B, 1]
        probs = torch.squeeze(probs, dim=-1)  # shape [B]
        standard_classifier_probs_list.append(probs.cpu().numpy())

standard_classifier_probs = np.stack(standard_classifier_probs_list, axis=0)


# Plot the prediction accuracies per demographic
xx = range(len(keys))
yy = standard_classifier_probs.mean(axis=1)  # shape [D]
plt.bar(xx, yy)
plt.xticks(xx, keys)
plt.ylim(max(0, yy.min() - np.ptp(yy) / 2.0), yy.max() + np.ptp(yy) / 2.0)
plt.title("Standard classifier predictions")
# %%
### Defining the VAE loss function ###

""" Function to calculate VAE loss given:
      an input x,
      reconstructed output x_recon,
      encoded means mu,
      encoded log of standard deviation logsigma,
      weight parameter for the latent loss kl_weight
"""
def vae_loss_function(x, x_recon, mu, logsigma, kl_weight=0.0005):
    # TODO: Define the latent loss. Note this is given in the equation for L_{KL}
    # in the text block directly above
    latent_loss = 0.5 * torch.sum(torch.exp(logsigma) + mu**2 - 1 - logsigma, dim=1)
    # latent_loss = # TODO

    # TODO: Define the reconstruction loss as the mean absolute pixel-wise
    # difference between the input and reconstruction. Hint: you'll need to
    # use torch.mean, and specify the dimensions to reduce over.
    # For example, reconstruction loss needs to average
    # over the height, width, and channel image dimensions.
    # https://pytorch.org/docs/stable/generated/torch.mean.html
    reconstruction_loss = torch.mean(torch.abs(x - x_recon), dim=(1, 2, 3))
    # reconstruction_loss = # TODO

    # TODO: Define the VAE loss. Note this is given in the equation for L_{VAE}
    # in the text block directly above
    vae_loss = kl_weight * latent_loss + reconstruction_loss
    # vae_loss = # TODO

    return vae_loss
# %%
### VAE Reparameterization ###

"""Reparameterization trick by sampling from an isotropic unit Gaussian.
# Arguments
    z_mean, z_logsigma (tensor): mean and log of standard deviation of latent distribution (Q(z|X))
# Returns
    z (tensor): sampled latent vector
"""
def sampling(z_mean, z_logsigma):
    # Generate random noise with the same shape as z_mean, sampled from a standard normal distribution (mean=0, std=1)
    eps = torch.randn_like(z_mean)

    # # TODO: Define the reparameterization computation!
    # # Note the equation is given in the text block immediately above.
    z = z_mean + torch.exp(z_logsigma) * eps
    # z = # TODO

    return z
# %%
### Loss function for DB-VAE ###

"""Loss function for DB-VAE.
# Arguments
    x: true input x
    x_pred: reconstructed x
    y: true label (face or not face)
    y_logit: predicted labels
    mu: mean of latent distribution (Q(z|X))
    logsigma: log of standard deviation of latent distribution (Q(z|X))
# Returns
    total_loss: DB-VAE total loss
    classification_loss = DB-VAE classification loss
"""
def debiasing_loss_function(x, x_pred, y, y_logit, mu, logsigma):
    # TODO: call the relevant function to obtain VAE loss
    vae_loss = vae_loss_function(x, x_pred, mu, logsigma)
    # vae_loss = vae_loss_function(\'\'\'TODO\'\'\') # TODO

    # TODO: define the classification loss using binary_cross_entropy
    # https://pytorch.org/docs/stable/generated/torch.nn.functional.binary_cross_entropy_with_logits.html
    classification_loss = F.binary_cross_entropy_with_logits(
        y_logit, y, reduction="none"
    )
    # classification_loss = # TODO

    # Use the training data labels to create variable face_indicator:
    #   indicator that reflects which training data are images of faces
    y = y.float()
    face_indicator = (y == 1.0).float()

    # TODO: define the DB-VAE total loss! Use torch.mean to average over all
    # samples
    total_loss = torch.mean(classification_loss * face_indicator + vae_loss)
    # total_loss = # TODO

    return total_loss, classification_loss
# %%
### Define the decoder portion of the DB-VAE ###

n_filters = 12  # base number of convolutional filters, same as standard CNN
latent_dim = 100  # number of latent variables


def make_face_decoder_network(latent_dim=100, n_filters=12):
    """
    Function builds a face-decoder network.

    Args:
        latent_dim (int): the dimension of the latent representation
        n_filters (int): base number of convolutional filters

    Returns:
        decoder_model (nn.Module): the decoder network
    """

    class FaceDecoder(nn.Module):
        def __init__(self, latent_dim, n_filters):
            super(FaceDecoder, self).__init__()

            self.latent_dim = latent_dim
            self.n_filters = n_filters

            # Linear (fully connected) layer to project from latent space
            # to a 4 x 4 feature map with (6*n_filters) channels
            self.linear = nn.Sequential(
                nn.Linear(latent_dim, 4 * 4 * 6 * n_filters), nn.ReLU()
            )

            # Convolutional upsampling (inverse of an encoder)
            self.deconv = nn.Sequential(
                # [B, 6n_filters, 4, 4] -> [B, 4n_filters, 8, 8]
                nn.ConvTranspose2d(
                    in_channels=6 * n_filters,
                    out_channels=4 * n_filters,
                    kernel_size=3,
                    stride=2,
                    padding=1,
                    output_padding=1,
                ),
                nn.ReLU(),
                # [B, 4n_filters, 8, 8] -> [B, 2n_filters, 16, 16]
                nn.ConvTranspose2d(
                    in_channels=4 * n_filters,
                    out_channels=2 * n_filters,
                    kernel_size=3,
                    stride=2,
                    padding=1,
                    output_padding=1,
                ),
                nn.ReLU(),
                # [B, 2n_filters, 16, 16] -> [B, n_filters, 32, 32]
                nn.ConvTranspose2d(
                    in_channels=2 * n_filters,
                    out_channels=n_filters,
                    kernel_size=5,
                    stride=2,
                    padding=2,
                    output_padding=1,
                ),
                nn.ReLU(),
                # [B, n_filters, 32, 32] -> [B, 3, 64, 64]
                nn.ConvTranspose2d(
                    in_channels=n_filters,
                    out_channels=3,
                    kernel_size=5,
                    stride=2,
                    padding=2,
                    output_padding=1,
                ),
            )

        def forward(self, z):
            """
            Forward pass of the decoder.

            Args:
                z (Tensor): Latent codes of shape [batch_size, latent_dim].

            Returns:
                Tensor of shape [batch_size, 3, 64, 64], representing
                the reconstructed images.
            """
            x = self.linear(z)  # [B, 4*4*6*n_filters]
            x = x.view(-1, 6 * self.n_filters, 4, 4)  # [B, 6n_filters, 4, 4]

            # Upsample through transposed convolutions
            x = self.deconv(x)  # [B, 3, 64, 64]
            return x

    return FaceDecoder(latent_dim, n_filters)
# %%
### Defining and creating the DB-VAE ###


class DB_VAE(nn.Module):
    def __init__(self, latent_dim=100):
        super(DB_VAE, self).__init__()
        self.latent_dim = latent_dim

        # Define the number of outputs for the encoder.
        self.encoder = make_standard_classifier(n_outputs=2 * latent_dim + 1)
        self.decoder = make_face_decoder_network()

    # function to feed images into encoder, encode the latent space, and output
    def encode(self, x):
        encoder_output = self.encoder(x)

        # classification prediction
        y_logit = encoder_output[:, 0].unsqueeze(-1)
        # latent variable distribution parameters
        z_mean = encoder_output[:, 1 : self.latent_dim + 1]
        z_logsigma = encoder_output[:, self.latent_dim + 1 :]

        return y_logit, z_mean, z_logsigma

    # VAE reparameterization: given a mean and logsigma, sample latent variables
    def reparameterize(self, z_mean, z_logsigma):
        # TODO: call the sampling function defined above
        z = sampling(z_mean, z_logsigma)
        # z = # TODO
        return z

    # Decode the latent space and output reconstruction
    def decode(self, z):
        # TODO: use the decoder to output the reconstruction
        reconstruction = self.decoder(z)
        # reconstruction = # TODO
        return reconstruction

    # The forward function will be used to pass inputs x through the core VAE
    def forward(self, x):
        # Encode input to a prediction and latent space
        y_logit, z_mean, z_logsigma = self.encode(x)

        # TODO: reparameterization
        z = self.reparameterize(z_mean, z_logsigma)
        # z = # TODO

        # TODO: reconstruction
        recon = self.decode(z)
        # recon = # TODO

        return y_logit, z_mean, z_logsigma, recon

    # Predict face or not face logit for given input x
    def predict(self, x):
        y_logit, z_mean, z_logsigma = self.encode(x)
        return y_logit

dbvae = DB_VAE(latent_dim)
# %%
# Function to return the means for an input image batch

def get_latent_mu(images, dbvae, batch_size=64):
    dbvae.eval()
    all_z_mean = []

    # If images is NumPy, convert once outside the loop
    images_t = torch.from_numpy(images).float()

    with torch.inference_mode():
        for start in range(0, len(images_t), batch_size):
            end = start + batch_size
            batch = images_t[start:end]
            batch = batch.to(device).permute(0, 3, 1, 2)
            # Forward pass on this chunk only
            _, z_mean, _, _ = dbvae(batch)
            all_z_mean.append(z_mean.cpu())

    # Concatenate all partial z_mean
    z_mean_full = torch.cat(all_z_mean, dim=0)  # shape [N, latent_dim]
    mu = z_mean_full.numpy()  # convert to NumPy if needed
    return mu
# %%
### Resampling algorithm for DB-VAE ###

"""Function that recomputes the sampling probabilities for images within a batch
      based on how they distribute across the training data"""
def get_training_sample_probabilities(images, dbvae, bins=10, smoothing_fac=0.001):
    print("Recomputing the sampling probabilities")

    # TODO: run the input batch and get the latent variable means
    mu = get_latent_mu(images, dbvae)
    # mu = get_latent_mu(\'\'\'TODO\'\'\', \'\'\'TODO\'\'\') # TODO

    # sampling probabilities for the images
    training_sample_p = np.zeros(mu.shape[0], dtype=np.float64)

    # consider the distribution for each latent variable
    for i in range(latent_dim):
        latent_distribution = mu[:, i]
        # generate a histogram of the latent distribution
        hist_density, bin_edges = np.histogram(
            latent_distribution, density=True, bins=bins
        )

        # find which latent bin every data sample falls in
        bin_edges[0] = -float("inf")
        bin_edges[-1] = float("inf")

        # TODO: call the digitize function to find which bins in the latent distribution
        #    every data sample falls in to
        # https://docs.scipy.org/doc/numpy-1.13.0/reference/generated/numpy.digitize.html
        bin_idx = np.digitize(latent_distribution, bin_edges)
        # bin_idx = np.digitize(\'\'\'TODO\'\'\', \'\'\'TODO\'\'\') # TODO

        # smooth the density function
        hist_smoothed_density = hist_density + smoothing_fac
        hist_smoothed_density = hist_smoothed_density / np.sum(hist_smoothed_density)

        # invert the density function
        p = 1.0 / (hist_smoothed_density[bin_idx - 1])

        # TODO: normalize all probabilities
        p = p / np.sum(p)
        # p = # TODO

        # TODO: update sampling probabilities by considering whether the newly
        #     computed p is greater than the existing sampling probabilities.
        training_sample_p = np.maximum(training_sample_p, p)
        # training_sample_p = # TODO

    # final normalization
    training_sample_p /= np.sum(training_sample_p)

    return training_sample_p
# %%
### Training the DB-VAE ###

# Hyperparameters
params = dict(
    batch_size=32,
    learning_rate=5e-4,
    latent_dim=100,
    num_epochs=2,  # DB-VAE needs slightly more epochs to train
)

# experiment = create_experiment("6S191_Lab2_Part2_DBVAE", params)  # port: comet_ml dropped

# instantiate a new DB-VAE model and optimizer
dbvae = DB_VAE(params["latent_dim"]).to(device)
optimizer = optim.Adam(dbvae.parameters(), lr=params["learning_rate"])


def debiasing_train_step(x, y):
    optimizer.zero_grad()

    y_logit, z_mean, z_logsigma, x_recon = dbvae(x)

    \'\'\'TODO: call the DB_VAE loss function to compute the loss\'\'\'
    loss, class_loss = debiasing_loss_function(
        x, x_recon, y, y_logit, z_mean, z_logsigma
    )
    # loss, class_loss = debiasing_loss_function(\'\'\'TODO arguments\'\'\') # TODO

    loss.backward()
    optimizer.step()

    return loss


# get training faces from data loader
all_faces = loader.get_all_train_faces()

# The training loop -- outer loop iterates over the number of epochs
step = 0
for i in range(params["num_epochs"]):
    IPython.display.clear_output(wait=True)
    print("Starting epoch {}/{}".format(i + 1, params["num_epochs"]))

    # Recompute data sampling proabilities
    """TODO: recompute the sampling probabilities for debiasing"""
    p_faces = get_training_sample_probabilities(all_faces, dbvae)
    # p_faces = get_training_sample_probabilities(\'\'\'TODO\'\'\', \'\'\'TODO\'\'\') # TODO

    # get a batch of training data and compute the training step
    for j in tqdm(range(loader.get_train_size() // params["batch_size"])):
        # load a batch of data
        (x, y) = loader.get_batch(params["batch_size"], p_pos=p_faces)
        x = torch.from_numpy(x).float().to(device)
        y = torch.from_numpy(y).float().to(device)

        # loss optimization
        loss = debiasing_train_step(x, y)
        loss_value = loss.detach().cpu().numpy()
        # experiment.log_metric("loss", loss_value, step=step)  # port: comet_ml dropped

        # plot the progress every 200 steps
        if j % 500 == 0:
            mdl.util.plot_sample(x, y, dbvae, backend="pt")

        step += 1

# experiment.end()  # port: comet_ml dropped
# %%
dbvae.to(device)
dbvae_logits_list = []
for face in test_faces:
    face = np.asarray(face, dtype=np.float32)
    face = torch.from_numpy(face).to(device)

    # Forward pass to get the classification logit
    with torch.inference_mode():
        logit = dbvae.predict(face)

    dbvae_logits_list.append(logit.detach().cpu().numpy())

dbvae_logits_array = np.concatenate(dbvae_logits_list, axis=0)
dbvae_logits_tensor = torch.from_numpy(dbvae_logits_array)
dbvae_probs_tensor = torch.sigmoid(dbvae_logits_tensor)
dbvae_probs_array = dbvae_probs_tensor.squeeze(dim=-1).numpy()

xx = np.arange(len(keys))

std_probs_mean = standard_classifier_probs.mean(axis=1)
dbvae_probs_mean = dbvae_probs_array.reshape(len(keys), -1).mean(axis=1)

plt.bar(xx, std_probs_mean, width=0.2, label="Standard CNN")
plt.bar(xx + 0.2, dbvae_probs_mean, width=0.2, label="DB-VAE")

plt.xticks(xx, keys)
plt.title("Network predictions on test dataset")
plt.ylabel("Probability")
plt.legend(bbox_to_anchor=(1.04, 1), loc="upper left")
plt.show()
'''


class Tqdm:
    """tqdm's progress bar, quiet: its iterable, and the ``_instances`` the labs clear."""

    _instances = set()

    def __init__(self, iterable=None, **kwargs):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)


def digits(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` synthetic 28x28 uint8 digits in MNIST's place: each class a blocky template of
    its own (7x7 cells of 4x4 pixels), each image its template with noise, and the labels."""
    templates = np.random.default_rng(99).random((10, 7, 7)) > 0.6  # (10, 7, 7)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count)
    images = np.kron(templates[labels], np.ones((4, 4))) * 200 + rng.normal(0, 30, (count, 28, 28))
    return np.clip(images, 0, 255).astype(np.uint8), labels  # (count, 28, 28), (count,)


def mnist(lib) -> type:
    """torchvision's ``datasets.MNIST`` for ``lib``: 256 synthetic training digits, 96 test."""

    class MNIST(lib.utils.data.Dataset):
        def __init__(self, root, train=True, download=False, transform=None):
            self.data, self.targets = digits(256, 0) if train else digits(96, 1)
            self.transform = transform

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            return self.transform(self.data[index]), int(self.targets[index])

    return MNIST


def faces(count: int, shade: float = 1.0) -> np.ndarray:
    """``count`` synthetic 64x64 RGB uint8 faces in CelebA's place: a disc of skin (of
    ``shade``) with two dark eyes, over noise."""
    rng = np.random.default_rng(count)
    rows, cols = np.mgrid[:64, :64]
    disc = (rows - 32) ** 2 + (cols - 32) ** 2 < 22**2
    eyes = ((rows - 26) ** 2 + (cols - 24) ** 2 < 9) | ((rows - 26) ** 2 + (cols - 40) ** 2 < 9)
    skin = np.array([230, 190, 160]) * shade
    images = rng.normal(60, 30, (count, 64, 64, 3))
    images[:, disc & ~eyes] = skin + rng.normal(0, 10, (count, 1, 3))
    return np.clip(images, 0, 255).astype(np.uint8)  # (count, 64, 64, 3)


def training_faces(path) -> None:
    """The training file at ``path``: 64 faces and 64 stripes (not faces), shuffled, with
    labels (N, 1) 1.0 for a face, in the h5 file's two arrays (written by numpy: ``h5py``'s
    stand-in reads it)."""
    rng = np.random.default_rng(5)
    stripes = rng.random((64, 1, 1, 3)) * 255 * (np.arange(64) % 8 < 4)[None, None, :, None]
    stripes = np.broadcast_to(stripes, (64, 64, 64, 3))  # (64, 64, 64, 3)
    images = np.concatenate([faces(64), stripes.astype(np.uint8)])  # (128, 64, 64, 3)
    labels = np.concatenate([np.ones((64, 1)), np.zeros((64, 1))]).astype(np.float32)
    order = rng.permutation(128)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        np.savez(file, images=images[order], labels=labels[order])


def stand_ins(lib, monkeypatch) -> None:
    """``mitdeeplearning`` (its held text in ``lib``'s words), ``tqdm``, ``h5py``, ``IPython``,
    ``<lib>vision`` and ``<lib>summary``."""
    module("h5py", monkeypatch, File=lambda path, mode: dict(np.load(path)))
    display = module("IPython.display", YouTubeVideo=print, clear_output=lambda wait=False: None)
    module(
        "IPython", monkeypatch, display=display, get_ipython=lambda: None, version_info=(8, 24)
    )  # matplotlib asks
    space = {"__name__": "mitdeeplearning", "FACES": faces}
    exec(MDL.replace("torch", lib.__name__), space)
    space["TUNES"] = TUNES
    mdl = module("mitdeeplearning", monkeypatch)
    mdl.util = mdl.lab1 = mdl.lab2 = module("mitdeeplearning.parts", **space)
    module("tqdm", monkeypatch, tqdm=Tqdm)
    base = module("base", MNIST=mnist(lib), Compose=Compose, ToTensor=to_tensor(lib))
    parts = {"datasets": ["MNIST"], "transforms": ["Compose", "ToTensor"]}
    package(lib.__name__ + "vision", monkeypatch, base, parts)
    module(lib.__name__ + "summary", monkeypatch, summary=lambda *args, **kwargs: None)


def run(text: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """The notebook in ``lib``'s words, seeded, run in ``folder`` with the stand-ins: what it
    printed (each cell's last value too) and its globals."""
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(folder))  # the DB-VAE's ~/.cache
    if "train_face.h5" in text:
        training_faces(folder / ".cache" / "mitdeeplearning" / "train_face.h5")
    stand_ins(lib, monkeypatch)
    lib.manual_seed(0)
    np.random.seed(0)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_cells(text.replace("torch", lib.__name__), space, close_figures=True)
    return out.getvalue(), space


def same_lines(ours: str, theirs: str) -> bool:
    """``normal`` of both printouts, a tensor's values and a number alike: ``f"{t}"`` of a 0-d
    tensor is ``Tensor(1234)`` in tricycle, the number in torch (docs/pytorch.md)."""

    def same(printed: str) -> list[str]:
        return [line.replace("<tensor of #>", "#") for line in normal(re.sub(" at 0x[0-9a-f]+", "", printed))]  # fmt: skip

    return same(ours) == same(theirs)


def both(text: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, on the CPU on one thread."""
    with torch_and_tricycle(monkeypatch, "regex", agg=True) as (torch, tricycle):
        return run(text, torch, tmp_path / "torch", monkeypatch), run(text, tricycle, tmp_path / "tricycle", monkeypatch)  # fmt: skip


def test_lab1_part1_intro(tmp_path, monkeypatch):
    """Tensors, computations (``torch.add(1.5, 2.5)`` of numbers too), the dense layer of
    ``nn.Parameter``s given torch's weights, modules, autograd and gradient descent by hand."""
    (theirs, their_space), (ours, our_space) = both(PART1, tmp_path, monkeypatch)
    assert same_lines(ours, theirs)
    assert our_space["e_out"].item() == their_space["e_out"].item() == 6.0
    assert abs(our_space["history"][-1] - 4) < 1e-3 and abs(their_space["history"][-1] - 4) < 1e-3  # fmt: skip
    x = [[1, 2.0]]
    same_numbers(their_space["layer"], our_space["layer"], lambda lib, layer: (layer(lib.tensor(x)).sum(), layer(lib.tensor(x))))  # fmt: skip


def test_lab1_part2_music_generation(tmp_path, monkeypatch):
    """The LSTM over ABC tunes: the batches, the loss given torch's weights, training (the loss
    falls), the checkpoint, and the generated text."""
    (theirs, their_space), (ours, our_space) = both(MUSIC, tmp_path, monkeypatch)
    sampled = re.compile(r"(Next Char Predictions: \n).*")  # the random characters
    assert same_lines(sampled.sub(r"\1", ours), sampled.sub(r"\1", theirs))
    assert layers(ours) == layers(theirs) == [["Embedding", "LSTM", "Linear"]]
    for space in their_space, our_space:
        history = space["history"]
        assert np.mean(history[-5:]) < np.mean(history[:5]) - 0.5, history
        text = space["generated_text"]
        assert len(text) == 201 and text[0] == "X" and set(text) <= set(space["vocab"])
    x, y = their_space["x_batch"], their_space["y_batch"]

    def step(lib, model):
        space = our_space if lib.__name__ == "tricycle" else their_space
        logits = model(lib.tensor(x.numpy()))
        return space["compute_loss"](lib.tensor(y.numpy()), logits), logits

    import tricycle  # noqa: PLC0415

    saved = tricycle.load(tmp_path / "tricycle" / "training_checkpoints" / "my_ckpt")
    for name, value in our_space["model"].state_dict().items():
        np.testing.assert_array_equal(np.asarray(saved[name]), np.asarray(value), err_msg=name)

    same_numbers(their_space["model"], our_space["model"], step)  # after: it loads torch's weights


def test_lab2_part1_mnist(tmp_path, monkeypatch):
    """The fully connected model and the CNN on synthetic digits: both learn, and the CNN given
    torch's weights gives torch's logits, loss and gradients."""
    (theirs, their_space), (ours, our_space) = both(MNIST, tmp_path, monkeypatch)
    assert same_lines(ours, theirs)
    assert layers(ours) == layers(theirs)
    for printed, space in (theirs, their_space), (ours, our_space):
        accuracies = [float(a) for a in re.findall(r"Test accuracy: ([\d.]+)", printed)]
        assert len(accuracies) == 2 and accuracies[0] > 0.5, printed  # the fully connected model
        losses = space["loss_history"].loss  # the CNN's, smoothed
        assert losses[-1] < losses[0] - 0.01, losses
    images = their_space["all_images"][:16].numpy()
    labels = their_space["all_labels"][:16].numpy()

    def step(lib, model):
        logits = model(lib.tensor(images))
        return lib.nn.CrossEntropyLoss()(logits, lib.tensor(labels)), logits

    same_numbers(their_space["cnn_model"], our_space["cnn_model"], step)


def test_lab2_part2_debiasing(tmp_path, monkeypatch):
    """The face classifier (it learns) and the DB-VAE: given torch's weights both give torch's
    outputs, losses and gradients (the DB-VAE through its encoder, decoder and loss)."""
    (theirs, their_space), (ours, our_space) = both(
        DEBIAS.replace("\\'", "'"), tmp_path, monkeypatch
    )
    assert same_lines(ours, theirs)
    assert layers(ours) == layers(theirs)
    for printed, space in (theirs, their_space), (ours, our_space):
        accuracy = float(re.search(r"training set: ([\d.]+)", printed)[1])
        assert accuracy > 0.6, printed
        assert space["p_faces"].shape == (64,) and abs(space["p_faces"].sum() - 1) < 1e-9
    x, y = (their_space[name][:8].numpy() for name in ("batch_x", "batch_y"))

    def classify(lib, model):
        logits = model(lib.tensor(x))
        return lib.nn.BCEWithLogitsLoss()(logits, lib.tensor(y)), logits

    same_numbers(their_space["standard_classifier"], our_space["standard_classifier"], classify)

    def debias(lib, model):
        space = our_space if lib.__name__ == "tricycle" else their_space
        y_logit, z_mean, z_logsigma = model.encode(lib.tensor(x))
        recon = model.decode(z_mean)
        loss, class_loss = space["debiasing_loss_function"](lib.tensor(x), recon, lib.tensor(y), y_logit, z_mean, z_logsigma)  # fmt: skip
        return loss, class_loss, recon

    same_numbers(their_space["dbvae"], our_space["dbvae"], debias)


def test_arithmetic_of_python_numbers():
    """torch.add/sub/mul/div take a Python number as ``input`` (lab 1's ``torch.add(1.5, 2.5)``):
    a 0-d tensor in torch's dtype, the tensor's dtype beside a tensor where the number's kind
    fits it (torch's wrapped numbers), gradients flowing to the tensor; a string is refused."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for name in "add", "sub", "subtract", "mul", "multiply", "div", "divide":
        for number, other in (1.5, 2.5), (2, 3), (2, 1.5):
            theirs, ours = getattr(torch, name)(number, other), getattr(tricycle, name)(number, other)  # fmt: skip
            assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), (name, number, other)  # fmt: skip
            assert ours.item() == pytest.approx(theirs.item()), (name, number, other)
        for number, dtype in (3, "int32"), (2.5, "int32"), (3, "float64"), (0.5, "float32"):
            values = np.array([1.0, 4.0, 2.0])
            t = torch.tensor(values, dtype=getattr(torch, dtype))
            x = tricycle.tensor(values, dtype=getattr(tricycle, dtype))
            theirs, ours = getattr(torch, name)(number, t), getattr(tricycle, name)(number, x)
            assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), (name, number, dtype)  # fmt: skip
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    t, x = torch.tensor([1.0, 4.0], requires_grad=True), tricycle.tensor([1.0, 4.0], requires_grad=True)  # fmt: skip
    for lib, v in (torch, t), (tricycle, x):
        (lib.sub(2.0, v, alpha=3) * lib.div(1.5, v) + lib.mul(2, v)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="add: input must be a Tensor, got 'a'"):
        tricycle.add("a", x)
