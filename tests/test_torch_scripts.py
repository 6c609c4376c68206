"""PyTorch's tutorial loops, as a PyTorch user writes them, run on tricycle with ``torch``
replaced by ``tricycle`` in their text and nothing else (docs/pytorch.md's promise).

Each script is PyTorch code from the official tutorials ("Quickstart", "Training a
classifier", a recurrent model with ``lr_scheduler.StepLR``, the character-level RNN of
"Classifying names" with its hand-written SGD step), on a small synthetic dataset
built with numpy in place of the downloads. The test runs it under torch (skipped without
torch) and, after the one substitution, under tricycle, each in a temporary directory, and
checks that both learn (the loss falls, the accuracy is above chance by a margin) and that
they give the same kind of results: the types of ``loss.item()`` and of the counts, and the
shapes of the batches and outputs. A script records what it saw in ``results``.
"""

import numbers

import numpy as np
import pytest

QUICKSTART = """
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# FashionMNIST's place: 1x8x8 images, 4 classes, each a bright template under noise
rng = np.random.default_rng(0)
templates = 2 * rng.normal(size=(4, 1, 8, 8)).astype(np.float32)
def make(n):
    labels = rng.integers(0, 4, n)
    images = templates[labels] + 0.5 * rng.normal(size=(n, 1, 8, 8)).astype(np.float32)
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
training_data, test_data = make(1024), make(256)

batch_size = 64
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)
for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    results["X_shape"], results["y_shape"] = tuple(X.shape), tuple(y.shape)
    break

device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Using {device} device")
torch.manual_seed(0)

class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8*8, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 4)
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork().to(device)
print(model)

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        results["losses"].append(loss.item())
        if batch % 100 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
            results["loss_type"] = type(loss)

def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    results["pred_shape"], results["correct_type"] = tuple(pred.shape), type(correct)
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \\n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \\n")
    results["accuracy"] = correct

epochs = 5
for t in range(epochs):
    print(f"Epoch {t+1}\\n-------------------------------")
    train(train_dataloader, model, loss_fn, optimizer)
    test(test_dataloader, model, loss_fn)
print("Done!")

torch.save(model.state_dict(), "model.pth")
print("Saved PyTorch Model State to model.pth")

model = NeuralNetwork().to(device)
model.load_state_dict(torch.load("model.pth", weights_only=True))
test(test_dataloader, model, loss_fn)  # the loaded weights: the same accuracy

classes = ["zero", "one", "two", "three"]
model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
    print(f'Predicted: "{predicted}", Actual: "{actual}"')
results["predicted"] = predicted
"""

CLASSIFIER = """
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

# CIFAR-10's place: 3x16x16 images of 4 classes, a colour blob in one of four corners
rng = np.random.default_rng(1)
def make(n):
    labels = rng.integers(0, 4, n)
    images = 0.3 * rng.normal(size=(n, 3, 16, 16)).astype(np.float32)
    for i, label in enumerate(labels):
        r, c = divmod(int(label), 2)
        images[i, label % 3, 8 * r:8 * r + 8, 8 * c:8 * c + 8] += 2.0
    return torch.utils.data.TensorDataset(torch.tensor(images), torch.tensor(labels))
trainset, testset = make(800), make(200)
batch_size = 4
trainloader = torch.utils.data.DataLoader(trainset, batch_size=batch_size, shuffle=True)
testloader = torch.utils.data.DataLoader(testset, batch_size=batch_size, shuffle=False)
classes = ("top left", "top right", "bottom left", "bottom right")

torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 2 * 2, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 4)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1) # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

net = Net()
device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')
# Assuming that we are on a CUDA machine, this should print a CUDA device:
print(device)
net.to(device)
results["device"] = str(device)

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

for epoch in range(2):  # loop over the dataset multiple times
    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        # get the inputs; data is a list of [inputs, labels]
        inputs, labels = data[0].to(device), data[1].to(device)

        # zero the parameter gradients
        optimizer.zero_grad()

        # forward + backward + optimize
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        # print statistics
        running_loss += loss.item()
        if i % 50 == 49:    # print every 50 mini-batches
            print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 50:.3f}')
            results["losses"].append(running_loss / 50)
            running_loss = 0.0

print('Finished Training')

PATH = './cifar_net.pth'
torch.save(net.state_dict(), PATH)

dataiter = iter(testloader)
images, labels = next(dataiter)
print('GroundTruth: ', ' '.join(f'{classes[labels[j]]:5s}' for j in range(4)))

net = Net()
net.load_state_dict(torch.load(PATH, weights_only=True))
outputs = net(images)
_, predicted = torch.max(outputs, 1)
print('Predicted: ', ' '.join(f'{classes[predicted[j]]:5s}' for j in range(4)))
results["outputs_shape"], results["predicted_shape"] = tuple(outputs.shape), tuple(predicted.shape)

correct = 0
total = 0
# since we're not training, we don't need to calculate the gradients for our outputs
with torch.no_grad():
    for data in testloader:
        images, labels = data
        # calculate outputs by running images through the network
        outputs = net(images)
        # the class with the highest energy is what we choose as prediction
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

print(f'Accuracy of the network on the 200 test images: {100 * correct // total} %')
results["accuracy"], results["correct_type"] = correct / total, type(correct)

# prepare to count predictions for each class
correct_pred = {classname: 0 for classname in classes}
total_pred = {classname: 0 for classname in classes}

# again no gradients needed
with torch.no_grad():
    for data in testloader:
        images, labels = data
        outputs = net(images)
        _, predictions = torch.max(outputs, 1)
        # collect the correct predictions for each class
        for label, prediction in zip(labels, predictions):
            if label == prediction:
                correct_pred[classes[label]] += 1
            total_pred[classes[label]] += 1

for classname, correct_count in correct_pred.items():
    accuracy = 100 * float(correct_count) / total_pred[classname]
    print(f'Accuracy for class: {classname:5s} is {accuracy:.1f} %')
results["per_class"] = sum(correct_pred.values()) / sum(total_pred.values())
"""

RECURRENT = """
import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

# does a sequence of 12 bits hold more ones than zeros? An LSTM reads it, bit by bit
rng = np.random.default_rng(2)
bits = rng.integers(0, 2, (512, 12)).astype(np.float32)
inputs, majority = torch.from_numpy(bits).unsqueeze(-1), torch.from_numpy(bits.sum(1) > 6)
dataset = TensorDataset(inputs, majority.long())
loader = DataLoader(dataset, batch_size=32, shuffle=True)
torch.manual_seed(0)


class Counter(nn.Module):
    def __init__(self, hidden_size=16):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, 2)

    def forward(self, x):
        output, (h_n, c_n) = self.lstm(x)  # h_n: (num_layers, N, H)
        return self.head(h_n[-1])


model = Counter()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = StepLR(optimizer, step_size=4, gamma=0.5)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    model.train()
    total_loss, correct = 0.0, 0
    for inputs, targets in loader:
        optimizer.zero_grad()
        logits = model(inputs)
        loss = criterion(logits, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        total_loss += loss.item() * inputs.size(0)
        correct += (logits.argmax(dim=1) == targets).sum().item()
    scheduler.step()
    results["losses"].append(total_loss / len(dataset))
    print(f"epoch {epoch}: loss {total_loss / len(dataset):.4f}, "
          f"accuracy {correct / len(dataset):.3f}, lr {scheduler.get_last_lr()[0]:.4f}")
results["accuracy"], results["lr"] = correct / len(dataset), scheduler.get_last_lr()[0]
results["logits_shape"], results["correct_type"] = tuple(logits.shape), type(correct)
"""

CHAR_RNN = """import numpy as np
import torch
import torch.nn as nn

# "Classifying names with a character-level RNN": does a word use the first four letters or
# the last four? A one-hot letter at a time, a hand-written RNN, SGD by p.data.add_

all_letters = "abcdefgh"
n_letters = len(all_letters)
all_categories = ["early", "late"]
rng = np.random.default_rng(3)
def randomTrainingExample():
    category = all_categories[rng.integers(2)]
    letters = all_letters[:4] if category == "early" else all_letters[4:]
    line = "".join(rng.choice(list(letters), rng.integers(2, 6)))
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor

def letterToIndex(letter):
    return all_letters.find(letter)

def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor

torch.manual_seed(0)
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size, hidden_size)
        self.h2h = nn.Linear(hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        hidden = torch.tanh(self.i2h(input) + self.h2h(hidden))
        output = self.h2o(hidden)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)

n_hidden = 16
rnn = RNN(n_letters, n_hidden, len(all_categories))
criterion = nn.NLLLoss()
learning_rate = 0.05

def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i

def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    rnn.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    # Add parameters' gradients to their values, multiplied by learning rate
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()

current_loss = 0
all_losses = []
for iter in range(1, 401):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
    current_loss += loss
    if iter % 50 == 0:
        guess, guess_i = categoryFromOutput(output)
        correct = '✓' if guess == category else '✗ (%s)' % category
        print('%d %d%% %.4f %s / %s %s' % (iter, iter / 400 * 100, loss, line, guess, correct))
        all_losses.append(current_loss / 50)
        current_loss = 0

def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output

right = 0
with torch.no_grad():
    for _ in range(100):
        category, line, category_tensor, line_tensor = randomTrainingExample()
        guess, _ = categoryFromOutput(evaluate(line_tensor))
        right += guess == category
print(all_losses, right)
results["losses"], results["accuracy"] = all_losses, right / 100
results["category_type"], results["loss_type"] = type(guess_i), type(loss)
results["output_shape"] = tuple(output.shape)
"""


def run(script: str, tmp_path, monkeypatch) -> dict:
    """Runs ``script`` in ``tmp_path`` (its files land there) and returns its ``results``."""
    monkeypatch.chdir(tmp_path)
    results = {"losses": []}
    exec(compile(script, "<script>", "exec"), {"results": results, "__name__": "__script__"})
    return results


def both(script: str, tmp_path, monkeypatch) -> tuple[dict, dict]:
    """The script under torch and, with ``torch`` replaced by ``tricycle``, under tricycle."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared machine: the test's small matrices need no more
    try:
        (tmp_path / "torch").mkdir()
        theirs = run(script, tmp_path / "torch", monkeypatch)
    finally:
        torch.set_num_threads(threads)
    (tmp_path / "tricycle").mkdir()
    ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def same_kind(theirs: dict, ours: dict) -> None:
    """The same keys, the same shapes and the same Python types of the numbers."""
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        if key.endswith(("_shape", "_type", "predicted", "device")):
            assert ours[key] == value, key
    for value in ours["losses"]:
        assert isinstance(value, float) and np.isfinite(value)


def learned(results: dict, chance: float, margin: float) -> None:
    losses = results["losses"]
    assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:3]), losses
    assert results["accuracy"] > chance + margin, results["accuracy"]


def test_quickstart(tmp_path, monkeypatch):
    theirs, ours = both(QUICKSTART, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["loss_type"] is float and ours["correct_type"] is float
    for results in theirs, ours:
        learned(results, chance=0.25, margin=0.35)
    assert ours["predicted"] in ("zero", "one", "two", "three")
    assert (tmp_path / "tricycle" / "model.pth").exists()


def test_training_a_classifier(tmp_path, monkeypatch):
    theirs, ours = both(CLASSIFIER, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["correct_type"] is int
    for results in theirs, ours:
        learned(results, chance=0.25, margin=0.35)
        assert results["per_class"] == results["accuracy"]


def test_recurrent_with_step_lr(tmp_path, monkeypatch):
    theirs, ours = both(RECURRENT, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert isinstance(ours["correct_type"](0), numbers.Integral)
    for results in theirs, ours:
        learned(results, chance=0.5, margin=0.2)
        assert results["lr"] == pytest.approx(1e-2 / 4)


def test_char_rnn_with_a_hand_written_update(tmp_path, monkeypatch):
    theirs, ours = both(CHAR_RNN, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["category_type"] is int and ours["loss_type"] is float
    for results in theirs, ours:
        learned(results, chance=0.5, margin=0.3)
