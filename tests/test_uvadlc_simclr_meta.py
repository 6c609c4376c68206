"""Phillip Lippe's UvA Deep Learning tutorials 17 ("Self-Supervised Contrastive Learning with
SimCLR") and 16 ("Meta-Learning - Learning to Learn"), docs/tutorial_notebooks of
phlippe/uvadlc_notebooks, run on tricycle with ``torch`` replaced by ``tricycle`` in their text
(docs/pytorch.md's promise; the method of tests/test_uvadlc_generative.py).

- tutorial17: ``ContrastiveTransformations`` over an augmentation pipeline, ``SimCLR``'s
  InfoNCE loss (``torch.cat`` of the views, ``F.cosine_similarity`` of ``feats[:,None,:]`` and
  ``feats[None,:,:]``, ``torch.eye(dtype=torch.bool)``, ``masked_fill_``, ``roll(shifts=,
  dims=)``, indexing by a boolean mask, ``logsumexp``, the ranking metrics by
  ``argsort(descending=True).argmin``), AdamW under ``CosineAnnealingLR``, the features of the
  encoder without its head (``deepcopy``, ``fc = nn.Identity()``, ``labels.sort()``), the
  logistic regression on them over smaller sets (``unflatten``/``flatten``, MultiStepLR) and the
  supervised ResNet baseline.
- tutorial16: the ``ImageDataset`` (PIL images), ``dataset_from_labels`` (``any(dim=-1)``
  masks), the ``FewShotBatchSampler`` (``torch.unique``, ``torch.where``, ``randperm``) as a
  DataLoader's ``batch_sampler``, ``split_batch`` (``chunk``), ``ProtoNet`` (prototypes by class
  means, squared distances, ``log_softmax``), ``test_proto_net`` over k shots, and ProtoMAML as
  the notebook writes it (first order: the inner loop on a ``deepcopy`` with SGD, the output
  layer from the prototypes (``torch.norm``, ``requires_grad_``, ``copy_`` under ``no_grad``,
  ``grad.fill_``, the graph re-attached by ``(w - w0).detach() + w0``), ``p_global.grad +=
  p_local.grad``, the ``TaskBatchSampler`` with its ``collate_fn``), ``test_protomaml``. The
  second-order MAML (``create_graph=True``, a gradient of a gradient) is not in the notebook; the
  last test shows tricycle refuses it with its clear error (documented: no double backward).

Lightning's glue is ported to plain Python (``save_hyperparameters``, ``self.log`` and
``self.optimizers()`` in a small ``LightningModule``, ``Trainer.fit``/``test`` as loops, the last
epoch's model in place of the best checkpoint), torchvision replaced by a stand-in made in the
test from one text for both libraries (``resnet18`` and ``DenseNet`` as small random networks of
torchvision's structure, the transforms on (H, W, C) uint8 arrays), STL10 and CIFAR100 by small
synthetic images of class patterns, the plotting cells and the SVHN transfer left out, sizes and
epochs shrunk. Each changed line ends in ``# port:`` and says why. Each notebook runs under torch
(skipped without it), then under tricycle; both print the same lines (numbers aside) and learn:
SimCLR's InfoNCE loss falls and the linear probe beats chance, ProtoNet's and ProtoMAML's
few-shot accuracies beat chance. With torch's weights (``nn.from_torch``) the SimCLR encoder
gives torch's InfoNCE loss, ranking metrics and gradients, ProtoNet torch's loss and gradients,
and ProtoMAML's first-order outer step torch's gradients. What the notebooks needed:
``torch.where(condition)`` alone, torch's ``nonzero(condition, as_tuple=True)``
(tricycle/torch_functions.py).
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests.helpers import Compose, module, one_thread, run_main, to_tensor, torch_and_tricycle
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import numbers
from tests.test_uvadlc_intro import kinds

# torchvision's parts the notebooks use, for either library (``torch`` replaced by ``tricycle``
# in the text): resnet18 and DenseNet with torchvision's structure, small; transforms on
# (H, W, C) uint8 arrays (or PIL images) before ToTensor, Normalize on the tensor after it
VISION = r'''
import numpy as np
import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(nn.Module):
    """resnet18's structure (stem, stages of basic blocks, pooling, ``fc``), two small stages."""

    def __init__(self, num_classes=1000, widths=(8, 16)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(widths[0], widths[0], 1)
        self.layer2 = BasicBlock(widths[0], widths[1], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[1], num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.avgpool(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(x, 1))


def resnet18(num_classes=1000):
    return ResNet(num_classes=num_classes)


class DenseLayer(nn.Module):
    def __init__(self, c_in, growth_rate, bn_size):
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in), nn.ReLU(), nn.Conv2d(c_in, bn_size * growth_rate, 1, bias=False),
            nn.BatchNorm2d(bn_size * growth_rate), nn.ReLU(),
            nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.net(x)], dim=1)


class DenseNet(nn.Module):
    """torchvision's DenseNet: a stem, dense blocks with transitions, norm, pooling, classifier."""

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, num_classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, num_init_features, 3, padding=1, bias=False)]
        c = num_init_features
        for i, n in enumerate(block_config):
            for _ in range(n):
                layers.append(DenseLayer(c, growth_rate, bn_size))
                c += growth_rate
            if i < len(block_config) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)]
                c //= 2
        layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x))


class RandomHorizontalFlip:
    def __call__(self, img):
        img = np.asarray(img)
        return img[:, ::-1] if np.random.rand() < 0.5 else img


class RandomResizedCrop:
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        self.size, self.scale = (size, size) if isinstance(size, int) else size, scale

    def __call__(self, img):
        img = np.asarray(img)
        h, w = img.shape[:2]
        side = max(2, int(round(np.sqrt(np.random.uniform(*self.scale)) * min(h, w))))
        top, left = np.random.randint(0, h - side + 1), np.random.randint(0, w - side + 1)
        rows = top + np.arange(self.size[0]) * side // self.size[0]  # nearest neighbour
        cols = left + np.arange(self.size[1]) * side // self.size[1]
        return img[rows][:, cols]


class ColorJitter:
    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = brightness

    def __call__(self, img):
        factor = np.random.uniform(1 - self.brightness, 1 + self.brightness)
        return np.clip(np.asarray(img) * factor, 0, 255).astype(np.uint8)


class RandomApply:
    def __init__(self, transforms, p=0.5):
        self.transforms, self.p = transforms, p

    def __call__(self, img):
        if np.random.rand() < self.p:
            for t in self.transforms:
                img = t(img)
        return img


class RandomGrayscale:
    def __init__(self, p=0.1):
        self.p = p

    def __call__(self, img):
        img = np.asarray(img)
        if np.random.rand() < self.p:
            img = np.repeat(img.mean(axis=2, keepdims=True), 3, axis=2).astype(np.uint8)
        return img


class GaussianBlur:
    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = kernel_size

    def __call__(self, img):
        img = np.asarray(img).astype(np.float32)  # a 3-tap box blur along each axis
        img = (np.roll(img, 1, 0) + img + np.roll(img, -1, 0)) / 3
        return ((np.roll(img, 1, 1) + img + np.roll(img, -1, 1)) / 3).astype(np.uint8)


class Normalize:
    def __init__(self, mean, std):
        self.mean = np.asarray(mean, dtype=np.float32)[:, None, None]
        self.std = np.asarray(std, dtype=np.float32)[:, None, None]

    def __call__(self, tensor):
        return (tensor - torch.from_numpy(self.mean)) / torch.from_numpy(self.std)
'''


def vision(lib, monkeypatch):
    """The stand-in ``torchvision`` (``models``, ``transforms``, ``datasets``) for ``lib``, in
    ``sys.modules`` while the test runs; the datasets are the notebooks' synthetic stand-ins."""
    space = {"__name__": "torchvision_standin"}
    exec(re.sub(r"\btorch\b", lib.__name__, VISION), space)
    transform_names = "RandomHorizontalFlip RandomResizedCrop ColorJitter RandomApply RandomGrayscale GaussianBlur Normalize"  # fmt: skip
    transforms = module(
        "torchvision.transforms",
        monkeypatch,
        Compose=Compose,
        ToTensor=to_tensor(lib),
        **{name: space[name] for name in transform_names.split()},
    )
    models = module("torchvision.models", monkeypatch, resnet18=space["resnet18"], DenseNet=space["DenseNet"])  # fmt: skip
    datasets = module("torchvision.datasets", monkeypatch, STL10=stl10(lib), CIFAR100=cifar100())
    return module("torchvision", monkeypatch, models=models, transforms=transforms, datasets=datasets)  # fmt: skip


def patterns(n_classes: int, size: int, seed: int) -> np.ndarray:
    """One smooth random colour pattern per class, (n_classes, size, size, 3) in [0, 1]."""
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(0, 1, (n_classes, 4, 4, 3))
    return coarse.repeat(size // 4, axis=1).repeat(size // 4, axis=2)


def images_of(pattern: np.ndarray, labels: np.ndarray, rng) -> np.ndarray:
    """Each label's pattern with noise, as uint8 (N, H, W, 3)."""
    x = pattern[labels] + rng.normal(0, 0.15, (len(labels),) + pattern.shape[1:])
    return (np.clip(x, 0, 1) * 255).astype(np.uint8)


def stl10(lib) -> type:
    """STL10's stand-in: 16x16 images of 10 class patterns; 'unlabeled' 48 images, 'train' 6
    per class, 'test' 4 per class (labels -1 for the unlabeled split, as torchvision's)."""
    sizes = {"unlabeled": 48, "train": 60, "test": 40}

    class STL10(lib.utils.data.Dataset):
        def __init__(self, root, split="train", download=False, transform=None):
            rng = np.random.default_rng(list(sizes).index(split))
            n = sizes[split]
            self.labels = np.arange(n) % 10
            self.data = images_of(patterns(10, 16, 17), self.labels, rng)  # (N, H, W, C)
            self.labels = self.labels if split != "unlabeled" else np.full(n, -1)
            self.transform = transform

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            return self.transform(self.data[index]), int(self.labels[index])

    return STL10


def cifar100() -> type:
    """CIFAR100's stand-in: 16x16 images of 20 class patterns, 12 training and 4 test images
    per class, with ``data`` (N, H, W, C) uint8, ``targets`` a list and ``class_to_idx``."""

    class CIFAR100:
        def __init__(self, root, train=True, download=False, transform=None):
            rng = np.random.default_rng(int(train))
            targets = np.arange(12 * 20 if train else 4 * 20) % 20
            self.data = images_of(patterns(20, 16, 5), targets, rng)
            self.targets = targets.tolist()
            self.class_to_idx = {f"class{i}": i for i in range(20)}

    return CIFAR100


# A Lightning module's glue, the same for both notebooks
LIGHTNING = r"""
class LightningModule(nn.Module):  # port: Lightning's module, its glue as plain Python
    def save_hyperparameters(self):  # port: the caller's arguments as hparams
        import inspect, types  # port: as above
        args = inspect.currentframe().f_back.f_locals  # port: as above
        self.hparams = types.SimpleNamespace(**{k: v for k, v in args.items() if k not in ("self", "__class__")})  # port: as above

    def log(self, name, value):  # port: Lightning's self.log, into a dict of lists
        self.logged.setdefault(name, []).append(float(value.detach()))  # port: as above

    def optimizers(self):  # port: the optimizer configure_optimizers made
        return self.optimizer  # port: as above


def fit(model, train_loader, val_loader, max_epochs):  # port: the loop of Lightning's Trainer.fit
    model.logged = {}  # port: as above
    (model.optimizer,), (scheduler,) = model.configure_optimizers()  # port: as above
    for epoch in range(max_epochs):  # port: as above
        model.train()  # port: as above
        for batch_idx, batch in enumerate(train_loader):  # port: as above
            loss = model.training_step(batch, batch_idx)  # port: as above
            if loss is not None:  # port: as above (None: the step updated the model itself)
                model.optimizer.zero_grad()  # port: as above
                loss.backward()  # port: as above
                model.optimizer.step()  # port: as above
        scheduler.step()  # port: as above
        model.eval()  # port: as above
        with torch.no_grad():  # port: as above
            for batch_idx, batch in enumerate(val_loader):  # port: as above
                model.validation_step(batch, batch_idx)  # port: as above
        torch.set_grad_enabled(True)  # port: as above (ProtoMAML's validation_step leaves gradients off)
        print(f"Epoch {epoch}: " + ", ".join(f"{k} {sum(v) / len(v):.4f}" for k, v in model.logged.items()))  # port: as above
        model.logged = {}  # port: as above


def test(model, loader):  # port: Lightning's Trainer.test
    model.logged = {}  # port: as above
    model.eval()  # port: as above
    with torch.no_grad():  # port: as above
        for batch_idx, batch in enumerate(loader):  # port: as above
            model.test_step(batch, batch_idx)  # port: as above
    return [{k: sum(v) / len(v) for k, v in model.logged.items()}]  # port: as above
"""

# tutorial17/SimCLR.ipynb, its code cells (the download, plotting and tensorboard ones left out)
SIMCLR = (
    r"""## Standard libraries
import os
from copy import deepcopy
# port: matplotlib, IPython, seaborn, pytorch_lightning and tensorboard's imports and magics left out (no plots; Lightning's glue below)

## tqdm for loading bars
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

## Torchvision
import torchvision
from torchvision.datasets import STL10
from torchvision import transforms

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial17"
# In this notebook, we use data loaders with heavier computational processing. It is recommended to use as many
# workers as possible in a data loader, which corresponds to the number of CPU cores
NUM_WORKERS = 0  # port: os.cpu_count(): no worker processes on a shared CPU

# Setting the seed
import random, numpy as np; torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device)
print("Number of workers:", NUM_WORKERS)
"""
    + LIGHTNING
    + r"""
class ContrastiveTransformations(object):
    
    def __init__(self, base_transforms, n_views=2):
        self.base_transforms = base_transforms
        self.n_views = n_views
        
    def __call__(self, x):
        return [self.base_transforms(x) for i in range(self.n_views)]

contrast_transforms = transforms.Compose([transforms.RandomHorizontalFlip(),
                                          transforms.RandomResizedCrop(size=16),  # port: 96 shrunk
                                          transforms.RandomApply([
                                              transforms.ColorJitter(brightness=0.5, 
                                                                     contrast=0.5, 
                                                                     saturation=0.5, 
                                                                     hue=0.1)
                                          ], p=0.8),
                                          transforms.RandomGrayscale(p=0.2),
                                          transforms.GaussianBlur(kernel_size=9),
                                          transforms.ToTensor(),
                                          transforms.Normalize((0.5,), (0.5,))
                                         ])

unlabeled_data = STL10(root=DATASET_PATH, split='unlabeled', download=True, 
                       transform=ContrastiveTransformations(contrast_transforms, n_views=2))
train_data_contrast = STL10(root=DATASET_PATH, split='train', download=True, 
                            transform=ContrastiveTransformations(contrast_transforms, n_views=2))

class SimCLR(LightningModule):  # port: pl.LightningModule
    
    def __init__(self, hidden_dim, lr, temperature, weight_decay, max_epochs=500):
        super().__init__()
        self.save_hyperparameters()
        assert self.hparams.temperature > 0.0, 'The temperature must be a positive float!'
        # Base model f(.)
        self.convnet = torchvision.models.resnet18(num_classes=4*hidden_dim)  # Output of last linear layer
        # The MLP for g(.) consists of Linear->ReLU->Linear 
        self.convnet.fc = nn.Sequential(
            self.convnet.fc,  # Linear(ResNet output, 4*hidden_dim)
            nn.ReLU(inplace=True),
            nn.Linear(4*hidden_dim, hidden_dim)
        )

    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), 
                                lr=self.hparams.lr, 
                                weight_decay=self.hparams.weight_decay)
        lr_scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer,
                                                            T_max=self.hparams.max_epochs,
                                                            eta_min=self.hparams.lr/50)
        return [optimizer], [lr_scheduler]
        
    def info_nce_loss(self, batch, mode='train'):
        imgs, _ = batch
        imgs = torch.cat(imgs, dim=0)
        
        # Encode all images
        feats = self.convnet(imgs)
        # Calculate cosine similarity
        cos_sim = F.cosine_similarity(feats[:,None,:], feats[None,:,:], dim=-1)
        # Mask out cosine similarity to itself
        self_mask = torch.eye(cos_sim.shape[0], dtype=torch.bool, device=cos_sim.device)
        cos_sim.masked_fill_(self_mask, -9e15)
        # Find positive example -> batch_size//2 away from the original example
        pos_mask = self_mask.roll(shifts=cos_sim.shape[0]//2, dims=0)
        # InfoNCE loss
        cos_sim = cos_sim / self.hparams.temperature
        nll = -cos_sim[pos_mask] + torch.logsumexp(cos_sim, dim=-1)
        nll = nll.mean()
        
        # Logging loss
        self.log(mode+'_loss', nll)
        # Get ranking position of positive example
        comb_sim = torch.cat([cos_sim[pos_mask][:,None],  # First position positive example
                              cos_sim.masked_fill(pos_mask, -9e15)], 
                             dim=-1)
        sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
        # Logging ranking metrics
        self.log(mode+'_acc_top1', (sim_argsort == 0).float().mean())
        self.log(mode+'_acc_top5', (sim_argsort < 5).float().mean())
        self.log(mode+'_acc_mean_pos', 1+sim_argsort.float().mean())
        
        return nll
        
    def training_step(self, batch, batch_idx):
        return self.info_nce_loss(batch, mode='train')
        
    def validation_step(self, batch, batch_idx):
        self.info_nce_loss(batch, mode='val')

def train_simclr(batch_size, max_epochs=500, **kwargs):
    # port: pl.Trainer, its callbacks and the pretrained checkpoint's check left out (no download, no Lightning)
    train_loader = data.DataLoader(unlabeled_data, batch_size=batch_size, shuffle=True, 
                                   drop_last=True, pin_memory=False, num_workers=NUM_WORKERS)  # port: no pinned memory without a GPU
    val_loader = data.DataLoader(train_data_contrast, batch_size=batch_size, shuffle=False, 
                                 drop_last=False, pin_memory=False, num_workers=NUM_WORKERS)  # port: as above
    torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42) # To be reproducable
    model = SimCLR(max_epochs=max_epochs, **kwargs)
    fit(model, train_loader, val_loader, max_epochs)  # port: trainer.fit, the last epoch's model kept (no checkpoint to reload)
    return model

simclr_model = train_simclr(batch_size=16,  # port: 256 shrunk
                            hidden_dim=16,  # port: 128 shrunk
                            lr=5e-3,  # port: 5e-4 raised for the shorter run
                            temperature=0.07, 
                            weight_decay=1e-4, 
                            max_epochs=4)  # port: 500 shrunk

class LogisticRegression(LightningModule):  # port: pl.LightningModule
    
    def __init__(self, feature_dim, num_classes, lr, weight_decay, max_epochs=100):
        super().__init__()
        self.save_hyperparameters()
        # Mapping from representation h to classes
        self.model = nn.Linear(feature_dim, num_classes)

    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), 
                                lr=self.hparams.lr, 
                                weight_decay=self.hparams.weight_decay)
        lr_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, 
                                                      milestones=[int(self.hparams.max_epochs*0.6), 
                                                                  int(self.hparams.max_epochs*0.8)], 
                                                      gamma=0.1)
        return [optimizer], [lr_scheduler]
        
    def _calculate_loss(self, batch, mode='train'):
        feats, labels = batch
        preds = self.model(feats)
        loss = F.cross_entropy(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()

        self.log(mode + '_loss', loss)
        self.log(mode + '_acc', acc)
        return loss        
        
    def training_step(self, batch, batch_idx):
        return self._calculate_loss(batch, mode='train')
        
    def validation_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode='val')
        
    def test_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode='test')

img_transforms = transforms.Compose([transforms.ToTensor(),
                                     transforms.Normalize((0.5,), (0.5,))])

train_img_data = STL10(root=DATASET_PATH, split='train', download=True,
                       transform=img_transforms)
test_img_data = STL10(root=DATASET_PATH, split='test', download=True,
                      transform=img_transforms)

print("Number of training examples:", len(train_img_data))
print("Number of test examples:", len(test_img_data))

@torch.no_grad()
def prepare_data_features(model, dataset):
    # Prepare model
    network = deepcopy(model.convnet)
    network.fc = nn.Identity()  # Removing projection head g(.)
    network.eval()
    network.to(device)
    
    # Encode all images
    data_loader = data.DataLoader(dataset, batch_size=64, num_workers=NUM_WORKERS, shuffle=False, drop_last=False)
    feats, labels = [], []
    for batch_imgs, batch_labels in tqdm(data_loader):
        batch_imgs = batch_imgs.to(device)
        batch_feats = network(batch_imgs)
        feats.append(batch_feats.detach().cpu())
        labels.append(batch_labels)
    
    feats = torch.cat(feats, dim=0)
    labels = torch.cat(labels, dim=0)
    
    # Sort images by labels
    labels, idxs = labels.sort()
    feats = feats[idxs]
    
    return data.TensorDataset(feats, labels)

train_feats_simclr = prepare_data_features(simclr_model, train_img_data)
test_feats_simclr = prepare_data_features(simclr_model, test_img_data)

def train_logreg(batch_size, train_feats_data, test_feats_data, model_suffix, max_epochs=100, **kwargs):
    # port: pl.Trainer, its callbacks and the pretrained checkpoint's check left out (no download, no Lightning)
    # Data loaders
    train_loader = data.DataLoader(train_feats_data, batch_size=batch_size, shuffle=True, 
                                   drop_last=False, pin_memory=False, num_workers=0)  # port: no pinned memory without a GPU
    test_loader = data.DataLoader(test_feats_data, batch_size=batch_size, shuffle=False, 
                                  drop_last=False, pin_memory=False, num_workers=0)  # port: as above

    torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)  # To be reproducable
    model = LogisticRegression(max_epochs=max_epochs, **kwargs)  # port: max_epochs passed on (Lightning's Trainer held it)
    fit(model, train_loader, test_loader, max_epochs)  # port: trainer.fit, the last epoch's model kept

    # Test best model on train and validation set
    train_result = test(model, train_loader)  # port: trainer.test(model, train_loader, verbose=False)
    test_result = test(model, test_loader)  # port: as above
    result = {"train": train_result[0]["test_acc"], "test": test_result[0]["test_acc"]}
        
    return model, result

def get_smaller_dataset(original_dataset, num_imgs_per_label):
    new_dataset = data.TensorDataset(
        *[t.unflatten(0, (10, -1))[:,:num_imgs_per_label].flatten(0, 1) for t in original_dataset.tensors]
    )
    return new_dataset

results = {}
for num_imgs_per_label in [2, 6]:  # port: [10, 20, 50, 100, 200, 500] for a set of 6 images per label
    sub_train_set = get_smaller_dataset(train_feats_simclr, num_imgs_per_label)
    _, small_set_results = train_logreg(batch_size=64,
                                        train_feats_data=sub_train_set,
                                        test_feats_data=test_feats_simclr,
                                        model_suffix=num_imgs_per_label,
                                        feature_dim=train_feats_simclr.tensors[0].shape[1],
                                        num_classes=10,
                                        lr=1e-2,  # port: 1e-3 raised for the shorter run
                                        weight_decay=1e-3,
                                        max_epochs=20)  # port: 100 shrunk
    results[num_imgs_per_label] = small_set_results

dataset_sizes = sorted([k for k in results])
test_scores = [results[k]["test"] for k in dataset_sizes]

for k, score in zip(dataset_sizes, test_scores):
    print(f'Test accuracy for {k:3d} images per label: {100*score:4.2f}%')

class ResNet(LightningModule):  # port: pl.LightningModule

    def __init__(self, num_classes, lr, weight_decay, max_epochs=100):
        super().__init__()
        self.save_hyperparameters()
        self.model = torchvision.models.resnet18(num_classes=num_classes)

    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), 
                                lr=self.hparams.lr, 
                                weight_decay=self.hparams.weight_decay)
        lr_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, 
                                                      milestones=[int(self.hparams.max_epochs*0.7), 
                                                                  int(self.hparams.max_epochs*0.9)], 
                                                      gamma=0.1)
        return [optimizer], [lr_scheduler]

    def _calculate_loss(self, batch, mode='train'):
        imgs, labels = batch
        preds = self.model(imgs)
        loss = F.cross_entropy(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()

        self.log(mode + '_loss', loss)
        self.log(mode + '_acc', acc)
        return loss

    def training_step(self, batch, batch_idx):
        return self._calculate_loss(batch, mode='train')

    def validation_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode='val')

    def test_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode='test')

train_transforms = transforms.Compose([transforms.RandomHorizontalFlip(),
                                       transforms.RandomResizedCrop(size=16, scale=(0.8, 1.0)),  # port: 96 shrunk
                                       transforms.RandomGrayscale(p=0.2),
                                       transforms.GaussianBlur(kernel_size=9, sigma=(0.1, 0.5)),
                                       transforms.ToTensor(),
                                       transforms.Normalize((0.5,), (0.5,))
                                       ])

train_img_aug_data = STL10(root=DATASET_PATH, split='train', download=True,
                           transform=train_transforms)

def train_resnet(batch_size, max_epochs=100, **kwargs):
    # port: pl.Trainer, its callbacks and the pretrained checkpoint's check left out (no download, no Lightning)
    # Data loaders
    train_loader = data.DataLoader(train_img_aug_data, batch_size=batch_size, shuffle=True, 
                                   drop_last=True, pin_memory=False, num_workers=NUM_WORKERS)  # port: no pinned memory without a GPU
    test_loader = data.DataLoader(test_img_data, batch_size=batch_size, shuffle=False, 
                                  drop_last=False, pin_memory=False, num_workers=NUM_WORKERS)  # port: as above

    torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42) # To be reproducable
    model = ResNet(max_epochs=max_epochs, **kwargs)  # port: max_epochs passed on (Lightning's Trainer held it)
    fit(model, train_loader, test_loader, max_epochs)  # port: trainer.fit, the last epoch's model kept

    # Test best model on validation set
    train_result = test(model, train_loader)  # port: trainer.test(model, train_loader, verbose=False)
    val_result = test(model, test_loader)  # port: as above
    result = {"train": train_result[0]["test_acc"], "test": val_result[0]["test_acc"]}
        
    return model, result

resnet_model, resnet_result = train_resnet(batch_size=20,  # port: 64 shrunk
                                           num_classes=10,
                                           lr=1e-2,  # port: 1e-3 raised for the shorter run
                                           weight_decay=2e-4,
                                           max_epochs=2)  # port: 100 shrunk
print(f"Accuracy on training set: {100*resnet_result['train']:4.2f}%")
print(f"Accuracy on test set: {100*resnet_result['test']:4.2f}%")
"""
)


# tutorial16/Meta_Learning.ipynb, its code cells (the download, plotting, tensorboard and SVHN ones left out)
META = (
    r"""## Standard libraries
import os
import numpy as np
import random
# port: matplotlib, IPython, seaborn, pytorch_lightning and tensorboard's imports and magics left out (no plots; Lightning's glue below)
import json
from PIL import Image
from collections import defaultdict
from statistics import mean, stdev
from copy import deepcopy

## tqdm for loading bars
from tqdm.auto import tqdm

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

## Torchvision
import torchvision
from torchvision.datasets import CIFAR100
from torchvision import transforms

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial16"

# Setting the seed
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device)
"""
    + LIGHTNING
    + r'''
# Loading CIFAR100 dataset
CIFAR_train_set = CIFAR100(root=DATASET_PATH, train=True, download=True, transform=transforms.ToTensor())
CIFAR_test_set = CIFAR100(root=DATASET_PATH, train=False, download=True, transform=transforms.ToTensor())

# Merging original training and test set
CIFAR_all_images = np.concatenate([CIFAR_train_set.data, CIFAR_test_set.data], axis=0)
CIFAR_all_targets = torch.LongTensor(CIFAR_train_set.targets + CIFAR_test_set.targets)

class ImageDataset(data.Dataset):

    def __init__(self, imgs, targets, img_transform=None):
        """
        Inputs:
            imgs - Numpy array of shape [N,32,32,3] containing all images.
            targets - PyTorch array of shape [N] containing all labels.
            img_transform - A torchvision transformation that should be applied
                            to the images before returning. If none, no transformation
                            is applied.
        """
        super().__init__()
        self.img_transform = img_transform
        self.imgs = imgs
        self.targets = targets

    def __getitem__(self, idx):
        img, target = self.imgs[idx], self.targets[idx]
        img = Image.fromarray(img)

        if self.img_transform is not None:
            img = self.img_transform(img)

        return img, target

    def __len__(self):
        return self.imgs.shape[0]

torch.manual_seed(0)           # Set seed for reproducibility
classes = torch.randperm(20)  # port: 100 classes shrunk to 20
train_classes, val_classes, test_classes = classes[:12], classes[12:16], classes[16:]  # port: 80/10/10 as 12/4/4

# Printing validation and test classes
idx_to_class = {val: key for key, val in CIFAR_train_set.class_to_idx.items()}
print("Validation classes:", [idx_to_class[c.item()] for c in val_classes])
print("Test classes:", [idx_to_class[c.item()] for c in test_classes])

def dataset_from_labels(imgs, targets, class_set, **kwargs):
    class_mask = (targets[:,None] == class_set[None,:]).any(dim=-1)
    return ImageDataset(imgs=imgs[class_mask],
                        targets=targets[class_mask],
                        **kwargs)

# Pre-computed statistics from the new train set
DATA_MEANS = torch.Tensor([0.5183975 , 0.49192241, 0.44651328])
DATA_STD = torch.Tensor([0.26770132, 0.25828985, 0.27961241])

test_transform = transforms.Compose([transforms.ToTensor(),
                                     transforms.Normalize(
                                         DATA_MEANS, DATA_STD)
                                     ])
# For training, we add some augmentation.
train_transform = transforms.Compose([transforms.RandomHorizontalFlip(),
                                      transforms.RandomResizedCrop(
                                          (16, 16), scale=(0.8, 1.0), ratio=(0.9, 1.1)),  # port: 32x32 images shrunk
                                      transforms.ToTensor(),
                                      transforms.Normalize(
                                          DATA_MEANS, DATA_STD)
                                      ])

train_set = dataset_from_labels(
    CIFAR_all_images, CIFAR_all_targets, train_classes, img_transform=train_transform)
val_set = dataset_from_labels(
    CIFAR_all_images, CIFAR_all_targets, val_classes, img_transform=test_transform)
test_set = dataset_from_labels(
    CIFAR_all_images, CIFAR_all_targets, test_classes, img_transform=test_transform)

class FewShotBatchSampler(object):

    def __init__(self, dataset_targets, N_way, K_shot, include_query=False, shuffle=True, shuffle_once=False):
        """
        Inputs:
            dataset_targets - PyTorch tensor of the labels of the data elements.
            N_way - Number of classes to sample per batch.
            K_shot - Number of examples to sample per class in the batch.
            include_query - If True, returns batch of size N_way*K_shot*2, which 
                            can be split into support and query set. Simplifies
                            the implementation of sampling the same classes but 
                            distinct examples for support and query set.
            shuffle - If True, examples and classes are newly shuffled in each
                      iteration (for training)
            shuffle_once - If True, examples and classes are shuffled once in 
                           the beginning, but kept constant across iterations 
                           (for validation)
        """
        super().__init__()
        self.dataset_targets = dataset_targets
        self.N_way = N_way
        self.K_shot = K_shot
        self.shuffle = shuffle
        self.include_query = include_query
        if self.include_query:
            self.K_shot *= 2
        self.batch_size = self.N_way * self.K_shot  # Number of overall images per batch

        # Organize examples by class
        self.classes = torch.unique(self.dataset_targets).tolist()
        self.num_classes = len(self.classes)
        self.indices_per_class = {}
        self.batches_per_class = {}  # Number of K-shot batches that each class can provide
        for c in self.classes:
            self.indices_per_class[c] = torch.where(self.dataset_targets == c)[0]
            self.batches_per_class[c] = self.indices_per_class[c].shape[0] // self.K_shot

        # Create a list of classes from which we select the N classes per batch
        self.iterations = sum(self.batches_per_class.values()) // self.N_way
        self.class_list = [c for c in self.classes for _ in range(self.batches_per_class[c])]
        if shuffle_once or self.shuffle:
            self.shuffle_data()
        else:
            # For testing, we iterate over classes instead of shuffling them
            sort_idxs = [i+p*self.num_classes for i,
                         c in enumerate(self.classes) for p in range(self.batches_per_class[c])]
            self.class_list = np.array(self.class_list)[np.argsort(sort_idxs)].tolist()

    def shuffle_data(self):
        # Shuffle the examples per class
        for c in self.classes:
            perm = torch.randperm(self.indices_per_class[c].shape[0])
            self.indices_per_class[c] = self.indices_per_class[c][perm]
        # Shuffle the class list from which we sample. Note that this way of shuffling
        # does not prevent to choose the same class twice in a batch. However, for 
        # training and validation, this is not a problem.
        random.shuffle(self.class_list)

    def __iter__(self):
        # Shuffle data
        if self.shuffle:
            self.shuffle_data()

        # Sample few-shot batches
        start_index = defaultdict(int)
        for it in range(self.iterations):
            class_batch = self.class_list[it*self.N_way:(it+1)*self.N_way]  # Select N classes for the batch
            index_batch = []
            for c in class_batch:  # For each class, select the next K examples and add them to the batch
                index_batch.extend(self.indices_per_class[c][start_index[c]:start_index[c]+self.K_shot])
                start_index[c] += self.K_shot
            if self.include_query:  # If we return support+query set, sort them so that they are easy to split
                index_batch = index_batch[::2] + index_batch[1::2]
            yield index_batch

    def __len__(self):
        return self.iterations

N_WAY = 5
K_SHOT = 4
train_data_loader = data.DataLoader(train_set,
                                    batch_sampler=FewShotBatchSampler(train_set.targets,
                                                                      include_query=True,
                                                                      N_way=N_WAY,
                                                                      K_shot=K_SHOT,
                                                                      shuffle=True),
                                    num_workers=0)  # port: no worker processes on a shared CPU
val_data_loader = data.DataLoader(val_set,
                                  batch_sampler=FewShotBatchSampler(val_set.targets,
                                                                    include_query=True,
                                                                    N_way=N_WAY,
                                                                    K_shot=K_SHOT,
                                                                    shuffle=False,
                                                                    shuffle_once=True),
                                  num_workers=0)  # port: as above

def split_batch(imgs, targets):
    support_imgs, query_imgs = imgs.chunk(2, dim=0)
    support_targets, query_targets = targets.chunk(2, dim=0)
    return support_imgs, query_imgs, support_targets, query_targets

imgs, targets = next(iter(val_data_loader))  # We use the validation set since it does not apply augmentations
support_imgs, query_imgs, _, _ = split_batch(imgs, targets)
print("Support set:", tuple(support_imgs.shape), "Query set:", tuple(query_imgs.shape))  # port: printed, not plotted

def get_convnet(output_size):
    convnet = torchvision.models.DenseNet(growth_rate=8,  # port: 32 shrunk
                                          block_config=(1, 1),  # port: (6, 6, 6, 6) shrunk
                                          bn_size=2,
                                          num_init_features=16,  # port: 64 shrunk
                                          num_classes=output_size  # Output dimensionality
                                         )
    return convnet

class ProtoNet(LightningModule):  # port: pl.LightningModule

    def __init__(self, proto_dim, lr):
        """
        Inputs
            proto_dim - Dimensionality of prototype feature space
            lr - Learning rate of Adam optimizer
        """
        super().__init__()
        self.save_hyperparameters()
        self.model = get_convnet(output_size=self.hparams.proto_dim)

    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), lr=self.hparams.lr)
        scheduler = optim.lr_scheduler.MultiStepLR(
            optimizer, milestones=[140, 180], gamma=0.1)
        return [optimizer], [scheduler]

    @staticmethod
    def calculate_prototypes(features, targets):
        # Given a stack of features vectors and labels, return class prototypes
        # features - shape [N, proto_dim], targets - shape [N]
        classes, _ = torch.unique(targets).sort()  # Determine which classes we have
        prototypes = []
        for c in classes:
            p = features[torch.where(targets == c)[0]].mean(dim=0)  # Average class feature vectors
            prototypes.append(p)
        prototypes = torch.stack(prototypes, dim=0)
        # Return the 'classes' tensor to know which prototype belongs to which class
        return prototypes, classes

    def classify_feats(self, prototypes, classes, feats, targets):
        # Classify new examples with prototypes and return classification error
        dist = torch.pow(prototypes[None, :] - feats[:, None], 2).sum(dim=2)  # Squared euclidean distance
        preds = F.log_softmax(-dist, dim=1)
        labels = (classes[None, :] == targets[:, None]).long().argmax(dim=-1)
        acc = (preds.argmax(dim=1) == labels).float().mean()
        return preds, labels, acc

    def calculate_loss(self, batch, mode):
        # Determine training loss for a given support and query set 
        imgs, targets = batch
        features = self.model(imgs)  # Encode all images of support and query set
        support_feats, query_feats, support_targets, query_targets = split_batch(features, targets)
        prototypes, classes = ProtoNet.calculate_prototypes(support_feats, support_targets)
        preds, labels, acc = self.classify_feats(prototypes, classes, query_feats, query_targets)
        loss = F.cross_entropy(preds, labels)

        self.log(f"{mode}_loss", loss)
        self.log(f"{mode}_acc", acc)
        return loss

    def training_step(self, batch, batch_idx):
        return self.calculate_loss(batch, mode="train")

    def validation_step(self, batch, batch_idx):
        _ = self.calculate_loss(batch, mode="val")

def train_model(model_class, train_loader, val_loader, **kwargs):
    # port: pl.Trainer, its callbacks and the pretrained checkpoint's check left out (no download, no Lightning)
    torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)  # To be reproducable
    model = model_class(**kwargs)
    fit(model, train_loader, val_loader, max_epochs=3)  # port: trainer.fit (200 epochs), the last epoch's model kept
    return model

protonet_model = train_model(ProtoNet, 
                             proto_dim=16,  # port: 64 shrunk
                             lr=2e-3,  # port: 2e-4 raised for the shorter run
                             train_loader=train_data_loader, 
                             val_loader=val_data_loader)

@torch.no_grad()
def test_proto_net(model, dataset, data_feats=None, k_shot=4):
    """
    Inputs
        model - Pretrained ProtoNet model
        dataset - The dataset on which the test should be performed. 
                  Should be instance of ImageDataset
        data_feats - The encoded features of all images in the dataset.
                     If None, they will be newly calculated, and returned
                     for later usage.
        k_shot - Number of examples per class in the support set.
    """
    model = model.to(device)
    model.eval()
    num_classes = dataset.targets.unique().shape[0]
    exmps_per_class = dataset.targets.shape[0]//num_classes  # We assume uniform example distribution here
    
    # The encoder network remains unchanged across k-shot settings. Hence, we only need 
    # to extract the features for all images once.
    if data_feats is None:
        # Dataset preparation
        dataloader = data.DataLoader(dataset, batch_size=128, num_workers=0, shuffle=False, drop_last=False)  # port: no worker processes

        img_features = []
        img_targets = []
        for imgs, targets in tqdm(dataloader, "Extracting image features", leave=False): 
            imgs = imgs.to(device)
            feats = model.model(imgs)
            img_features.append(feats.detach().cpu())
            img_targets.append(targets)
        img_features = torch.cat(img_features, dim=0)
        img_targets = torch.cat(img_targets, dim=0)
        # Sort by classes, so that we obtain tensors of shape [num_classes, exmps_per_class, ...]
        # Makes it easier to process later
        img_targets, sort_idx = img_targets.sort()
        img_targets = img_targets.reshape(num_classes, exmps_per_class).transpose(0, 1)
        img_features = img_features[sort_idx].reshape(num_classes, exmps_per_class, -1).transpose(0, 1)
    else:
        img_features, img_targets = data_feats
    
    # We iterate through the full dataset in two manners. First, to select the k-shot batch. 
    # Second, the evaluate the model on all other examples
    accuracies = []
    for k_idx in tqdm(range(0, img_features.shape[0], k_shot), "Evaluating prototype classification", leave=False):
        # Select support set and calculate prototypes
        k_img_feats, k_targets = img_features[k_idx:k_idx+k_shot].flatten(0,1), img_targets[k_idx:k_idx+k_shot].flatten(0,1)
        prototypes, proto_classes = model.calculate_prototypes(k_img_feats, k_targets) 
        # Evaluate accuracy on the rest of the dataset
        batch_acc = 0
        for e_idx in range(0, img_features.shape[0], k_shot):
            if k_idx == e_idx:  # Do not evaluate on the support set examples
                continue
            e_img_feats, e_targets = img_features[e_idx:e_idx+k_shot].flatten(0,1), img_targets[e_idx:e_idx+k_shot].flatten(0,1)
            _, _, acc = model.classify_feats(prototypes, proto_classes, e_img_feats, e_targets)
            batch_acc += acc.item()
        batch_acc /= img_features.shape[0]//k_shot-1
        accuracies.append(batch_acc)
    
    return (mean(accuracies), stdev(accuracies)), (img_features, img_targets)

protonet_accuracies = dict()
data_feats = None
for k in [2, 4, 8]:  # port: [2, 4, 8, 16, 32] for 16 images per class
    protonet_accuracies[k], data_feats = test_proto_net(protonet_model, test_set, data_feats=data_feats, k_shot=k)
    print(f"Accuracy for k={k}: {100.0*protonet_accuracies[k][0]:4.2f}% (+-{100*protonet_accuracies[k][1]:4.2f}%)")

class ProtoMAML(LightningModule):  # port: pl.LightningModule
    
    def __init__(self, proto_dim, lr, lr_inner, lr_output, num_inner_steps):
        """
        Inputs
            proto_dim - Dimensionality of prototype feature space
            lr - Learning rate of the outer loop Adam optimizer
            lr_inner - Learning rate of the inner loop SGD optimizer
            lr_output - Learning rate for the output layer in the inner loop
            num_inner_steps - Number of inner loop updates to perform
        """
        super().__init__()
        self.save_hyperparameters()
        self.model = get_convnet(output_size=self.hparams.proto_dim)
        
    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), lr=self.hparams.lr)
        scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[140,180], gamma=0.1)
        return [optimizer], [scheduler]
        
    def run_model(self, local_model, output_weight, output_bias, imgs, labels):
        # Execute a model with given output layer weights and inputs
        feats = local_model(imgs)
        preds = F.linear(feats, output_weight, output_bias)
        loss = F.cross_entropy(preds, labels)
        acc = (preds.argmax(dim=1) == labels).float()
        return loss, preds, acc
        
    def adapt_few_shot(self, support_imgs, support_targets):
        # Determine prototype initialization
        support_feats = self.model(support_imgs)
        prototypes, classes = ProtoNet.calculate_prototypes(support_feats, support_targets)
        support_labels = (classes[None,:] == support_targets[:,None]).long().argmax(dim=-1)
        # Create inner-loop model and optimizer
        local_model = deepcopy(self.model)
        local_model.train()
        local_optim = optim.SGD(local_model.parameters(), lr=self.hparams.lr_inner)
        local_optim.zero_grad()
        # Create output layer weights with prototype-based initialization
        init_weight = 2 * prototypes
        init_bias = -torch.norm(prototypes, dim=1)**2
        output_weight = init_weight.detach().requires_grad_()
        output_bias = init_bias.detach().requires_grad_()
        
        # Optimize inner loop model on support set
        for _ in range(self.hparams.num_inner_steps):
            # Determine loss on the support set
            loss, _, _ = self.run_model(local_model, output_weight, output_bias, support_imgs, support_labels)
            # Calculate gradients and perform inner loop update
            loss.backward()
            local_optim.step()
            # Update output layer via SGD
            # (https://discuss.pytorch.org/t/the-difference-between-torch-tensor-data-and-torch-tensor/25995/4): 
            with torch.no_grad():
                output_weight.copy_(output_weight - self.hparams.lr_output * output_weight.grad)
                output_bias.copy_(output_bias - self.hparams.lr_output * output_bias.grad)
            
            # Reset gradients
            local_optim.zero_grad()
            output_weight.grad.fill_(0)
            output_bias.grad.fill_(0)
            
        # Re-attach computation graph of prototypes
        output_weight = (output_weight - init_weight).detach() + init_weight
        output_bias = (output_bias - init_bias).detach() + init_bias
        
        return local_model, output_weight, output_bias, classes
        
    def outer_loop(self, batch, mode="train"):
        accuracies = []
        losses = []
        self.model.zero_grad()
        
        # Determine gradients for batch of tasks
        for task_batch in batch:
            imgs, targets = task_batch
            support_imgs, query_imgs, support_targets, query_targets = split_batch(imgs, targets)
            # Perform inner loop adaptation
            local_model, output_weight, output_bias, classes = self.adapt_few_shot(support_imgs, support_targets)
            # Determine loss of query set
            query_labels = (classes[None,:] == query_targets[:,None]).long().argmax(dim=-1)
            loss, preds, acc = self.run_model(local_model, output_weight, output_bias, query_imgs, query_labels)
            # Calculate gradients for query set loss
            if mode == "train":
                loss.backward()

                for p_global, p_local in zip(self.model.parameters(), local_model.parameters()):
                    p_global.grad += p_local.grad  # First-order approx. -> add gradients of finetuned and base model
            
            accuracies.append(acc.mean().detach())
            losses.append(loss.detach())
        
        # Perform update of base model
        if mode == "train":
            opt = self.optimizers()
            opt.step()
            opt.zero_grad()
        
        self.log(f"{mode}_loss", sum(losses) / len(losses))
        self.log(f"{mode}_acc", sum(accuracies) / len(accuracies))
    
    def training_step(self, batch, batch_idx):
        self.outer_loop(batch, mode="train")
        return None  # Returning None means we skip the default training optimizer steps by PyTorch Lightning
        
    def validation_step(self, batch, batch_idx):
        # Validation requires to finetune a model, hence we need to enable gradients
        torch.set_grad_enabled(True)
        self.outer_loop(batch, mode="val")
        torch.set_grad_enabled(False)

class TaskBatchSampler(object):
    
    def __init__(self, dataset_targets, batch_size, N_way, K_shot, include_query=False, shuffle=True):
        """
        Inputs:
            dataset_targets - PyTorch tensor of the labels of the data elements.
            batch_size - Number of tasks to aggregate in a batch
            N_way - Number of classes to sample per batch.
            K_shot - Number of examples to sample per class in the batch.
            include_query - If True, returns batch of size N_way*K_shot*2, which 
                            can be split into support and query set. Simplifies
                            the implementation of sampling the same classes but 
                            distinct examples for support and query set.
            shuffle - If True, examples and classes are newly shuffled in each
                      iteration (for training)
        """
        super().__init__()
        self.batch_sampler = FewShotBatchSampler(dataset_targets, N_way, K_shot, include_query, shuffle)
        self.task_batch_size = batch_size
        self.local_batch_size = self.batch_sampler.batch_size
        
    def __iter__(self):
        # Aggregate multiple batches before returning the indices
        batch_list = []
        for batch_idx, batch in enumerate(self.batch_sampler):
            batch_list.extend(batch)
            if (batch_idx+1) % self.task_batch_size == 0:
                yield batch_list
                batch_list = []
        
    def __len__(self):
        return len(self.batch_sampler)//self.task_batch_size
    
    def get_collate_fn(self):
        # Returns a collate function that converts one big tensor into a list of task-specific tensors
        def collate_fn(item_list):
            imgs = torch.stack([img for img, target in item_list], dim=0)
            targets = torch.stack([target for img, target in item_list], dim=0)
            imgs = imgs.chunk(self.task_batch_size, dim=0)
            targets = targets.chunk(self.task_batch_size, dim=0)
            return list(zip(imgs, targets))
        return collate_fn

# Training constant (same as for ProtoNet)
N_WAY = 5
K_SHOT = 4

# Training set
train_protomaml_sampler = TaskBatchSampler(train_set.targets, 
                                           include_query=True,
                                           N_way=N_WAY,
                                           K_shot=K_SHOT,
                                           batch_size=2)  # port: 16 tasks shrunk
train_protomaml_loader = data.DataLoader(train_set, 
                                         batch_sampler=train_protomaml_sampler,
                                         collate_fn=train_protomaml_sampler.get_collate_fn(),
                                         num_workers=0)  # port: no worker processes

# Validation set
val_protomaml_sampler = TaskBatchSampler(val_set.targets, 
                                         include_query=True,
                                         N_way=N_WAY,
                                         K_shot=K_SHOT,
                                         batch_size=1,  # We do not update the parameters, hence the batch size is irrelevant here
                                         shuffle=False)
val_protomaml_loader = data.DataLoader(val_set, 
                                       batch_sampler=val_protomaml_sampler,
                                       collate_fn=val_protomaml_sampler.get_collate_fn(),
                                       num_workers=0)  # port: as above

protomaml_model = train_model(ProtoMAML, 
                              proto_dim=16,  # port: 64 shrunk
                              lr=2e-3,  # port: 1e-3 raised for the shorter run
                              lr_inner=0.1,
                              lr_output=0.1,
                              num_inner_steps=1,  # Often values between 1 and 10
                              train_loader=train_protomaml_loader, 
                              val_loader=val_protomaml_loader)

def test_protomaml(model, dataset, k_shot=4):
    torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)
    model = model.to(device)
    num_classes = dataset.targets.unique().shape[0]
    exmps_per_class = dataset.targets.shape[0]//num_classes
    
    # Data loader for full test set as query set
    full_dataloader = data.DataLoader(dataset, 
                                      batch_size=128, 
                                      num_workers=0,  # port: no worker processes
                                      shuffle=False, 
                                      drop_last=False)
    # Data loader for sampling support sets
    sampler = FewShotBatchSampler(dataset.targets, 
                                  include_query=False,
                                  N_way=num_classes,
                                  K_shot=k_shot,
                                  shuffle=False,
                                  shuffle_once=False)
    sample_dataloader = data.DataLoader(dataset, 
                                        batch_sampler=sampler,
                                        num_workers=0)  # port: as above
    
    # We iterate through the full dataset in two manners. First, to select the k-shot batch. 
    # Second, the evaluate the model on all other examples
    accuracies = []
    for (support_imgs, support_targets), support_indices in tqdm(zip(sample_dataloader, sampler), "Performing few-shot finetuning"):
        support_imgs = support_imgs.to(device)
        support_targets = support_targets.to(device)
        # Finetune new model on support set
        local_model, output_weight, output_bias, classes = model.adapt_few_shot(support_imgs, support_targets)
        with torch.no_grad():  # No gradients for query set needed
            local_model.eval()
            batch_acc = torch.zeros((0,), dtype=torch.float32, device=device)
            # Evaluate all examples in test dataset
            for query_imgs, query_targets in full_dataloader:
                query_imgs = query_imgs.to(device)
                query_targets = query_targets.to(device)
                query_labels = (classes[None,:] == query_targets[:,None]).long().argmax(dim=-1)
                _, _, acc = model.run_model(local_model, output_weight, output_bias, query_imgs, query_labels)
                batch_acc = torch.cat([batch_acc, acc.detach()], dim=0)
            # Exclude support set elements
            for s_idx in support_indices:
                batch_acc[s_idx] = 0
            batch_acc = batch_acc.sum().item() / (batch_acc.shape[0] - len(support_indices))
            accuracies.append(batch_acc)
    return mean(accuracies), stdev(accuracies)

protomaml_model.hparams.num_inner_steps = 5  # port: 200 shrunk

# Perform same experiments as for ProtoNet
protomaml_accuracies = dict()
for k in [4, 8]:  # port: [2, 4, 8, 16, 32] for 16 images per class, no results file
    protomaml_accuracies[k] = test_protomaml(protomaml_model, test_set, k_shot=k)

for k in protomaml_accuracies:
    print(f"Accuracy for k={k}: {100.0*protomaml_accuracies[k][0]:4.2f}% (+-{100.0*protomaml_accuracies[k][1]:4.2f}%)")
'''
)


def both(script: str, tmp_path, monkeypatch):
    """``script`` run as ``__main__`` under torch, then with ``torch`` replaced by ``tricycle``
    in its text, each with its stand-in torchvision, both on the CPU on one thread."""
    pytest.importorskip("PIL")
    pytest.importorskip("tqdm")
    results = []
    with torch_and_tricycle(monkeypatch) as libs:
        for lib in libs:
            vision(lib, monkeypatch)
            folder = tmp_path / lib.__name__ / "notebooks"
            folder.mkdir(parents=True)
            text = re.sub(r"\btorch\b", lib.__name__, script)  # torchvision stays
            results.append(run_main(text, folder, monkeypatch, "notebook.py"))
    return tuple(results)


@pytest.fixture(scope="module")
def simclr(tmp_path_factory):
    """tutorial17 run under both libraries, once for the module's tests."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return both(SIMCLR, tmp_path_factory.mktemp("tutorial17"), monkeypatch)


@pytest.fixture(scope="module")
def meta(tmp_path_factory):
    """tutorial16 run under both libraries, once for the module's tests."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return both(META, tmp_path_factory.mktemp("tutorial16"), monkeypatch)


def epochs(name: str, printed: str) -> list[float]:
    """The values of ``name`` the training loop printed, epoch by epoch, run after run."""
    return numbers(rf"\b{name} (-?[\d.]+)", printed)


def test_simclr(simclr):
    (theirs, their_space), (ours, space) = simclr
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        # the InfoNCE loss falls to below chance's, log(2 * 16 - 1); the linear probes on the
        # frozen features beat chance (10 classes); the supervised baseline's loss falls
        info_nce = epochs("train_loss", printed)[:4]
        assert info_nce[-1] < info_nce[0] and info_nce[-1] < np.log(31), printed
        assert min(numbers(r"images per label: ([\d.]+)%", printed)) > 20, printed
        baseline = epochs("train_loss", printed)[-2:]
        assert baseline[1] < baseline[0], printed
    # the features are the encoder's without its head (fc an Identity), sorted by label
    for namespace in their_space, space:
        feats, labels = namespace["train_feats_simclr"].tensors
        assert tuple(feats.shape) == (60, 16) and (np.diff(labels.numpy()) >= 0).all()
        assert isinstance(namespace["simclr_model"].convnet.fc, namespace["nn"].Sequential)


def test_simclr_gives_torchs_numbers_with_torchs_weights(simclr):
    """The trained torch SimCLR's weights in the tutorial's tricycle model: torch's InfoNCE
    loss and ranking metrics on two views of a batch, and torch's parameter gradients."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = simclr
    theirs, ours = their_space["simclr_model"], space["simclr_model"]
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    views = np.random.default_rng(0).normal(0, 1, (2, 6, 3, 16, 16)).astype(np.float32)
    losses, logged = [], []
    with one_thread(torch):  # small products, as the notebooks ran them
        for lib, model in (torch, theirs), (tricycle, ours):
            model.train()
            model.zero_grad()
            model.logged = {}
            loss = model.info_nce_loss(([lib.tensor(v) for v in views], None))
            loss.backward()
            losses.append(loss.item())
            logged.append(model.logged)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    for name in "train_acc_top1", "train_acc_top5", "train_acc_mean_pos":
        assert logged[1][name] == pytest.approx(logged[0][name], rel=1e-6), name
    grads = torch_layout_grads(ours)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=2e-3, atol=2e-5, err_msg=name)


def test_meta_learning(meta):
    (theirs, their_space), (ours, space) = meta
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        # ProtoNet's and ProtoMAML's training losses fall; their few-shot accuracies on the
        # unseen classes beat chance (4 classes)
        protonet, protomaml = epochs("train_loss", printed)[:3], epochs("train_loss", printed)[3:]
        assert protonet[-1] < protonet[0] and protomaml[-1] < protomaml[0], printed
        assert min(numbers(r"Accuracy for k=\d+: ([\d.]+)%", printed)) > 50, printed
    # the few-shot sampler gives torch's batches of ids on the same labels, unshuffled
    targets = np.repeat(np.arange(4), 6)[np.random.default_rng(0).permutation(24)]
    batches = []
    for lib, namespace in (pytest.importorskip("torch"), their_space), (__import__("tricycle"), space):  # fmt: skip
        sampler = namespace["FewShotBatchSampler"](lib.tensor(targets), N_way=4, K_shot=2, include_query=True, shuffle=False)  # fmt: skip
        batches.append([[int(i) for i in batch] for batch in sampler])
    assert batches[1] == batches[0] and len(batches[0]) == 1


def test_protonet_and_protomaml_give_torchs_numbers_with_torchs_weights(meta):
    """The trained torch models' weights in the tutorial's tricycle models: ProtoNet's loss and
    gradients on a support and query batch; ProtoMAML's first-order step (the inner SGD step on
    a copy, the output layer from the prototypes, the query loss's gradients of the copy and,
    through the re-attached prototypes, of the base model)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = meta
    rng = np.random.default_rng(0)
    imgs = rng.normal(0, 1, (16, 3, 16, 16)).astype(np.float32)
    targets = np.tile(np.array([3, 7, 1, 9]), 4)  # support then query, 2 shots of 4 classes
    with one_thread(torch):  # small products, as the notebooks ran them
        for name in "protonet_model", "protomaml_model":
            theirs, ours = their_space[name], space[name]
            assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
            theirs.hparams.num_inner_steps = ours.hparams.num_inner_steps = 1  # as it trained
            losses, models = [], []
            for lib, model in (torch, theirs), (tricycle, ours):
                model.train()
                model.zero_grad()
                model.logged = {}
                x, y = lib.tensor(imgs), lib.tensor(targets)
                if name == "protonet_model":
                    loss = model.calculate_loss((x, y), mode="train")
                else:
                    support, query, support_y, query_y = space["split_batch"](x, y)
                    local, weight, bias, classes = model.adapt_few_shot(support, support_y)
                    labels = (classes[None, :] == query_y[:, None]).long().argmax(dim=-1)
                    loss, _, _ = model.run_model(local, weight, bias, query, labels)
                    models.append((local, weight.detach().numpy(), bias.detach().numpy()))
                loss.backward()
                losses.append(loss.item())
            np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4, err_msg=name)
            pairs = [(theirs, ours)]
            if models:  # the adapted copy, its output layer and its gradients
                (their_local, *their_layer), (our_local, *our_layer) = models
                for got, want in zip(our_layer, their_layer):
                    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
                pairs.append((their_local, our_local))
            for their_model, our_model in pairs:
                grads = torch_layout_grads(our_model)
                for p_name, p in their_model.named_parameters():
                    np.testing.assert_allclose(grads[p_name], p.grad.numpy(), rtol=2e-3, atol=2e-5, err_msg=f"{name} {p_name}")  # fmt: skip


def test_second_order_maml_is_refused_clearly():
    """MAML's second-order inner step (the notebook's ProtoMAML is first order) differentiates
    a gradient: torch's ``autograd.grad(..., create_graph=True)``, which tricycle refuses with
    its clear error (no double backward: documented)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = np.random.default_rng(0).normal(0, 1, (4, 3)).astype(np.float32)
    for lib in torch, tricycle:
        model = lib.nn.Linear(3, 2)
        loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor([0, 1, 1, 0]))
        params = list(model.parameters())
        if lib is torch:  # the adapted weights keep a graph back to the originals
            grads = torch.autograd.grad(loss, params, create_graph=True)
            assert all(g.requires_grad for g in grads)
            continue
        with pytest.raises(NotImplementedError, match=r"create_graph=True .* is not supported"):
            lib.autograd.grad(loss, params, create_graph=True)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4)])
def test_where_of_a_condition_alone_is_torchs(shape):
    """``torch.where(condition)`` (the few-shot sampler's ``torch.where(targets == c)[0]``) is
    ``nonzero(condition, as_tuple=True)``: torch's int64 ids per axis, which index the values
    where the condition holds; one of ``input``/``other`` without the other is a TypeError, as
    in torch."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = np.random.default_rng(len(shape)).integers(0, 3, shape)
    want, got = torch.where(torch.tensor(x) > 0), tricycle.where(tricycle.tensor(x) > 0)
    assert isinstance(got, tuple) and len(got) == len(want) == max(len(shape), 1)
    for ours, theirs in zip(got, want):
        assert ours.dtype == tricycle.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if shape:
        np.testing.assert_array_equal(tricycle.tensor(x)[got].numpy(), x[x > 0])
    for lib in torch, tricycle:
        with pytest.raises(TypeError):
            lib.where(lib.tensor(x) > 0, lib.tensor(x))
