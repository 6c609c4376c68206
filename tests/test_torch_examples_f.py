"""pytorch/examples, run on tricycle with ``torch`` replaced by ``tricycle`` (docs/pytorch.md's
promise; tests/test_torch_scripts.py's method), as tests/test_torch_examples_b.py runs them:

- imagenet/main.py, its single-process path: torchvision's resnet18 (test_torch_examples_a's
  trimmed one, imported from there), ``train`` and ``validate`` with ``AverageMeter``,
  ``ProgressMeter`` and ``Summary``, ``accuracy(output, target, topk=(1, 5))`` (``topk``,
  ``t()``, ``expand_as``, ``mul_``, tensors formatted by ``'{:6.2f}'``), SGD with momentum and
  weight decay under ``StepLR``, ``save_checkpoint`` with ``shutil.copyfile`` to model_best,
  ``torch.backends.cudnn``'s flags; run three times as a user would: trained, resumed from the
  checkpoint (``checkpoint['state_dict']``, the optimizer's and the scheduler's
  ``load_state_dict``), and ``--evaluate`` on model_best;
- language_translation: ``src/model.py``'s ``Translator`` (``nn.Transformer``,
  ``PositionalEncoding``'s buffer, ``xavier_uniform_`` on every matrix), ``src/data.py``'s
  ``generate_square_subsequent_mask`` and ``create_mask``, ``pad_sequence`` in a
  ``collate_fn``, and ``main.py``'s ``train``, ``validate``, ``greedy_decode`` and
  ``inference``, with ``CrossEntropyLoss(ignore_index=<pad>)`` and Adam; torchtext, spacy and
  Multi30k replaced by a small synthetic parallel corpus and vocabularies built in
  ``src/data.py``.

Each example's files are its own text, run with argv as a user would type it (sizes and epochs
shrunk there), synthetic data in place of the downloads; every changed line ends in a
``# port:`` comment that says why. The test writes the files in a temporary directory and runs
them there under torch (skipped without it), then with ``torch`` replaced by ``tricycle``, and
checks that both learn and print the same lines, numbers aside. The fixes the examples needed
are tested against torch at the end.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import logging
import sys

import numpy as np
import pytest

from tests.test_torch_examples_a import SIAMESE
from tests.test_torch_examples_b import lines, numbers, run

pytestmark = [  # torch's advice about its own speed: not the examples' concern
    pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true"),
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
    pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask"),
]

# torchvision.models in the example's place: test_torch_examples_a's trimmed resnet18
RESNET = (
    "import torch\nimport torch.nn as nn\n\n\n"
    + SIAMESE[
        SIAMESE.index("# port: torchvision.models.resnet18") : SIAMESE.index("class SiameseNetwork")
    ]
)

# imagenet/main.py
IMAGENET = r'''
import argparse
import os
import random
import shutil
import time
import warnings
from enum import Enum

import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
# import torch.multiprocessing as mp  # port: tricycle lacks torch.multiprocessing (test_torch_examples_d's hogwild); --multiprocessing-distributed alone used it
import torch.nn as nn
# import torch.nn.parallel  # port: tricycle has no tricycle.nn.parallel (test_torch_examples_d's reason); the GPU paths alone used it
import torch.optim
import torch.utils.data
import torch.utils.data.distributed
import numpy as np  # port: synthetic images in ImageNet's place, below
import models  # port: torchvision.models: test_torch_examples_a's trimmed resnet18 (in models.py)
from torch.utils.data import TensorDataset  # port: synthetic images in ImageNet's place
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import Subset

model_names = sorted(name for name in models.__dict__
    if name.islower() and not name.startswith("__")
    and callable(models.__dict__[name]))

parser = argparse.ArgumentParser(description='PyTorch ImageNet Training')
parser.add_argument('data', metavar='DIR', nargs='?', default='imagenet',
                    help='path to dataset (default: imagenet)')
parser.add_argument('-a', '--arch', metavar='ARCH', default='resnet18',
                    choices=model_names,
                    help='model architecture: ' +
                        ' | '.join(model_names) +
                        ' (default: resnet18)')
parser.add_argument('-j', '--workers', default=4, type=int, metavar='N',
                    help='number of data loading workers (default: 4)')
parser.add_argument('--epochs', default=90, type=int, metavar='N',
                    help='number of total epochs to run')
parser.add_argument('--start-epoch', default=0, type=int, metavar='N',
                    help='manual epoch number (useful on restarts)')
parser.add_argument('-b', '--batch-size', default=256, type=int,
                    metavar='N',
                    help='mini-batch size (default: 256), this is the total '
                         'batch size of all GPUs on the current node when '
                         'using Data Parallel or Distributed Data Parallel')
parser.add_argument('--lr', '--learning-rate', default=0.1, type=float,
                    metavar='LR', help='initial learning rate', dest='lr')
parser.add_argument('--momentum', default=0.9, type=float, metavar='M',
                    help='momentum')
parser.add_argument('--wd', '--weight-decay', default=1e-4, type=float,
                    metavar='W', help='weight decay (default: 1e-4)',
                    dest='weight_decay')
parser.add_argument('-p', '--print-freq', default=10, type=int,
                    metavar='N', help='print frequency (default: 10)')
parser.add_argument('--resume', default='', type=str, metavar='PATH',
                    help='path to latest checkpoint (default: none)')
parser.add_argument('-e', '--evaluate', dest='evaluate', action='store_true',
                    help='evaluate model on validation set')
parser.add_argument('--pretrained', dest='pretrained', action='store_true',
                    help='use pre-trained model')
parser.add_argument('--world-size', default=-1, type=int,
                    help='number of nodes for distributed training')
parser.add_argument('--rank', default=-1, type=int,
                    help='node rank for distributed training')
parser.add_argument('--dist-url', default='tcp://224.66.41.62:23456', type=str,
                    help='url used to set up distributed training')
parser.add_argument('--dist-backend', default='nccl', type=str,
                    help='distributed backend')
parser.add_argument('--seed', default=None, type=int,
                    help='seed for initializing training. ')
parser.add_argument('--gpu', default=None, type=int,
                    help='GPU id to use.')
parser.add_argument('--no-accel', action='store_true',
                    help='disables accelerator')
parser.add_argument('--multiprocessing-distributed', action='store_true',
                    help='Use multi-processing distributed training to launch '
                         'N processes per node, which has N GPUs. This is the '
                         'fastest way to use PyTorch for either single node or '
                         'multi node data parallel training')
parser.add_argument('--dummy', action='store_true', help="use fake data to benchmark")

best_acc1 = 0


def main():
    args = parser.parse_args()

    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        cudnn.deterministic = True
        cudnn.benchmark = False
        warnings.warn('You have chosen to seed training. '
                      'This will turn on the CUDNN deterministic setting, '
                      'which can slow down your training considerably! '
                      'You may see unexpected behavior when restarting '
                      'from checkpoints.')

    if args.gpu is not None:
        warnings.warn('You have chosen a specific GPU. This will completely '
                      'disable data parallelism.')

    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])

    args.distributed = args.world_size > 1 or args.multiprocessing_distributed

    use_accel = not args.no_accel and torch.accelerator.is_available()

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    if device.type =='cuda':
        ngpus_per_node = torch.accelerator.device_count()
        if ngpus_per_node == 1 and args.dist_backend == "nccl":
            warnings.warn("nccl backend >=2.5 requires GPU count>1, see https://github.com/NVIDIA/nccl/issues/103 perhaps use 'gloo'")
    else:
        ngpus_per_node = 1

    if args.multiprocessing_distributed:
        # Since we have ngpus_per_node processes per node, the total world_size
        # needs to be adjusted accordingly
        args.world_size = ngpus_per_node * args.world_size
        # Use torch.multiprocessing.spawn to launch distributed processes: the
        # main_worker process function
        mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))
    else:
        # Simply call main_worker function
        main_worker(args.gpu, ngpus_per_node, args)


def main_worker(gpu, ngpus_per_node, args):
    global best_acc1
    args.gpu = gpu

    use_accel = not args.no_accel and torch.accelerator.is_available()

    if use_accel:
        if args.gpu is not None:
            torch.accelerator.set_device_index(args.gpu)
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    if args.distributed:
        if args.dist_url == "env://" and args.rank == -1:
            args.rank = int(os.environ["RANK"])
        if args.multiprocessing_distributed:
            # For multiprocessing distributed training, rank needs to be the
            # global rank among all the processes
            args.rank = args.rank * ngpus_per_node + gpu
        dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                                world_size=args.world_size, rank=args.rank)
    # create model
    if args.pretrained:
        print("=> using pre-trained model '{}'".format(args.arch))
        model = models.__dict__[args.arch](pretrained=True)
    else:
        print("=> creating model '{}'".format(args.arch))
        model = models.__dict__[args.arch]()

    if not use_accel:
        print('using CPU, this will be slow')
    elif args.distributed:
        # For multiprocessing distributed, DistributedDataParallel constructor
        # should always set the single device scope, otherwise,
        # DistributedDataParallel will use all available devices.
        if device.type == 'cuda':
            if args.gpu is not None:
                torch.cuda.set_device(args.gpu)
                model.cuda(device)
                # When using a single GPU per process and per
                # DistributedDataParallel, we need to divide the batch size
                # ourselves based on the total number of GPUs of the current node.
                args.batch_size = int(args.batch_size / ngpus_per_node)
                args.workers = int((args.workers + ngpus_per_node - 1) / ngpus_per_node)
                model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
            else:
                model.cuda()
                # DistributedDataParallel will divide and allocate batch_size to all
                # available GPUs if device_ids are not set
                model = torch.nn.parallel.DistributedDataParallel(model)
    elif device.type == 'cuda':
        # DataParallel will divide and allocate batch_size to all available GPUs
        if args.arch.startswith('alexnet') or args.arch.startswith('vgg'):
            model.features = torch.nn.DataParallel(model.features)
            model.cuda()
        else:
            model = torch.nn.DataParallel(model).cuda()
    else:
        model.to(device)


    # define loss function (criterion), optimizer, and learning rate scheduler
    criterion = nn.CrossEntropyLoss().to(device)

    optimizer = torch.optim.SGD(model.parameters(), args.lr,
                                momentum=args.momentum,
                                weight_decay=args.weight_decay)
    
    """Sets the learning rate to the initial LR decayed by 10 every 30 epochs"""
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    
    # optionally resume from a checkpoint
    if args.resume:
        if os.path.isfile(args.resume):
            print("=> loading checkpoint '{}'".format(args.resume))
            if args.gpu is None:
                checkpoint = torch.load(args.resume)
            else:
                # Map model to be loaded to specified single gpu.
                loc = f'{device.type}:{args.gpu}'
                checkpoint = torch.load(args.resume, map_location=loc)
            args.start_epoch = checkpoint['epoch']
            best_acc1 = checkpoint['best_acc1']
            if args.gpu is not None:
                # best_acc1 may be from a checkpoint from a different GPU
                best_acc1 = best_acc1.to(args.gpu)
            model.load_state_dict(checkpoint['state_dict'])
            optimizer.load_state_dict(checkpoint['optimizer'])
            scheduler.load_state_dict(checkpoint['scheduler'])
            print("=> loaded checkpoint '{}' (epoch {})"
                  .format(args.resume, checkpoint['epoch']))
        else:
            print("=> no checkpoint found at '{}'".format(args.resume))


    # Data loading code
    train_dataset = synthetic_imagenet(384, seed=1)  # port: ImageFolder(traindir)'s place (and FakeData's for --dummy)
    val_dataset = synthetic_imagenet(128, seed=2)  # port: ImageFolder(valdir)'s place

    if args.distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
        val_sampler = torch.utils.data.distributed.DistributedSampler(val_dataset, shuffle=False, drop_last=True)
    else:
        train_sampler = None
        val_sampler = None

    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)

    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False,
        num_workers=args.workers, pin_memory=True, sampler=val_sampler)

    if args.evaluate:
        validate(val_loader, model, criterion, args)
        return

    for epoch in range(args.start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)

        # train for one epoch
        train(train_loader, model, criterion, optimizer, epoch, device, args)

        # evaluate on validation set
        acc1 = validate(val_loader, model, criterion, args)
        
        scheduler.step()
        
        # remember best acc@1 and save checkpoint
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)

        if not args.multiprocessing_distributed or (args.multiprocessing_distributed
                and args.rank % ngpus_per_node == 0):
            save_checkpoint({
                'epoch': epoch + 1,
                'arch': args.arch,
                'state_dict': model.state_dict(),
                'best_acc1': best_acc1,
                'optimizer' : optimizer.state_dict(),
                'scheduler' : scheduler.state_dict()
            }, is_best)


def train(train_loader, model, criterion, optimizer, epoch, device, args):
    
    use_accel = not args.no_accel and torch.accelerator.is_available()

    batch_time = AverageMeter('Time', use_accel, ':6.3f', Summary.NONE)
    data_time = AverageMeter('Data', use_accel, ':6.3f', Summary.NONE)
    losses = AverageMeter('Loss', use_accel, ':.4e', Summary.NONE)
    top1 = AverageMeter('Acc@1', use_accel, ':6.2f', Summary.NONE)
    top5 = AverageMeter('Acc@5', use_accel, ':6.2f', Summary.NONE)
    progress = ProgressMeter(
        len(train_loader),
        [batch_time, data_time, losses, top1, top5],
        prefix="Epoch: [{}]".format(epoch))

    # switch to train mode
    model.train()

    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        # measure data loading time
        data_time.update(time.time() - end)

        # move data to the same device as model
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)

        # compute output
        output = model(images)
        loss = criterion(output, target)

        # measure accuracy and record loss
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        top5.update(acc5[0], images.size(0))

        # compute gradient and do SGD step
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        # measure elapsed time
        batch_time.update(time.time() - end)
        end = time.time()

        if i % args.print_freq == 0:
            progress.display(i + 1)


def validate(val_loader, model, criterion, args):

    use_accel = not args.no_accel and torch.accelerator.is_available()

    def run_validate(loader, base_progress=0):

        if use_accel:
            device = torch.accelerator.current_accelerator()
        else:
            device = torch.device("cpu")

        with torch.no_grad():
            end = time.time()
            for i, (images, target) in enumerate(loader):
                i = base_progress + i
                if use_accel:
                    if args.gpu is not None and device.type=='cuda':
                        torch.accelerator.set_device_index(args.gpu)
                        images = images.cuda(args.gpu, non_blocking=True)
                        target = target.cuda(args.gpu, non_blocking=True)
                    else:
                        images = images.to(device)
                        target = target.to(device)

                # compute output
                output = model(images)
                loss = criterion(output, target)

                # measure accuracy and record loss
                acc1, acc5 = accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0], images.size(0))
                top5.update(acc5[0], images.size(0))

                # measure elapsed time
                batch_time.update(time.time() - end)
                end = time.time()

                if i % args.print_freq == 0:
                    progress.display(i + 1)

    batch_time = AverageMeter('Time', use_accel, ':6.3f', Summary.NONE)
    losses = AverageMeter('Loss', use_accel, ':.4e', Summary.NONE)
    top1 = AverageMeter('Acc@1', use_accel, ':6.2f', Summary.AVERAGE)
    top5 = AverageMeter('Acc@5', use_accel, ':6.2f', Summary.AVERAGE)
    progress = ProgressMeter(
        len(val_loader) + (args.distributed and (len(val_loader.sampler) * args.world_size < len(val_loader.dataset))),
        [batch_time, losses, top1, top5],
        prefix='Test: ')

    # switch to evaluate mode
    model.eval()

    run_validate(val_loader)
    if args.distributed:
        top1.all_reduce()
        top5.all_reduce()

    if args.distributed and (len(val_loader.sampler) * args.world_size < len(val_loader.dataset)):
        aux_val_dataset = Subset(val_loader.dataset,
                                 range(len(val_loader.sampler) * args.world_size, len(val_loader.dataset)))
        aux_val_loader = torch.utils.data.DataLoader(
            aux_val_dataset, batch_size=args.batch_size, shuffle=False,
            num_workers=args.workers, pin_memory=True)
        run_validate(aux_val_loader, len(val_loader))

    progress.display_summary()

    return top1.avg


def synthetic_imagenet(n, seed):  # port: ImageFolder's place: 16x16 images of ten classes, normalised
    templates = np.random.default_rng(0).normal(size=(10, 3, 16, 16))  # port: as above
    rng = np.random.default_rng(seed)  # port: as above
    target = rng.integers(0, 10, n)  # port: ten of resnet18's 1000 classes
    images = templates[target] + rng.normal(size=(n, 3, 16, 16))  # port: as above
    return TensorDataset(torch.from_numpy(images.astype(np.float32)), torch.from_numpy(target))  # port


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, 'model_best.pth.tar')

class Summary(Enum):
    NONE = 0
    AVERAGE = 1
    SUM = 2
    COUNT = 3

class AverageMeter(object):
    """Computes and stores the average and current value"""
    def __init__(self, name, use_accel, fmt=':f', summary_type=Summary.AVERAGE):
        self.name = name
        self.use_accel = use_accel
        self.fmt = fmt
        self.summary_type = summary_type
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def all_reduce(self):    
        if self.use_accel:
            device = torch.accelerator.current_accelerator()
        else:
            device = torch.device("cpu")
        total = torch.tensor([self.sum, self.count], dtype=torch.float32, device=device)
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)
    
    def summary(self):
        fmtstr = ''
        if self.summary_type is Summary.NONE:
            fmtstr = ''
        elif self.summary_type is Summary.AVERAGE:
            fmtstr = '{name} {avg:.3f}'
        elif self.summary_type is Summary.SUM:
            fmtstr = '{name} {sum:.3f}'
        elif self.summary_type is Summary.COUNT:
            fmtstr = '{name} {count:.3f}'
        else:
            raise ValueError('invalid summary type %r' % self.summary_type)
        
        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):
    def __init__(self, num_batches, meters, prefix=""):
        self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print('\t'.join(entries))
        
    def display_summary(self):
        entries = [" *"]
        entries += [meter.summary() for meter in self.meters]
        print(' '.join(entries))

    def _get_batch_fmtstr(self, num_batches):
        num_digits = len(str(num_batches // 1))
        fmt = '{:' + str(num_digits) + 'd}'
        return '[' + fmt + '/' + fmt.format(num_batches) + ']'

def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


if __name__ == '__main__':
    main()
'''


# language_translation/src/model.py, as it is
TRANSLATOR_MODEL = r"""
import math

import torch
from torch.nn import functional as F
from torch import nn

class PositionalEncoding(nn.Module):
    def __init__(
        self,
        emb_size,
        dropout,
        maxlen=5000
    ):
        super(PositionalEncoding, self).__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2)* math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)

        self.dropout = nn.Dropout(dropout)
        self.register_buffer('pos_embedding', pos_embedding)

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

class Translator(nn.Module):
    def __init__(
            self,
            num_encoder_layers,
            num_decoder_layers,
            embed_size,
            num_heads,
            src_vocab_size,
            tgt_vocab_size,
            dim_feedforward,
            dropout
        ):
        super(Translator, self).__init__()

        # Output of embedding must be equal (embed_size)
        self.src_embedding = nn.Embedding(src_vocab_size, embed_size)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, embed_size)

        self.pos_enc = PositionalEncoding(embed_size, dropout)

        self.transformer = nn.Transformer(
            d_model=embed_size,
            nhead=num_heads,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout
        )

        self.ff = nn.Linear(embed_size, tgt_vocab_size)

        self._init_weights()

    def _init_weights(self):
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):

        src_emb = self.pos_enc(self.src_embedding(src))
        tgt_emb = self.pos_enc(self.tgt_embedding(trg))

        outs = self.transformer(
            src_emb,
            tgt_emb,
            src_mask,
            tgt_mask,
            None,
            src_padding_mask,
            tgt_padding_mask,
            memory_key_padding_mask
        )

        return self.ff(outs)

    def encode(self, src, src_mask):

        embed = self.src_embedding(src)

        pos_enc = self.pos_enc(embed)

        return self.transformer.encoder(pos_enc, src_mask)

    def decode(self, tgt, memory, tgt_mask):
        
        embed = self.tgt_embedding(tgt)

        pos_enc = self.pos_enc(embed)

        return self.transformer.decoder(pos_enc, memory, tgt_mask)
"""

# language_translation/src/data.py: torchtext's pieces written here, over a synthetic corpus
TRANSLATOR_DATA = r"""
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader
import numpy as np  # port: torchtext, spacy and Multi30k's place: the synthetic corpus below
from collections import Counter  # port: torchtext's build_vocab_from_iterator, below


# port: the next three, torchtext's in the example (no download, no spacy model)
def Multi30k(split, language_pair):  # port: pairs of a toy language and its word-by-word English
    words = {"der": "the", "hund": "dog", "die": "the", "katze": "cat", "sieht": "sees", "jagt": "chases",  # port
             "mag": "likes", "einen": "a", "ball": "ball", "fisch": "fish", "rot": "red", "klein": "small"}  # port
    rng = np.random.default_rng({"train": 0, "valid": 1}[split])  # port
    pairs = []  # port
    for _ in range({"train": 320, "valid": 64}[split]):  # port
        sentence = list(rng.choice(list(words), rng.integers(3, 8)))  # port: 3 to 7 words
        pairs.append((" ".join(sentence) + "\n", " ".join(words[w] for w in sentence) + "\n"))  # port
    return pairs  # port: a list, as the datapipe is iterated twice


def get_tokenizer(name, language):  # port: spacy's tokenizers: words split at spaces
    return str.split  # port


class Vocab:  # port: torchtext.vocab.Vocab, the methods the example calls
    def __init__(self, itos):  # port
        self.itos, self.stoi, self.default = itos, {w: i for i, w in enumerate(itos)}, None  # port

    def set_default_index(self, index):  # port
        self.default = index  # port

    def __call__(self, tokens):  # port
        return [self.stoi.get(token, self.default) for token in tokens]  # port

    def __len__(self):  # port
        return len(self.itos)  # port

    def lookup_tokens(self, indices):  # port
        return [self.itos[i] for i in indices]  # port


def build_vocab_from_iterator(iterator, min_freq, specials, special_first):  # port: torchtext's
    counts = Counter(token for tokens in iterator for token in tokens)  # port
    words = sorted((w for w, n in counts.items() if n >= min_freq and w not in specials), key=lambda w: (-counts[w], w))  # port
    return Vocab(specials + words if special_first else words + specials)  # port

# Turns an iterable into a generator
def _yield_tokens(iterable_data, tokenizer, src):

    # Iterable data stores the samples as (src, tgt) so this will help us select just one language or the other
    index = 0 if src else 1

    for data in iterable_data:
        yield tokenizer(data[index])

# Get data, tokenizer, text transform, vocab objs, etc. Everything we
# need to start training the model
def get_data(opts):

    src_lang = opts.src
    tgt_lang = opts.tgt

    # port: multi30k.URL["train"] and ["valid"]: no download

    # Define a token "unkown", "padding", "beginning of sentence", and "end of sentence"
    special_symbols = {
        "<unk>":0,
        "<pad>":1,
        "<bos>":2,
        "<eos>":3
    }

    # Get training examples from torchtext (the multi30k dataset)
    train_iterator = Multi30k(split="train", language_pair=(src_lang, tgt_lang))
    valid_iterator = Multi30k(split="valid", language_pair=(src_lang, tgt_lang))

    # Grab a tokenizer for these languages
    src_tokenizer = get_tokenizer("spacy", src_lang)
    tgt_tokenizer = get_tokenizer("spacy", tgt_lang)

    # Build a vocabulary object for these languages
    src_vocab = build_vocab_from_iterator(
        _yield_tokens(train_iterator, src_tokenizer, True),
        min_freq=1,
        specials=list(special_symbols.keys()),
        special_first=True
    )

    tgt_vocab = build_vocab_from_iterator(
        _yield_tokens(train_iterator, tgt_tokenizer, False),
        min_freq=1,
        specials=list(special_symbols.keys()),
        special_first=True
    )

    src_vocab.set_default_index(special_symbols["<unk>"])
    tgt_vocab.set_default_index(special_symbols["<unk>"])

    # Helper function to sequentially apply transformations
    def _seq_transform(*transforms):
        def func(txt_input):
            for transform in transforms:
                txt_input = transform(txt_input)
            return txt_input
        return func

    # Function to add BOS/EOS and create tensor for input sequence indices
    def _tensor_transform(token_ids):
        return torch.cat(
            (torch.tensor([special_symbols["<bos>"]]),
             torch.tensor(token_ids),
             torch.tensor([special_symbols["<eos>"]]))
        )

    src_lang_transform = _seq_transform(src_tokenizer, src_vocab, _tensor_transform)
    tgt_lang_transform = _seq_transform(tgt_tokenizer, tgt_vocab, _tensor_transform)

    # Now we want to convert the torchtext data pipeline to a dataloader. We
    # will need to collate batches
    def _collate_fn(batch):
        src_batch, tgt_batch = [], []
        for src_sample, tgt_sample in batch:
            src_batch.append(src_lang_transform(src_sample.rstrip("\n")))
            tgt_batch.append(tgt_lang_transform(tgt_sample.rstrip("\n")))

        src_batch = pad_sequence(src_batch, padding_value=special_symbols["<pad>"])
        tgt_batch = pad_sequence(tgt_batch, padding_value=special_symbols["<pad>"])
        return src_batch, tgt_batch

    # Create the dataloader
    train_dataloader = DataLoader(train_iterator, batch_size=opts.batch, collate_fn=_collate_fn)
    valid_dataloader = DataLoader(valid_iterator, batch_size=opts.batch, collate_fn=_collate_fn)

    return train_dataloader, valid_dataloader, src_vocab, tgt_vocab, src_lang_transform, tgt_lang_transform, special_symbols

def generate_square_subsequent_mask(size, device):
    mask = (torch.triu(torch.ones((size, size), device=device)) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
    return mask

# Create masks for input into model
def create_mask(src, tgt, pad_idx, device):

    # Get sequence length
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]

    # Generate the mask
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len, device)
    src_mask = torch.zeros((src_seq_len, src_seq_len),device=device).type(torch.bool)

    # Overlay the mask over the original input
    src_padding_mask = (src == pad_idx).transpose(0, 1)
    tgt_padding_mask = (tgt == pad_idx).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

# A small test to make sure our data loasd in correctly
if __name__=="__main__":

    class Opts:
        def __init__(self):
            self.src = "en",
            self.tgt = "de"
            self.batch = 128

    opts = Opts()
    
    train_dl, valid_dl, src_vocab, tgt_vocab, src_lang_transform, tgt_lang_transform, special_symbols = get_data(opts)

    print(f"{opts.src} vocab size: {len(src_vocab)}")
    print(f"{opts.src} vocab size: {len(tgt_vocab)}")

"""

# language_translation/main.py
TRANSLATOR_MAIN = r"""
from time import time # Track how long an epoch takes
import os # Creating and finding files/directories
import logging # Logging tools
from datetime import date # Logging the date for model versioning

import torch # For ML
from tqdm import tqdm # For fancy progress bars

from src.model import Translator # Our model
from src.data import get_data, create_mask, generate_square_subsequent_mask # Loading data and data preprocessing
from argparse import ArgumentParser # For args

# Train on the GPU if possible
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Function to generate output sequence using greedy algorithm
def greedy_decode(model, src, src_mask, max_len, start_symbol, end_symbol):

    # Move to device
    src = src.to(DEVICE)
    src_mask = src_mask.to(DEVICE)

    # Encode input
    memory = model.encode(src, src_mask)

    # Output will be stored here
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(DEVICE)

    # For each element in our translation (which could range up to the maximum translation length)
    for _ in range(max_len-1):

        # Decode the encoded representation of the input
        memory = memory.to(DEVICE)
        tgt_mask = (generate_square_subsequent_mask(ys.size(0), DEVICE).type(torch.bool)).to(DEVICE)
        out = model.decode(ys, memory, tgt_mask)

        # Reshape
        out = out.transpose(0, 1)

        # Covert to probabilities and take the max of these probabilities
        prob = model.ff(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()

        # Now we have an output which is the vector representation of the translation
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == end_symbol:
            break

    return ys

# Opens an user interface where users can translate an arbitrary sentence
def inference(opts):

    # Get training data, tokenizer and vocab
    # objects as well as any special symbols we added to our dataset
    _, _, src_vocab, tgt_vocab, src_transform, _, special_symbols = get_data(opts)

    src_vocab_size = len(src_vocab)
    tgt_vocab_size = len(tgt_vocab)

    # Create model
    model = Translator(
        num_encoder_layers=opts.enc_layers,
        num_decoder_layers=opts.dec_layers,
        embed_size=opts.embed_size,
        num_heads=opts.attn_heads,
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        dim_feedforward=opts.dim_feedforward,
        dropout=opts.dropout
    ).to(DEVICE)

    # Load in weights
    model.load_state_dict(torch.load(opts.model_path))

    # Set to inference
    model.eval()

    # Accept input and keep translating until they quit
    for sentence in SENTENCES:  # port: the test's lines in place of `while True:` and input()
        print("> ", end="")

        # sentence = input()  # port: as above

        # Convert to tokens
        src = src_transform(sentence).view(-1, 1)
        num_tokens = src.shape[0]

        src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)

        # Decode
        tgt_tokens = greedy_decode(
            model, src, src_mask, max_len=num_tokens+5, start_symbol=special_symbols["<bos>"], end_symbol=special_symbols["<eos>"]
        ).flatten()

        # Convert to list of tokens
        output_as_list = list(tgt_tokens.cpu().numpy())

        # Convert tokens to words
        output_list_words = tgt_vocab.lookup_tokens(output_as_list)

        # Remove special tokens and convert to string
        translation = " ".join(output_list_words).replace("<bos>", "").replace("<eos>", "")

        print(translation)

# Train the model for 1 epoch
def train(model, train_dl, loss_fn, optim, special_symbols, opts):

    # Object for accumulating losses
    losses = 0

    # Put model into training mode
    model.train()
    for src, tgt in tqdm(train_dl, ascii=True):

        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        # We need to reshape the input slightly to fit into the transformer
        tgt_input = tgt[:-1, :]

        # Create masks
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input, special_symbols["<pad>"], DEVICE)

        # Pass into model, get probability over the vocab out
        logits = model(src, tgt_input, src_mask, tgt_mask,src_padding_mask, tgt_padding_mask, src_padding_mask)

        # Reset gradients before we try to compute the gradients over the loss
        optim.zero_grad()

        # Get original shape back
        tgt_out = tgt[1:, :]

        # Compute loss and gradient over that loss
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()

        # Step weights
        optim.step()

        # Accumulate a running loss for reporting
        losses += loss.item()

        if opts.dry_run:
            break

    # Return the average loss
    return losses / len(list(train_dl))

# Check the model accuracy on the validation dataset
def validate(model, valid_dl, loss_fn, special_symbols):
    
    # Object for accumulating losses
    losses = 0

    # Turn off gradients a moment
    model.eval()

    for src, tgt in tqdm(valid_dl):

        src = src.to(DEVICE)
        tgt = tgt.to(DEVICE)

        # We need to reshape the input slightly to fit into the transformer
        tgt_input = tgt[:-1, :]

        # Create masks
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input, special_symbols["<pad>"], DEVICE)

        # Pass into model, get probability over the vocab out
        logits = model(src, tgt_input, src_mask, tgt_mask,src_padding_mask, tgt_padding_mask, src_padding_mask)

        # Get original shape back, compute loss, accumulate that loss
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        losses += loss.item()

    # Return the average loss
    return losses / len(list(valid_dl))

# Train the model
def main(opts):

    # Set up logging
    os.makedirs(opts.logging_dir, exist_ok=True)
    logger = logging.getLogger(__name__)
    logging.basicConfig(filename=opts.logging_dir + "log.txt", level=logging.INFO)

    # This prints it to the screen as well
    console = logging.StreamHandler()
    console.setLevel(logging.INFO)
    logging.getLogger().addHandler(console)

    logging.info(f"Translation task: {opts.src} -> {opts.tgt}")
    logging.info(f"Using device: {DEVICE}")

    # Get training data, tokenizer and vocab
    # objects as well as any special symbols we added to our dataset
    train_dl, valid_dl, src_vocab, tgt_vocab, _, _, special_symbols = get_data(opts)

    logging.info("Loaded data")

    src_vocab_size = len(src_vocab)
    tgt_vocab_size = len(tgt_vocab)

    logging.info(f"{opts.src} vocab size: {src_vocab_size}")
    logging.info(f"{opts.tgt} vocab size: {tgt_vocab_size}")

    # Create model
    model = Translator(
        num_encoder_layers=opts.enc_layers,
        num_decoder_layers=opts.dec_layers,
        embed_size=opts.embed_size,
        num_heads=opts.attn_heads,
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        dim_feedforward=opts.dim_feedforward,
        dropout=opts.dropout
    ).to(DEVICE)

    logging.info("Model created... starting training!")

    # Set up our learning tools
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=special_symbols["<pad>"])

    # These special values are from the "Attention is all you need" paper
    optim = torch.optim.Adam(model.parameters(), lr=opts.lr, betas=(0.9, 0.98), eps=1e-9)

    best_val_loss = 1e6
    
    for idx, epoch in enumerate(range(1, opts.epochs+1)):

        start_time = time()
        train_loss = train(model, train_dl, loss_fn, optim, special_symbols, opts)
        epoch_time = time() - start_time
        val_loss   = validate(model, valid_dl, loss_fn, special_symbols)

        # Once training is done, we want to save out the model
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            logging.info("New best model, saving...")
            torch.save(model.state_dict(), opts.logging_dir + "best.pt")

        torch.save(model.state_dict(), opts.logging_dir + "last.pt")

        logger.info(f"Epoch: {epoch}\n\tTrain loss: {train_loss:.3f}\n\tVal loss: {val_loss:.3f}\n\tEpoch time = {epoch_time:.1f} seconds\n\tETA = {epoch_time*(opts.epochs-idx-1):.1f} seconds")

if __name__ == "__main__":

    parser = ArgumentParser(
        prog="Machine Translator training and inference",
    )

    # Inference mode
    parser.add_argument("--inference", action="store_true",
                        help="Set true to run inference")
    parser.add_argument("--model_path", type=str,
                        help="Path to the model to run inference on")

    # Translation settings
    parser.add_argument("--src", type=str, default="de",
                        help="Source language (translating FROM this language)")
    parser.add_argument("--tgt", type=str, default="en",
                        help="Target language (translating TO this language)")

    # Training settings 
    parser.add_argument("-e", "--epochs", type=int, default=30,
                        help="Epochs")
    parser.add_argument("--lr", type=float, default=1e-4,
                        help="Default learning rate")
    parser.add_argument("--batch", type=int, default=128,
                        help="Batch size")
    parser.add_argument("--backend", type=str, default="cpu",
                        help="Batch size")
    
    # Transformer settings
    parser.add_argument("--attn_heads", type=int, default=8,
                        help="Number of attention heads")
    parser.add_argument("--enc_layers", type=int, default=5,
                        help="Number of encoder layers")
    parser.add_argument("--dec_layers", type=int, default=5,
                        help="Number of decoder layers")
    parser.add_argument("--embed_size", type=int, default=512,
                        help="Size of the language embedding")
    parser.add_argument("--dim_feedforward", type=int, default=512,
                        help="Feedforward dimensionality")
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="Transformer dropout")

    # Logging settings
    parser.add_argument("--logging_dir", type=str, default="./" + str(date.today()) + "/",
                        help="Where the output of this program should be placed")

    # Just for continuous integration
    parser.add_argument("--dry_run", action="store_true")

    args = parser.parse_args()

    DEVICE = torch.device("cuda" if args.backend == "gpu" and torch.cuda.is_available() else "cpu")

    if args.inference:
        inference(args)
    else:
        main(args)
"""


@contextlib.contextmanager
def own_root_logger():
    """The root logger as a fresh process has it (no handlers, WARNING), so that a script's
    ``logging.basicConfig`` takes effect; its handlers closed and pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers, root.level = [], logging.WARNING
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level


def run_both(files: dict, script: str, argv: list, tmp_path, monkeypatch, seed=None, **names):
    """``script`` run with the command line ``argv`` under torch, then with ``torch`` replaced
    by ``tricycle`` in every file, each as a process of its own would (its own root logger),
    on one BLAS thread (a shared machine: the examples' small products need no more);
    ``seed``, when given, seeds each library's generator first (for an example that does not)."""
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    monkeypatch.setattr(sys, "argv", [script, *argv])
    # the files' modules and their packages, dotted (b's ``run`` forgets ``model``, not ``src.model``)
    paths = [name.removesuffix(".py").split("/") for name in files if name.endswith(".py")]
    modules = {".".join(path[:n]) for path in paths for n in range(1, len(path) + 1)}
    for module in modules:
        monkeypatch.delitem(sys.modules, module, raising=False)
    ported = {name: text.replace("torch", "tricycle") for name, text in files.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"), own_root_logger():
            if seed is not None:
                torch.manual_seed(seed)
            theirs = run(files, [script], tmp_path / "torch", monkeypatch, **names)
    finally:
        torch.set_num_threads(threads)
        for module in modules:  # the other library's run imports its own
            sys.modules.pop(module, None)
    with threadpool_limits(1, user_api="blas"), own_root_logger():
        if seed is not None:
            tricycle.manual_seed(seed)
        ours = run(ported, [script], tmp_path / "tricycle", monkeypatch, **names)
    for module in modules:
        sys.modules.pop(module, None)
    return theirs, ours


def padded(printed: str) -> list[str]:
    """``lines``, with the padding inside brackets dropped: ``'{:6.2f}'`` pads 100.00 less."""
    return [line.replace("( ", "(") for line in lines(printed)]


def test_imagenet(tmp_path, monkeypatch):
    files = {"models.py": RESNET, "main.py": IMAGENET}
    common = ["-j", "0", "-b", "32", "-p", "4", "--seed", "1"]  # no workers, small batches
    printed = {"torch": [], "tricycle": []}
    for argv in (["--epochs", "2"], ["--epochs", "3", "--resume", "checkpoint.pth.tar"],
                 ["--evaluate", "--resume", "model_best.pth.tar"]):  # fmt: skip
        with pytest.warns(UserWarning, match="You have chosen to seed training"):
            theirs, ours = run_both(files, "main.py", common + argv, tmp_path, monkeypatch)
        assert padded(ours[0]) == padded(theirs[0])
        printed["torch"].append(theirs[0])
        printed["tricycle"].append(ours[0])
    for library, (trained, resumed, evaluated) in printed.items():
        assert "=> loaded checkpoint 'checkpoint.pth.tar' (epoch 2)" in resumed, library
        assert "Epoch: [2]" in resumed and "Epoch: [1]" not in resumed, library
        losses = numbers(r"Epoch: .*Loss \S+ \((\S+)\)", trained + resumed)  # running means
        assert losses[-1] < 0.2 * losses[0], (library, losses)  # ln(1000) at first
        top1 = numbers(r"\* +Acc@1 ([\d.]+)", trained + resumed)  # each epoch's validation
        assert len(top1) == 3 and top1[-1] > 50, (library, top1)  # chance: 10 (ten classes)
        (best,) = numbers(r"\* +Acc@1 ([\d.]+)", evaluated)  # model_best, evaluated again
        assert best == max(top1), (library, best, top1)
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    ours = tricycle.load(tmp_path / "tricycle" / "checkpoint.pth.tar")
    theirs = torch.load(tmp_path / "torch" / "checkpoint.pth.tar")
    for checkpoint in ours, theirs:
        assert checkpoint["epoch"] == 3 and checkpoint["arch"] == "resnet18"
        assert checkpoint["scheduler"]["last_epoch"] == 3
    # SGD's momentum, one buffer a parameter (38), resumed and saved again
    buffers = [[state["momentum_buffer"].shape for state in c["optimizer"]["state"].values()]
               for c in (ours, theirs)]  # fmt: skip
    assert len(buffers[0]) == len(buffers[1]) == 38


ENGLISH = {"der": "the", "hund": "dog", "die": "the", "katze": "cat", "sieht": "sees",
           "jagt": "chases", "mag": "likes", "einen": "a", "ball": "ball", "fisch": "fish",
           "rot": "red", "klein": "small"}  # fmt: skip  # TRANSLATOR_DATA's word-by-word rule


def test_language_translation(tmp_path, monkeypatch):
    files = {"src/model.py": TRANSLATOR_MODEL, "src/data.py": TRANSLATOR_DATA,
             "main.py": TRANSLATOR_MAIN}  # fmt: skip
    model = ["--attn_heads", "2", "--enc_layers", "1", "--dec_layers", "1", "--embed_size", "32",
             "--dim_feedforward", "64"]  # fmt: skip  # the defaults: 8, 5, 5, 512, 512
    training = ["-e", "10", "--lr", "3e-3", "--batch", "16", "--logging_dir", "logs/"]
    sentences = ["der hund sieht einen ball", "die katze mag einen fisch",
                 "der klein hund jagt die rot katze", "die rot katze sieht der hund"]  # fmt: skip
    trained = run_both(files, "main.py", model + training, tmp_path, monkeypatch, seed=0)
    inference = ["--inference", "--model_path", "logs/best.pt"]
    translated = run_both(files, "main.py", model + inference, tmp_path, monkeypatch, seed=0,
                          SENTENCES=sentences)  # fmt: skip
    logs = {library: (tmp_path / library / "logs" / "log.txt").read_text()
            for library in ("torch", "tricycle")}  # fmt: skip
    assert lines(logs["tricycle"]) == lines(logs["torch"])
    for printed in translated[0][0], translated[1][0]:  # the words are each model's own
        assert [line[:2] for line in printed.splitlines()] == ["> "] * len(sentences)
    assert trained[0][0] == trained[1][0] == ""  # training logs, to the file and stderr
    for library, printed in (("torch", translated[0][0]), ("tricycle", translated[1][0])):
        assert "en vocab size: 15" in logs[library]  # 12 words (der, die: the) and 4 specials
        validation = numbers(r"Val loss: ([\d.]+)", logs[library])
        assert len(validation) == 10 and validation[-1] < 0.25 * validation[0], (
            library,
            validation,
        )
        assert (tmp_path / library / "logs" / "best.pt").exists()
        assert (tmp_path / library / "logs" / "last.pt").exists()
        # greedy decoding: "> " and the words between <bos> and <eos>, a sentence a line
        outputs = [line.removeprefix("> ").split() for line in printed.splitlines()]
        expected = [[ENGLISH[word] for word in sentence.split()] for sentence in sentences]
        right = sum(
            a == b for output, words in zip(outputs, expected) for a, b in zip(output, words)
        )
        assert right >= 0.75 * sum(map(len, expected)), (library, outputs)


# ---------------------------------------------------------------------- the fixes they needed
def loss_names() -> list[str]:
    import tricycle.nn as nn  # noqa: PLC0415

    return [name for name in nn.__all__ if name.endswith("Loss")]


@pytest.mark.parametrize("name", loss_names())
def test_criteria_are_modules_as_torchs(name):
    """imagenet's ``nn.CrossEntropyLoss().to(device)``: torch's losses are Modules."""
    torch = pytest.importorskip("torch")
    import tricycle.nn as nn  # noqa: PLC0415

    ours, theirs = getattr(nn, name)(), getattr(torch.nn, name)()
    assert isinstance(ours, nn.Module) and isinstance(theirs, torch.nn.Module)
    assert ours.to("cpu") is ours and ours.cpu() is ours and ours.eval() is ours
    assert not ours.training and ours.train().training
    assert list(ours.parameters()) == list(theirs.parameters()) == []
    assert dict(ours.state_dict()) == dict(theirs.state_dict()) == {}
    holder, torch_holder = (
        nn.Sequential(nn.Linear(2, 2)),
        torch.nn.Sequential(torch.nn.Linear(2, 2)),
    )
    holder.criterion, torch_holder.criterion = ours, theirs  # a model that keeps its criterion
    assert [type(m).__name__ for m in holder.children()][-1] == name
    assert [type(m).__name__ for m in torch_holder.children()][-1] == name


def test_a_criterion_moved_by_to_gives_torchs_loss_gradient_and_hooks():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    logits, target = rng.normal(size=(6, 5)).astype(np.float32), np.array([0, 4, 1, -100, 2, 3])
    results = []
    for lib in torch, tricycle:
        criterion = lib.nn.CrossEntropyLoss().to(lib.device("cpu"))  # imagenet's line
        seen = []
        criterion.register_forward_hook(lambda module, args, out: seen.append(out.item()))
        x = lib.tensor(logits, requires_grad=True)
        loss = criterion(x, lib.tensor(target))
        loss.backward()
        results.append((loss.item(), x.grad.numpy(), seen))
    (theirs, theirs_grad, theirs_seen), (ours, ours_grad, ours_seen) = results
    assert ours == pytest.approx(theirs, rel=1e-6) and ours_seen == pytest.approx(theirs_seen)
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-7)
    assert not ours_grad[3].any()  # the ignored label


def test_data_parallel_wraps_the_model_as_torchs():
    """imagenet's single-GPU line ``model = torch.nn.DataParallel(model).cuda()``: the same
    outputs and gradients as torch's (which, without GPUs, calls the module as tricycle does
    on any device), the model as ``.module`` and torch's ``module.`` prefix."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    tricycle.manual_seed(0)
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    ours = tricycle.nn.DataParallel(
        tricycle.nn.Sequential(tricycle.nn.Linear(4, 3), tricycle.nn.ReLU())
    )
    tricycle.nn.from_torch(ours, theirs.state_dict())  # torch's names, module. prefix and all
    assert sorted(ours.state_dict()) == ["module.sequence.0.bias", "module.sequence.0.weights"]
    assert ours.to("cpu") is ours and isinstance(ours.module, tricycle.nn.Sequential)
    if torch.cuda.is_available():  # torch's DataParallel then wants the model on cuda:0
        theirs.cuda()
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    outputs = []
    for lib, model in ((torch, theirs), (tricycle, ours)):
        inputs = lib.tensor(x, requires_grad=True)
        output = model(inputs)
        (output**2).sum().backward()
        outputs.append((output.detach().cpu().numpy(), inputs.grad.cpu().numpy()))
    for theirs_array, ours_array in zip(*outputs):
        np.testing.assert_allclose(ours_array, theirs_array, rtol=1e-5, atol=1e-6)
    bias = ours.module[0].bias.grad.numpy()
    expected = theirs.module[0].bias.grad.cpu().numpy()
    np.testing.assert_allclose(bias, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match=r"DataParallel: module must be a tricycle.nn.Module, got"):
        tricycle.nn.DataParallel(lambda x: x)
