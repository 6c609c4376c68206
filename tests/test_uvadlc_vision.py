"""Phillip Lippe's UvA Deep Learning tutorials 5 ("Inception, ResNet and DenseNet") and 15
("Vision Transformers"), docs/tutorial_notebooks of phlippe/uvadlc_notebooks, run on tricycle
with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_uvadlc_transformers.py).

- tutorial5: the models as written: ``InceptionBlock`` (four branches of ``Conv2d``,
  ``BatchNorm2d`` and the activation class, ``MaxPool2d(3, padding=1, stride=1)``, joined by
  ``torch.cat(dim=1)``) and ``GoogleNet``, ``ResNetBlock`` and ``PreActResNetBlock`` (strided
  convolutions without bias, a 1x1 downsampling shortcut) in ``ResNet``, ``DenseLayer``,
  ``DenseBlock``, ``TransitionLayer`` (``AvgPool2d``) and ``DenseNet``; ``act_fn_by_name``,
  ``create_model`` from ``model_dict``, their ``_init_params`` loops over ``self.modules()``
  (``kaiming_normal_`` with ``mode='fan_out'``, ``constant_``), the data's mean and std,
  ``random_split`` under ``set_seed``, a batch's ``mean(dim=[0,2,3])``/``std``, and
  ``CIFARModule``'s steps with AdamW or SGD (momentum, weight decay) under ``MultiStepLR``;
  each model trained two epochs.
- tutorial15: ``img_to_patch`` (``reshape``, ``permute``, ``flatten(1,2)``), ``AttentionBlock``
  over ``nn.MultiheadAttention`` (sequence first), ``VisionTransformer`` with its
  ``nn.Parameter`` cls token and positional embedding (``torch.cat``, sliced), GELU and
  dropout, trained six epochs with AdamW.

Lightning's glue is a plain loop (``save_hyperparameters`` as a namespace, ``self.log`` into a
dict, ``Trainer.fit``/``test``); CIFAR10 is small blocky 32x32 images written by the test in
its layout (uint8 (N, 32, 32, 3)), normalised as ``ToTensor``/``Normalize`` do (the
augmentation is left out: torchvision is not installed); sizes and epochs are shrunk. Each
other changed line ends in ``# port:`` and says why: the init loops take a convolution's
weight and a norm's weight and bias by position (tricycle names them ``weights``, ``gamma``,
``beta``) and the ViT's ``cls_token.repeat(B, 1, 1)`` is ``tile`` (both documented). Each
notebook runs under torch (skipped without it), then under tricycle; both print the same lines
(numbers and reprs aside), every model's loss falls, and the data's statistics and the
models' parameter counts are torch's. With torch's trained weights (``nn.from_torch``) every
model gives torch's logits, loss, input and parameter gradients and batch-norm running
statistics, in training and in evaluation mode. What the tutorials needed: ``from_torch`` and
``to_torch`` carry a norm's ``num_batches_tracked`` (it was written as 0 and not loaded;
tests/test_torch_weights.py).
"""

# ruff: noqa: E501, W291, W293, E702

import copy

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import numbers
from tests.test_torch_tutorials_u import fell, kinds

pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true:UserWarning")

# tutorial5/Inception_ResNet_DenseNet.ipynb, its code cells (downloads, plots and magics left out)
TUTORIAL5 = r'''
## Standard libraries
import os
import numpy as np 
import random
# from PIL import Image  # port: PIL only shows the augmentation examples (dropped)
from types import SimpleNamespace

## PyTorch
import torch
import torch.nn as nn
import torch.utils.data as data
import torch.optim as optim
# Torchvision  # port: torchvision is not installed; CIFAR10 is built below (no download)

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "data"  # port: beside the run, not ../
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "saved_models/tutorial5"  # port: beside the run, not ../

# Function for setting the seed
def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
set_seed(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu") 

cifar = np.load("cifar10.npz")  # port: CIFAR10(root=DATASET_PATH, train=True, download=True): small images written by the test
train_dataset = SimpleNamespace(data=cifar["train_images"], targets=cifar["train_labels"])  # port: as above, its .data (N, 32, 32, 3) uint8
DATA_MEANS = (train_dataset.data / 255.0).mean(axis=(0,1,2))
DATA_STD = (train_dataset.data / 255.0).std(axis=(0,1,2))
print("Data mean", DATA_MEANS)
print("Data std", DATA_STD) 

def test_transform(images):  # port: transforms.Compose([ToTensor(), Normalize(DATA_MEANS, DATA_STD)]) on the whole array
    return torch.tensor(((images / 255.0 - DATA_MEANS) / DATA_STD).transpose(0, 3, 1, 2), dtype=torch.float32)  # port: as above
# port: the augmentation (RandomHorizontalFlip, RandomResizedCrop) left out: torchvision's transforms
train_dataset = data.TensorDataset(test_transform(train_dataset.data), torch.tensor(train_dataset.targets))  # port: CIFAR10(train=True, transform=...)
val_dataset = train_dataset  # port: the same images without augmentation
set_seed(42)
train_set, _ = torch.utils.data.random_split(train_dataset, [32, 8])  # port: [45000, 5000] shrunk
set_seed(42)
_, val_set = torch.utils.data.random_split(val_dataset, [32, 8])  # port: [45000, 5000] shrunk

# Loading the test set
test_set = data.TensorDataset(test_transform(cifar["test_images"]), torch.tensor(cifar["test_labels"]))  # port: CIFAR10(train=False, ...)

# We define a set of data loaders that we can use for various purposes later.
train_loader = data.DataLoader(train_set, batch_size=8, shuffle=True, drop_last=True, pin_memory=True, num_workers=0)  # port: batch 128 and 4 workers shrunk
val_loader = data.DataLoader(val_set, batch_size=8, shuffle=False, drop_last=False, num_workers=0)  # port: as above
test_loader = data.DataLoader(test_set, batch_size=8, shuffle=False, drop_last=False, num_workers=0)  # port: as above

imgs, _ = next(iter(train_loader))
print("Batch mean", imgs.mean(dim=[0,2,3]))
print("Batch std", imgs.std(dim=[0,2,3])) 

# Setting the seed
set_seed(42)  # port: pl.seed_everything(42)

class CIFARModule(nn.Module):  # port: nn.Module, not pl.LightningModule

    def __init__(self, model_name, model_hparams, optimizer_name, optimizer_hparams):
        """
        Inputs:
            model_name - Name of the model/CNN to run. Used for creating the model (see function below)
            model_hparams - Hyperparameters for the model, as dictionary.
            optimizer_name - Name of the optimizer to use. Currently supported: Adam, SGD
            optimizer_hparams - Hyperparameters for the optimizer, as dictionary. This includes learning rate, weight decay, etc.
        """
        super().__init__()
        # Exports the hyperparameters to a YAML file, and create "self.hparams" namespace
        self.hparams = SimpleNamespace(model_name=model_name, model_hparams=model_hparams, optimizer_name=optimizer_name, optimizer_hparams=optimizer_hparams)  # port: Lightning's save_hyperparameters()
        self.logged = {}  # port: what Lightning's self.log keeps
        # Create model
        self.model = create_model(model_name, model_hparams)
        # Create loss module
        self.loss_module = nn.CrossEntropyLoss()
        # Example input for visualizing the graph in Tensorboard
        self.example_input_array = torch.zeros((1, 3, 32, 32), dtype=torch.float32)

    def log(self, name, value, on_step=True, on_epoch=False):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: Lightning's self.log

    def forward(self, imgs):
        # Forward function that is run when visualizing the graph
        return self.model(imgs)

    def configure_optimizers(self):
        # We will support Adam or SGD as optimizers.
        if self.hparams.optimizer_name == "Adam":
            # AdamW is Adam with a correct implementation of weight decay (see here for details: https://arxiv.org/pdf/1711.05101.pdf)
            optimizer = optim.AdamW(
                self.parameters(), **self.hparams.optimizer_hparams)
        elif self.hparams.optimizer_name == "SGD":
            optimizer = optim.SGD(self.parameters(), **self.hparams.optimizer_hparams)
        else:
            assert False, f"Unknown optimizer: \"{self.hparams.optimizer_name}\""

        # We will reduce the learning rate by 0.1 after 100 and 150 epochs
        scheduler = optim.lr_scheduler.MultiStepLR(
            optimizer, milestones=[100, 150], gamma=0.1)
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        # "batch" is the output of the training data loader.
        imgs, labels = batch
        preds = self.model(imgs)
        loss = self.loss_module(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()

        # Logs the accuracy per epoch to tensorboard (weighted average over batches)
        self.log('train_acc', acc, on_step=False, on_epoch=True)
        self.log('train_loss', loss)
        return loss  # Return tensor to call ".backward" on

    def validation_step(self, batch, batch_idx):
        imgs, labels = batch
        preds = self.model(imgs).argmax(dim=-1)
        acc = (labels == preds).float().mean()
        # By default logs it per epoch (weighted average over batches)
        self.log('val_acc', acc)

    def test_step(self, batch, batch_idx):
        imgs, labels = batch
        preds = self.model(imgs).argmax(dim=-1)
        acc = (labels == preds).float().mean()
        # By default logs it per epoch (weighted average over batches), and returns it afterwards
        self.log('test_acc', acc) 

model_dict = {}

def create_model(model_name, model_hparams):
    if model_name in model_dict:
        return model_dict[model_name](**model_hparams)
    else:
        assert False, f"Unknown model name \"{model_name}\". Available models are: {str(model_dict.keys())}" 

act_fn_by_name = {
    "tanh": nn.Tanh,
    "relu": nn.ReLU,
    "leakyrelu": nn.LeakyReLU,
    "gelu": nn.GELU
} 

def fit(model, train_loader, val_loader, max_epochs):  # port: the loop of Lightning's Trainer.fit
    [optimizer], [scheduler] = model.configure_optimizers()  # port: Trainer.fit
    for epoch in range(max_epochs):  # port: Trainer.fit
        model.train()  # port: Trainer.fit
        losses = []  # port: Trainer.fit's log
        for batch_idx, batch in enumerate(train_loader):  # port: Trainer.fit
            loss = model.training_step(batch, batch_idx)  # port: Trainer.fit
            optimizer.zero_grad()  # port: Trainer.fit
            loss.backward()  # port: Trainer.fit
            optimizer.step()  # port: Trainer.fit
            losses.append(model.logged['train_loss'])  # port: Trainer.fit's log
        scheduler.step()  # port: Trainer.fit, the scheduler's interval 'epoch'
        print(f"Epoch {epoch}: train_loss {np.mean(losses):.4f}, val_acc {test(model, val_loader, 'validation_step', 'val_acc'):.4f}")  # port: Trainer.fit's log

@torch.no_grad()  # port: the loop of Lightning's Trainer.test
def test(model, loader, step='test_step', name='test_acc'):  # port: Trainer.test
    model.eval()  # port: Trainer.test
    accs = []  # port: Trainer.test
    for batch_idx, batch in enumerate(loader):  # port: Trainer.test
        getattr(model, step)(batch, batch_idx)  # port: Trainer.test
        accs.append(model.logged[name] * len(batch[0]))  # port: Trainer.test
    model.train()  # port: Trainer.test
    return sum(accs) / len(loader.dataset)  # port: Trainer.test, weighted by batch size

def train_model(model_name, save_name=None, **kwargs):
    """
    Inputs:
        model_name - Name of the model you want to run. Is used to look up the class in "model_dict"
        save_name (optional) - If specified, this name will be used for creating the checkpoint and logging directory.
    """
    if save_name is None:
        save_name = model_name
        
    max_epochs = 2  # port: pl.Trainer(max_epochs=180, ...) with its checkpoint and tensorboard callbacks
    
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, save_name + ".ckpt")
    if os.path.isfile(pretrained_filename):
        print(f"Found pretrained model at {pretrained_filename}, loading...")
        model = CIFARModule.load_from_checkpoint(pretrained_filename) # Automatically loads the model with the saved hyperparameters
    else:
        set_seed(42) # To be reproducable  # port: pl.seed_everything(42)
        model = CIFARModule(model_name=model_name, **kwargs)
        fit(model, train_loader, val_loader, max_epochs)  # port: trainer.fit(model, train_loader, val_loader), the last model kept
        
    # Test best model on validation and test set
    val_result = [{"test_acc": test(model, val_loader)}]  # port: trainer.test(model, val_loader, verbose=False)
    test_result = [{"test_acc": test(model, test_loader)}]  # port: trainer.test(model, test_loader, verbose=False)
    result = {"test": test_result[0]["test_acc"], "val": val_result[0]["test_acc"]}
    
    return model, result 

class InceptionBlock(nn.Module):
    
    def __init__(self, c_in, c_red : dict, c_out : dict, act_fn):
        """
        Inputs:
            c_in - Number of input feature maps from the previous layers
            c_red - Dictionary with keys "3x3" and "5x5" specifying the output of the dimensionality reducing 1x1 convolutions
            c_out - Dictionary with keys "1x1", "3x3", "5x5", and "max"
            act_fn - Activation class constructor (e.g. nn.ReLU)
        """
        super().__init__()
        
        # 1x1 convolution branch
        self.conv_1x1 = nn.Sequential(
            nn.Conv2d(c_in, c_out["1x1"], kernel_size=1),
            nn.BatchNorm2d(c_out["1x1"]),
            act_fn()
        )
        
        # 3x3 convolution branch
        self.conv_3x3 = nn.Sequential(
            nn.Conv2d(c_in, c_red["3x3"], kernel_size=1),
            nn.BatchNorm2d(c_red["3x3"]),
            act_fn(),
            nn.Conv2d(c_red["3x3"], c_out["3x3"], kernel_size=3, padding=1),
            nn.BatchNorm2d(c_out["3x3"]),
            act_fn()
        )
        
        # 5x5 convolution branch
        self.conv_5x5 = nn.Sequential(
            nn.Conv2d(c_in, c_red["5x5"], kernel_size=1),
            nn.BatchNorm2d(c_red["5x5"]),
            act_fn(),
            nn.Conv2d(c_red["5x5"], c_out["5x5"], kernel_size=5, padding=2),
            nn.BatchNorm2d(c_out["5x5"]),
            act_fn()
        )
        
        # Max-pool branch
        self.max_pool = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, padding=1, stride=1),
            nn.Conv2d(c_in, c_out["max"], kernel_size=1),
            nn.BatchNorm2d(c_out["max"]),
            act_fn()
        )

    def forward(self, x):
        x_1x1 = self.conv_1x1(x)
        x_3x3 = self.conv_3x3(x)
        x_5x5 = self.conv_5x5(x)
        x_max = self.max_pool(x)
        x_out = torch.cat([x_1x1, x_3x3, x_5x5, x_max], dim=1)
        return x_out 
class GoogleNet(nn.Module):

    def __init__(self, num_classes=10, act_fn_name="relu", **kwargs):
        super().__init__()
        self.hparams = SimpleNamespace(num_classes=num_classes,
                                       act_fn_name=act_fn_name,
                                       act_fn=act_fn_by_name[act_fn_name])
        self._create_network()
        self._init_params()

    def _create_network(self):
        # A first convolution on the original image to scale up the channel size
        self.input_net = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            self.hparams.act_fn()
        )
        # Stacking inception blocks
        self.inception_blocks = nn.Sequential(
            InceptionBlock(64, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 16, "3x3": 32, "5x5": 8, "max": 8}, act_fn=self.hparams.act_fn),
            InceptionBlock(64, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 24, "3x3": 48, "5x5": 12, "max": 12}, act_fn=self.hparams.act_fn),
            nn.MaxPool2d(3, stride=2, padding=1),  # 32x32 => 16x16
            InceptionBlock(96, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 24, "3x3": 48, "5x5": 12, "max": 12}, act_fn=self.hparams.act_fn),
            InceptionBlock(96, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 16, "3x3": 48, "5x5": 16, "max": 16}, act_fn=self.hparams.act_fn),
            InceptionBlock(96, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 16, "3x3": 48, "5x5": 16, "max": 16}, act_fn=self.hparams.act_fn),
            InceptionBlock(96, c_red={"3x3": 32, "5x5": 16}, c_out={"1x1": 32, "3x3": 48, "5x5": 24, "max": 24}, act_fn=self.hparams.act_fn),
            nn.MaxPool2d(3, stride=2, padding=1),  # 16x16 => 8x8
            InceptionBlock(128, c_red={"3x3": 48, "5x5": 16}, c_out={"1x1": 32, "3x3": 64, "5x5": 16, "max": 16}, act_fn=self.hparams.act_fn),
            InceptionBlock(128, c_red={"3x3": 48, "5x5": 16}, c_out={"1x1": 32, "3x3": 64, "5x5": 16, "max": 16}, act_fn=self.hparams.act_fn)
        )
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(),
            nn.Linear(128, self.hparams.num_classes)
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation function
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(
                    next(m.parameters()), nonlinearity=self.hparams.act_fn_name)  # port: m.weight by position: tricycle's convolutions name it weights
            elif isinstance(m, nn.BatchNorm2d):
                weight, bias = m.parameters()  # port: m.weight and m.bias by position: tricycle's norms name them gamma, beta
                nn.init.constant_(weight, 1)  # port: as above
                nn.init.constant_(bias, 0)  # port: as above

    def forward(self, x):
        x = self.input_net(x)
        x = self.inception_blocks(x)
        x = self.output_net(x)
        return x
model_dict["GoogleNet"] = GoogleNet
googlenet_model, googlenet_results = train_model(model_name="GoogleNet", 
                                                 model_hparams={"num_classes": 10, 
                                                                "act_fn_name": "relu"}, 
                                                 optimizer_name="Adam",
                                                 optimizer_hparams={"lr": 1e-3,
                                                                    "weight_decay": 1e-4})
print("GoogleNet Results", googlenet_results)
class ResNetBlock(nn.Module):

    def __init__(self, c_in, act_fn, subsample=False, c_out=-1):
        """
        Inputs:
            c_in - Number of input features
            act_fn - Activation class constructor (e.g. nn.ReLU)
            subsample - If True, we want to apply a stride inside the block and reduce the output shape by 2 in height and width
            c_out - Number of output features. Note that this is only relevant if subsample is True, as otherwise, c_out = c_in
        """
        super().__init__()
        if not subsample:
            c_out = c_in
            
        # Network representing F
        self.net = nn.Sequential(
            nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, stride=1 if not subsample else 2, bias=False),  # No bias needed as the Batch Norm handles it
            nn.BatchNorm2d(c_out),
            act_fn(),
            nn.Conv2d(c_out, c_out, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(c_out)
        )
        
        # 1x1 convolution with stride 2 means we take the upper left value, and transform it to new output size
        self.downsample = nn.Conv2d(c_in, c_out, kernel_size=1, stride=2) if subsample else None
        self.act_fn = act_fn()

    def forward(self, x):
        z = self.net(x)
        if self.downsample is not None:
            x = self.downsample(x)
        out = z + x
        out = self.act_fn(out)
        return out
class PreActResNetBlock(nn.Module):

    def __init__(self, c_in, act_fn, subsample=False, c_out=-1):
        """
        Inputs:
            c_in - Number of input features
            act_fn - Activation class constructor (e.g. nn.ReLU)
            subsample - If True, we want to apply a stride inside the block and reduce the output shape by 2 in height and width
            c_out - Number of output features. Note that this is only relevant if subsample is True, as otherwise, c_out = c_in
        """
        super().__init__()
        if not subsample:
            c_out = c_in
            
        # Network representing F
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, stride=1 if not subsample else 2, bias=False),
            nn.BatchNorm2d(c_out),
            act_fn(),
            nn.Conv2d(c_out, c_out, kernel_size=3, padding=1, bias=False)
        )
        
        # 1x1 convolution can apply non-linearity as well, but not strictly necessary
        self.downsample = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, c_out, kernel_size=1, stride=2, bias=False)
        ) if subsample else None

    def forward(self, x):
        z = self.net(x)
        if self.downsample is not None:
            x = self.downsample(x)
        out = z + x
        return out
resnet_blocks_by_name = {
    "ResNetBlock": ResNetBlock,
    "PreActResNetBlock": PreActResNetBlock
}
class ResNet(nn.Module):

    def __init__(self, num_classes=10, num_blocks=[3,3,3], c_hidden=[16,32,64], act_fn_name="relu", block_name="ResNetBlock", **kwargs):
        """
        Inputs: 
            num_classes - Number of classification outputs (10 for CIFAR10)
            num_blocks - List with the number of ResNet blocks to use. The first block of each group uses downsampling, except the first.
            c_hidden - List with the hidden dimensionalities in the different blocks. Usually multiplied by 2 the deeper we go.
            act_fn_name - Name of the activation function to use, looked up in "act_fn_by_name"
            block_name - Name of the ResNet block, looked up in "resnet_blocks_by_name"
        """
        super().__init__()
        assert block_name in resnet_blocks_by_name
        self.hparams = SimpleNamespace(num_classes=num_classes, 
                                       c_hidden=c_hidden, 
                                       num_blocks=num_blocks, 
                                       act_fn_name=act_fn_name,
                                       act_fn=act_fn_by_name[act_fn_name],
                                       block_class=resnet_blocks_by_name[block_name])
        self._create_network()
        self._init_params()

    def _create_network(self):
        c_hidden = self.hparams.c_hidden
        
        # A first convolution on the original image to scale up the channel size
        if self.hparams.block_class == PreActResNetBlock: # => Don't apply non-linearity on output
            self.input_net = nn.Sequential(
                nn.Conv2d(3, c_hidden[0], kernel_size=3, padding=1, bias=False)
            )
        else:
            self.input_net = nn.Sequential(
                nn.Conv2d(3, c_hidden[0], kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(c_hidden[0]),
                self.hparams.act_fn()
            )
        
        # Creating the ResNet blocks
        blocks = []
        for block_idx, block_count in enumerate(self.hparams.num_blocks):
            for bc in range(block_count):
                subsample = (bc == 0 and block_idx > 0) # Subsample the first block of each group, except the very first one.
                blocks.append(
                    self.hparams.block_class(c_in=c_hidden[block_idx if not subsample else (block_idx-1)],
                                             act_fn=self.hparams.act_fn,
                                             subsample=subsample,
                                             c_out=c_hidden[block_idx])
                )
        self.blocks = nn.Sequential(*blocks)
        
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.AdaptiveAvgPool2d((1,1)),
            nn.Flatten(),
            nn.Linear(c_hidden[-1], self.hparams.num_classes)
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation function
        # Fan-out focuses on the gradient distribution, and is commonly used in ResNets
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(next(m.parameters()), mode='fan_out', nonlinearity=self.hparams.act_fn_name)  # port: m.weight by position: tricycle's convolutions name it weights
            elif isinstance(m, nn.BatchNorm2d):
                weight, bias = m.parameters()  # port: m.weight and m.bias by position: tricycle's norms name them gamma, beta
                nn.init.constant_(weight, 1)  # port: as above
                nn.init.constant_(bias, 0)  # port: as above

    def forward(self, x):
        x = self.input_net(x)
        x = self.blocks(x)
        x = self.output_net(x)
        return x
model_dict["ResNet"] = ResNet
resnet_model, resnet_results = train_model(model_name="ResNet", 
                                           model_hparams={"num_classes": 10,
                                                          "c_hidden": [8,16,32],  # port: [16,32,64] halved (a shared CPU)
                                                          "num_blocks": [1,1,1],  # port: [3,3,3] shrunk (a shared CPU)
                                                          "act_fn_name": "relu"}, 
                                           optimizer_name="SGD",
                                           optimizer_hparams={"lr": 0.1,
                                                              "momentum": 0.9,
                                                              "weight_decay": 1e-4})
resnetpreact_model, resnetpreact_results = train_model(model_name="ResNet", 
                                                       model_hparams={"num_classes": 10,
                                                                      "c_hidden": [8,16,32],  # port: [16,32,64] halved (a shared CPU)
                                                                      "num_blocks": [1,1,1],  # port: [3,3,3] shrunk (a shared CPU)
                                                                      "act_fn_name": "relu",
                                                                      "block_name": "PreActResNetBlock"}, 
                                                       optimizer_name="SGD",
                                                       optimizer_hparams={"lr": 0.1,
                                                                          "momentum": 0.9,
                                                                          "weight_decay": 1e-4},
                                                       save_name="ResNetPreAct")
class DenseLayer(nn.Module):
    
    def __init__(self, c_in, bn_size, growth_rate, act_fn):
        """
        Inputs:
            c_in - Number of input channels
            bn_size - Bottleneck size (factor of growth rate) for the output of the 1x1 convolution. Typically between 2 and 4.
            growth_rate - Number of output channels of the 3x3 convolution
            act_fn - Activation class constructor (e.g. nn.ReLU)
        """
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, bn_size * growth_rate, kernel_size=1, bias=False),
            nn.BatchNorm2d(bn_size * growth_rate),
            act_fn(),
            nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False)
        )
        
    def forward(self, x):
        out = self.net(x)
        out = torch.cat([out, x], dim=1)
        return out
class DenseBlock(nn.Module):
    
    def __init__(self, c_in, num_layers, bn_size, growth_rate, act_fn):
        """
        Inputs:
            c_in - Number of input channels
            num_layers - Number of dense layers to apply in the block
            bn_size - Bottleneck size to use in the dense layers
            growth_rate - Growth rate to use in the dense layers
            act_fn - Activation function to use in the dense layers
        """
        super().__init__()
        layers = []
        for layer_idx in range(num_layers):
            layers.append(
                DenseLayer(c_in=c_in + layer_idx * growth_rate, # Input channels are original plus the feature maps from previous layers
                           bn_size=bn_size,
                           growth_rate=growth_rate,
                           act_fn=act_fn)
            )
        self.block = nn.Sequential(*layers)
        
    def forward(self, x):
        out = self.block(x)
        return out
class TransitionLayer(nn.Module):
    
    def __init__(self, c_in, c_out, act_fn):
        super().__init__()
        self.transition = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, c_out, kernel_size=1, bias=False),
            nn.AvgPool2d(kernel_size=2, stride=2) # Average the output for each 2x2 pixel group
        )
        
    def forward(self, x):
        return self.transition(x)
class DenseNet(nn.Module):
    
    def __init__(self, num_classes=10, num_layers=[6,6,6,6], bn_size=2, growth_rate=16, act_fn_name="relu", **kwargs):
        super().__init__()
        self.hparams = SimpleNamespace(num_classes=num_classes,
                                       num_layers=num_layers,
                                       bn_size=bn_size,
                                       growth_rate=growth_rate,
                                       act_fn_name=act_fn_name,
                                       act_fn=act_fn_by_name[act_fn_name])
        self._create_network()
        self._init_params()
        
    def _create_network(self):
        c_hidden = self.hparams.growth_rate * self.hparams.bn_size # The start number of hidden channels
        
        # A first convolution on the original image to scale up the channel size
        self.input_net = nn.Sequential(
            nn.Conv2d(3, c_hidden, kernel_size=3, padding=1) # No batch norm or activation function as done inside the Dense layers
        )
        
        # Creating the dense blocks, eventually including transition layers
        blocks = []
        for block_idx, num_layers in enumerate(self.hparams.num_layers):
            blocks.append( 
                DenseBlock(c_in=c_hidden, 
                           num_layers=num_layers, 
                           bn_size=self.hparams.bn_size,
                           growth_rate=self.hparams.growth_rate,
                           act_fn=self.hparams.act_fn)
            )
            c_hidden = c_hidden + num_layers * self.hparams.growth_rate # Overall output of the dense block
            if block_idx < len(self.hparams.num_layers)-1: # Don't apply transition layer on last block
                blocks.append(
                    TransitionLayer(c_in=c_hidden,
                                    c_out=c_hidden // 2,
                                    act_fn=self.hparams.act_fn))
                c_hidden = c_hidden // 2
                
        self.blocks = nn.Sequential(*blocks)
        
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.BatchNorm2d(c_hidden), # The features have not passed a non-linearity until here.
            self.hparams.act_fn(),
            nn.AdaptiveAvgPool2d((1,1)),
            nn.Flatten(),
            nn.Linear(c_hidden, self.hparams.num_classes)
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation function
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(next(m.parameters()), nonlinearity=self.hparams.act_fn_name)  # port: m.weight by position: tricycle's convolutions name it weights
            elif isinstance(m, nn.BatchNorm2d):
                weight, bias = m.parameters()  # port: m.weight and m.bias by position: tricycle's norms name them gamma, beta
                nn.init.constant_(weight, 1)  # port: as above
                nn.init.constant_(bias, 0)  # port: as above

    def forward(self, x):
        x = self.input_net(x)
        x = self.blocks(x)
        x = self.output_net(x)
        return x
model_dict["DenseNet"] = DenseNet
densenet_model, densenet_results = train_model(model_name="DenseNet", 
                                               model_hparams={"num_classes": 10,
                                                              "num_layers": [2,2,2,2],  # port: [6,6,6,6] shrunk (a shared CPU)
                                                              "bn_size": 2,
                                                              "growth_rate": 8,  # port: 16 halved (a shared CPU)
                                                              "act_fn_name": "relu"}, 
                                               optimizer_name="Adam",
                                               optimizer_hparams={"lr": 1e-3,
                                                                  "weight_decay": 1e-4})
# import tabulate  # port: tabulate is not installed (the table printed row by row)
# from IPython.display import display, HTML  # port: IPython is not installed
all_models = [
    ("GoogleNet", googlenet_results, googlenet_model),
    ("ResNet", resnet_results, resnet_model),
    ("ResNetPreAct", resnetpreact_results, resnetpreact_model),
    ("DenseNet", densenet_results, densenet_model)
]
table = [[model_name,
          f"{100.0*model_results['val']:4.2f}%",
          f"{100.0*model_results['test']:4.2f}%",
          "{:,}".format(sum([np.prod(p.shape) for p in model.parameters()]))]
         for model_name, model_results, model in all_models]
for row in table: print(*row)  # port: display(HTML(tabulate.tabulate(table, tablefmt='html', headers=["Model", "Val Accuracy", "Test Accuracy", "Num Parameters"])))
'''

# tutorial15/Vision_Transformer.ipynb, its code cells (downloads, plots and magics left out)
VIT = r'''
## Standard libraries
import os
import numpy as np
import random
import math
import json
from functools import partial
from types import SimpleNamespace  # port: for save_hyperparameters
# from PIL import Image  # port: PIL is only for the plots (dropped)

## Imports for plotting
import matplotlib.pyplot as plt
plt.set_cmap('cividis')
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: IPython is not installed
from matplotlib.colors import to_rgb
import matplotlib
matplotlib.rcParams['lines.linewidth'] = 2.0
# import seaborn as sns  # port: seaborn is not installed
# sns.reset_orig()  # port: seaborn is not installed

## tqdm for loading bars
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

## Torchvision  # port: torchvision is not installed; CIFAR10 is built below (no download)

# PyTorch Lightning  # port: Lightning's glue is a plain loop below

# Import tensorboard  # port: a notebook's magic

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "data"  # port: beside the run, not ../
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "saved_models/tutorial15"  # port: beside the run, not ../

# Setting the seed
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device) 

cifar = np.load("cifar10.npz")  # port: CIFAR10(root=DATASET_PATH, download=True): small images written by the test
def test_transform(images):  # port: transforms.Compose([ToTensor(), Normalize(...)]) on the whole array
    return torch.tensor(((images / 255.0 - np.array([0.49139968, 0.48215841, 0.44653091])) / np.array([0.24703223, 0.24348513, 0.26158784])).transpose(0, 3, 1, 2), dtype=torch.float32)  # port: as above
# port: the augmentation (RandomHorizontalFlip, RandomResizedCrop) left out: torchvision's transforms
train_dataset = data.TensorDataset(test_transform(cifar["train_images"]), torch.tensor(cifar["train_labels"]))  # port: CIFAR10(train=True, transform=train_transform)
val_dataset = train_dataset  # port: CIFAR10(train=True, transform=test_transform): the same images without augmentation
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)
train_set, _ = torch.utils.data.random_split(train_dataset, [32, 8])  # port: [45000, 5000] shrunk
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)
_, val_set = torch.utils.data.random_split(val_dataset, [32, 8])  # port: [45000, 5000] shrunk

# Loading the test set
test_set = data.TensorDataset(test_transform(cifar["test_images"]), torch.tensor(cifar["test_labels"]))  # port: CIFAR10(train=False, transform=test_transform)

# We define a set of data loaders that we can use for various purposes later.
train_loader = data.DataLoader(train_set, batch_size=8, shuffle=True, drop_last=True, pin_memory=True, num_workers=0)  # port: batch 128 and 4 workers shrunk
val_loader = data.DataLoader(val_set, batch_size=8, shuffle=False, drop_last=False, num_workers=0)  # port: as above
test_loader = data.DataLoader(test_set, batch_size=8, shuffle=False, drop_last=False, num_workers=0)  # port: as above

# Visualize some examples
NUM_IMAGES = 4
CIFAR_images = torch.stack([val_set[idx][0] for idx in range(NUM_IMAGES)], dim=0)
print("Images:", CIFAR_images.shape)  # port: make_grid and the plot dropped, the shape printed

def img_to_patch(x, patch_size, flatten_channels=True):
    """
    Inputs:
        x - torch.Tensor representing the image of shape [B, C, H, W]
        patch_size - Number of pixels per dimension of the patches (integer)
        flatten_channels - If True, the patches will be returned in a flattened format
                           as a feature vector instead of a image grid.
    """
    B, C, H, W = x.shape
    x = x.reshape(B, C, H//patch_size, patch_size, W//patch_size, patch_size)
    x = x.permute(0, 2, 4, 1, 3, 5) # [B, H', W', C, p_H, p_W]
    x = x.flatten(1,2)              # [B, H'*W', C, p_H, p_W]
    if flatten_channels:
        x = x.flatten(2,4)          # [B, H'*W', C*p_H*p_W]
    return x 

img_patches = img_to_patch(CIFAR_images, patch_size=4, flatten_channels=False)
print("Patches:", img_patches.shape)  # port: make_grid and the plots dropped, the shape printed

class AttentionBlock(nn.Module):
    
    def __init__(self, embed_dim, hidden_dim, num_heads, dropout=0.0):
        """
        Inputs:
            embed_dim - Dimensionality of input and attention feature vectors
            hidden_dim - Dimensionality of hidden layer in feed-forward network 
                         (usually 2-4x larger than embed_dim)
            num_heads - Number of heads to use in the Multi-Head Attention block
            dropout - Amount of dropout to apply in the feed-forward network
        """
        super().__init__()
        
        self.layer_norm_1 = nn.LayerNorm(embed_dim)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, 
                                          dropout=dropout)
        self.layer_norm_2 = nn.LayerNorm(embed_dim)
        self.linear = nn.Sequential(
            nn.Linear(embed_dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, embed_dim),
            nn.Dropout(dropout)
        )
        
        
    def forward(self, x):
        inp_x = self.layer_norm_1(x)
        x = x + self.attn(inp_x, inp_x, inp_x)[0]
        x = x + self.linear(self.layer_norm_2(x))
        return x 
class VisionTransformer(nn.Module):
    
    def __init__(self, embed_dim, hidden_dim, num_channels, num_heads, num_layers, num_classes, patch_size, num_patches, dropout=0.0):
        """
        Inputs:
            embed_dim - Dimensionality of the input feature vectors to the Transformer
            hidden_dim - Dimensionality of the hidden layer in the feed-forward networks
                         within the Transformer
            num_channels - Number of channels of the input (3 for RGB)
            num_heads - Number of heads to use in the Multi-Head Attention block
            num_layers - Number of layers to use in the Transformer
            num_classes - Number of classes to predict
            patch_size - Number of pixels that the patches have per dimension
            num_patches - Maximum number of patches an image can have
            dropout - Amount of dropout to apply in the feed-forward network and 
                      on the input encoding
        """
        super().__init__()
        
        self.patch_size = patch_size
        
        # Layers/Networks
        self.input_layer = nn.Linear(num_channels*(patch_size**2), embed_dim)
        self.transformer = nn.Sequential(*[AttentionBlock(embed_dim, hidden_dim, num_heads, dropout=dropout) for _ in range(num_layers)])
        self.mlp_head = nn.Sequential(
            nn.LayerNorm(embed_dim),
            nn.Linear(embed_dim, num_classes)
        )
        self.dropout = nn.Dropout(dropout)
        
        # Parameters/Embeddings
        self.cls_token = nn.Parameter(torch.randn(1,1,embed_dim))
        self.pos_embedding = nn.Parameter(torch.randn(1,1+num_patches,embed_dim))
    
    
    def forward(self, x):
        # Preprocess input
        x = img_to_patch(x, self.patch_size)
        B, T, _ = x.shape
        x = self.input_layer(x)
        
        # Add CLS token and positional encoding
        cls_token = self.cls_token.tile(B, 1, 1)  # port: torch's repeat is tile (documented: tricycle's repeat is numpy's)
        x = torch.cat([cls_token, x], dim=1)
        x = x + self.pos_embedding[:,:T+1]
        
        # Apply Transforrmer
        x = self.dropout(x)
        x = x.transpose(0, 1)
        x = self.transformer(x)
        
        # Perform classification prediction
        cls = x[0]
        out = self.mlp_head(cls)
        return out 
class ViT(nn.Module):  # port: nn.Module, not pl.LightningModule
    
    def __init__(self, model_kwargs, lr):
        super().__init__()
        self.hparams = SimpleNamespace(model_kwargs=model_kwargs, lr=lr)  # port: Lightning's save_hyperparameters()
        self.logged = {}  # port: what Lightning's self.log keeps
        self.model = VisionTransformer(**model_kwargs)
        self.example_input_array = next(iter(train_loader))[0]
        
    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: Lightning's self.log

    def forward(self, x):
        return self.model(x)
    
    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), lr=self.hparams.lr)
        lr_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[100,150], gamma=0.1)
        return [optimizer], [lr_scheduler]   
    
    def _calculate_loss(self, batch, mode="train"):
        imgs, labels = batch
        preds = self.model(imgs)
        loss = F.cross_entropy(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        
        self.log(f'{mode}_loss', loss)
        self.log(f'{mode}_acc', acc)
        return loss

    def training_step(self, batch, batch_idx):
        loss = self._calculate_loss(batch, mode="train")
        return loss

    def validation_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode="val")

    def test_step(self, batch, batch_idx):
        self._calculate_loss(batch, mode="test") 

def fit(model, train_loader, val_loader, max_epochs):  # port: the loop of Lightning's Trainer.fit
    [optimizer], [scheduler] = model.configure_optimizers()  # port: Trainer.fit
    for epoch in range(max_epochs):  # port: Trainer.fit
        model.train()  # port: Trainer.fit
        losses = []  # port: Trainer.fit's log
        for batch_idx, batch in enumerate(tqdm(train_loader, disable=True)):  # port: Trainer.fit (its bar off in a test)
            loss = model.training_step(batch, batch_idx)  # port: Trainer.fit
            optimizer.zero_grad()  # port: Trainer.fit
            loss.backward()  # port: Trainer.fit
            optimizer.step()  # port: Trainer.fit
            losses.append(model.logged['train_loss'])  # port: Trainer.fit's log
        scheduler.step()  # port: Trainer.fit, the scheduler's interval 'epoch'
        print(f"Epoch {epoch}: train_loss {np.mean(losses):.4f}, val_acc {test(model, val_loader, 'val'):.4f}")  # port: Trainer.fit's log

@torch.no_grad()  # port: the loop of Lightning's Trainer.test
def test(model, loader, mode='test'):  # port: Trainer.test
    model.eval()  # port: Trainer.test
    accs = []  # port: Trainer.test
    for batch_idx, batch in enumerate(loader):  # port: Trainer.test
        model._calculate_loss(batch, mode=mode)  # port: Trainer.test
        accs.append(model.logged[f'{mode}_acc'] * len(batch[0]))  # port: Trainer.test
    model.train()  # port: Trainer.test
    return sum(accs) / len(loader.dataset)  # port: Trainer.test, weighted by batch size

def train_model(**kwargs):
    max_epochs = 6  # port: pl.Trainer(max_epochs=180, ...) with its checkpoint and tensorboard callbacks

    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, "ViT.ckpt")
    if os.path.isfile(pretrained_filename):
        print(f"Found pretrained model at {pretrained_filename}, loading...")
        model = ViT.load_from_checkpoint(pretrained_filename) # Automatically loads the model with the saved hyperparameters
    else:
        torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42) # To be reproducable
        model = ViT(**kwargs)
        fit(model, train_loader, val_loader, max_epochs)  # port: trainer.fit(model, train_loader, val_loader), the last model kept

    # Test best model on validation and test set
    val_result = [{"test_acc": test(model, val_loader)}]  # port: trainer.test(model, val_loader, verbose=False)
    test_result = [{"test_acc": test(model, test_loader)}]  # port: trainer.test(model, test_loader, verbose=False)
    result = {"test": test_result[0]["test_acc"], "val": val_result[0]["test_acc"]}

    return model, result 

model, results = train_model(model_kwargs={
                                'embed_dim': 32,  # port: 256, for a shared CPU
                                'hidden_dim': 64,  # port: 512, for a shared CPU
                                'num_heads': 4,  # port: 8, for a shared CPU
                                'num_layers': 2,  # port: 6, for a shared CPU
                                'patch_size': 4,
                                'num_channels': 3,
                                'num_patches': 64,
                                'num_classes': 10,
                                'dropout': 0.2
                            },
                            lr=1e-3)  # port: 3e-4, for the shorter run
print("ViT results", results) 
'''


def cifar10(path, n_train: int = 40, n_test: int = 8) -> None:
    """Small CIFAR10-like images in its layout (uint8 (N, 32, 32, 3), labels 0-9): each class
    a blocky colour pattern of its own, plus noise."""
    rng = np.random.default_rng(0)
    patterns = np.kron(rng.uniform(40, 215, size=(10, 4, 4, 3)), np.ones((1, 8, 8, 1)))

    def images(n):
        labels = rng.permutation(np.arange(n) % 10)
        noisy = patterns[labels] + rng.normal(0, 30, size=(n, 32, 32, 3))
        return np.clip(noisy, 0, 255).astype(np.uint8), labels.astype(np.int64)

    (train, train_labels), (test, test_labels) = images(n_train), images(n_test)
    np.savez(
        path,
        train_images=train,
        train_labels=train_labels,
        test_images=test,
        test_labels=test_labels,
    )


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    folder.mkdir()
    cifar10(folder / "cifar10.npz")
    return run_main(script, folder, monkeypatch, "tutorial.py")


def both(script: str, tmp_path):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in the text, both on
    the CPU on one thread (the notebooks pick "cuda:0" when it is there: none is answered)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as monkeypatch, one_thread(torch):
        for lib in torch, tricycle:  # the same branches under both, on any machine
            monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        theirs = run(script, tmp_path / "torch", monkeypatch)
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


@pytest.fixture(scope="module")
def tutorial5(tmp_path_factory):
    """tutorial5 run under both libraries, once for the module's tests."""
    return both(TUTORIAL5, tmp_path_factory.mktemp("tutorial5"))


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    """tutorial15 run under both libraries, once for the module's tests."""
    return both(VIT, tmp_path_factory.mktemp("tutorial15"))


def test_tutorial5(tutorial5):
    (theirs, their_space), (ours, space) = tutorial5
    assert kinds(ours) == kinds(theirs)
    # the data's statistics are numpy's under both; the models' parameter counts are torch's
    for name in "DATA_MEANS", "DATA_STD":
        np.testing.assert_array_equal(space[name], their_space[name])
    assert [row[3] for row in space["table"]] == [row[3] for row in their_space["table"]]
    assert [row[3] for row in space["table"]] == ["260,650", "19,906", "19,842", "14,922"]
    # a batch's statistics per channel, std with torch's default correction (n - 1)
    for namespace in their_space, space:
        imgs = np.asarray(namespace["imgs"].numpy(), dtype=np.float64)
        np.testing.assert_allclose(
            namespace["imgs"].std(dim=[0, 2, 3]).numpy(), imgs.std((0, 2, 3), ddof=1), rtol=1e-5
        )
    for printed in theirs, ours:
        # each of the four models: two epochs, the second's training loss below the first's
        losses = numbers(r"train_loss ([\d.]+)", printed)
        assert len(losses) == 8, printed
        for first, second in zip(losses[::2], losses[1::2]):
            fell([first, second], 0.97)


def same_model(torch, tricycle, theirs, ours, inputs, labels) -> None:
    """torch's model and tricycle's, given torch's weights: the same logits in float32; then in
    float64 (in float32 a max-pool's near-ties can pick other maxima under the two libraries)
    the same logits and loss, input and parameter gradients and running statistics in
    training mode (batch statistics), and the same logits in evaluation mode (running
    statistics)."""
    import tricycle.nn as nn  # noqa: PLC0415

    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    theirs.train(), ours.train()
    with torch.no_grad(), tricycle.no_grad():
        want, got = theirs(torch.tensor(inputs)), ours(tricycle.tensor(inputs))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)

    theirs, ours = copy.deepcopy(theirs).double(), copy.deepcopy(ours).double()
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])  # the statistics before the batch
    theirs.zero_grad(), ours.zero_grad()
    inputs = inputs.astype(np.float64)
    x, y = torch.tensor(inputs, requires_grad=True), tricycle.tensor(inputs, requires_grad=True)
    want, got = theirs(x), ours(y)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    their_loss = torch.nn.functional.cross_entropy(want, torch.tensor(labels))
    our_loss = tricycle.nn.functional.cross_entropy(got, tricycle.tensor(labels))
    np.testing.assert_allclose(our_loss.item(), their_loss.item(), rtol=1e-9)
    their_loss.backward()
    our_loss.backward()
    np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-7, atol=1e-12)
    grads = torch_layout_grads(ours)  # with the buffers, as they are
    assert grads.keys() == theirs.state_dict().keys()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-7, atol=1e-12, err_msg=name)
    mine = nn.to_torch(ours)  # the running statistics, moved by the batch as torch's
    for name, buffer in theirs.named_buffers():
        np.testing.assert_allclose(mine[name], buffer.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    theirs.eval(), ours.eval()
    with torch.no_grad(), tricycle.no_grad():
        want, got = theirs(torch.tensor(inputs)), ours(tricycle.tensor(inputs))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-10)


def test_tutorial5_models_give_torchs_numbers_with_torchs_weights(tutorial5):
    """Each trained torch model's weights and running statistics loaded into the tutorial's
    tricycle model of the same hyperparameters: torch's numbers (``same_model``)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    (_, their_space), (_, space) = tutorial5
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(3, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, 3)
    with one_thread(torch):
        for name in "googlenet_model", "resnet_model", "resnetpreact_model", "densenet_model":
            theirs, ours = their_space[name].model, space[name].model
            same_model(torch, tricycle, theirs, ours, inputs, labels)


def test_vision_transformer(vit):
    (theirs, their_space), (ours, space) = vit
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        fell(numbers(r"train_loss ([\d.]+)", printed), 0.97)
    # the patches are the images' pixels, moved as torch's
    images = their_space["CIFAR_images"].numpy()
    for flatten in True, False:
        want = their_space["img_to_patch"](their_space["torch"].tensor(images), 4, flatten)
        got = space["img_to_patch"](space["tricycle"].tensor(images), 4, flatten)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_vision_transformer_gives_torchs_numbers_with_torchs_weights(vit):
    """The trained torch ViT's weights (the cls token, the positional embedding and each
    ``nn.MultiheadAttention``'s packed projection) in the tutorial's tricycle model: torch's
    logits and loss, input and parameter gradients (dropout off in evaluation mode)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = vit
    theirs, ours = their_space["model"].model, space["model"].model
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    theirs.eval(), ours.eval()
    theirs.zero_grad(), ours.zero_grad()
    rng = np.random.default_rng(2)
    inputs = rng.normal(size=(3, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, 3)
    x, y = torch.tensor(inputs, requires_grad=True), tricycle.tensor(inputs, requires_grad=True)
    want, got = theirs(x), ours(y)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    their_loss = torch.nn.functional.cross_entropy(want, torch.tensor(labels))
    our_loss = tricycle.nn.functional.cross_entropy(got, tricycle.tensor(labels))
    np.testing.assert_allclose(our_loss.item(), their_loss.item(), rtol=1e-5)
    their_loss.backward()
    our_loss.backward()
    np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-3, atol=1e-6)
    grads = torch_layout_grads(ours)
    assert grads.keys() == dict(theirs.named_parameters()).keys()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
