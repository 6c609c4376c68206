"""Examples of github.com/pytorch/examples, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; tests/test_torch_scripts.py's method):

- dcgan: ``main.py``'s Generator and Discriminator (``ConvTranspose2d``, ``BatchNorm2d``,
  ``LeakyReLU``, ``Tanh``, ``Sigmoid`` in a ``Sequential``, ``output.view(-1, 1).squeeze(1)``,
  ``input.is_cuda or input.is_xpu``), ``weights_init`` by ``m.__class__.__name__`` through
  ``apply``, ``BCELoss`` with ``torch.full`` labels and ``fill_``, the two Adam optimizers,
  ``fixed_noise``, ``cudnn.benchmark``, the state dicts saved each epoch; then run again from
  those checkpoints (``--netG``/``--netD``: ``load_state_dict(torch.load(...))``), which gives
  the trained generator's images back;
- reinforcement_learning/reinforce: REINFORCE with a dropout policy, ``Categorical``,
  ``log_prob``, the returns normalised with eps and ``torch.cat(policy_loss).sum()``, on the
  tiny hand-written task that tests/test_torch_examples_b.py's actor_critic plays in place of
  gymnasium's CartPole (its text, taken from there);
- distributed/ddp: ``example.py`` in a world of one on the CPU (gloo): the process group from
  the variables torchrun sets, ``get_default_backend_for_device``, ``DistributedDataParallel``
  and one SGD step of its ToyModel, the GPU check answered as on a machine without GPUs.

Each example's files are its own text, with argparse's values from the test, sizes and epochs
shrunk, the CPU in place of ``cuda:N`` and synthetic data in place of the downloads; every
changed line ends in a ``# port:`` comment that says why. The test writes the files in a
temporary directory and runs them there under torch (skipped without it), then with ``torch``
replaced by ``tricycle``, and checks that both learn and print the same lines, numbers aside
(the models' reprs aside: tricycle's shows a Sequential's ``sequence.N`` names, each layer's
arguments in full and the parameter counts, so for them the test compares the layers listed).
tricycle has no ``tricycle.nn.parallel`` (``DistributedDataParallel`` lives in the parallel
layer, above the layer catalogue: tests/test_torch_examples_d.py's reason): the test supplies
that one import. The fixes the examples needed are tested against torch at the end.
"""

import re

import numpy as np
import pytest

from tests.test_torch_examples_b import ACTOR_CRITIC, both, lines, numbers
from tests.test_torch_examples_d import world_of_one  # noqa: F401 - the fixture

# dcgan/main.py
DCGAN = r"""from __future__ import print_function
import argparse
import os
import random
import numpy as np  # port: synthetic images in place of the datasets
import torch
import torch.nn as nn
import torch.nn.parallel
import torch.backends.cudnn as cudnn
import torch.optim as optim
import torch.utils.data
# import torchvision.datasets as dset  # port: synthetic images below
# import torchvision.transforms as transforms  # port: synthetic images below
# import torchvision.utils as vutils  # port: save_image's place is a shape check


parser = argparse.ArgumentParser()
parser.add_argument('--dataset', required=True, help='cifar10 | lsun | mnist |imagenet | folder | lfw | fake')
parser.add_argument('--dataroot', required=False, help='path to dataset')
parser.add_argument('--workers', type=int, help='number of data loading workers', default=2)
parser.add_argument('--batchSize', type=int, default=64, help='input batch size')
parser.add_argument('--imageSize', type=int, default=64, help='the height / width of the input image to network')
parser.add_argument('--nz', type=int, default=100, help='size of the latent z vector')
parser.add_argument('--ngf', type=int, default=64, help='number of generator filters')
parser.add_argument('--ndf', type=int, default=64, help='number of discriminator filters')
parser.add_argument('--niter', type=int, default=25, help='number of epochs to train for')
parser.add_argument('--lr', type=float, default=0.0002, help='learning rate, default=0.0002')
parser.add_argument('--beta1', type=float, default=0.5, help='beta1 for adam. default=0.5')
parser.add_argument('--dry-run', action='store_true', help='check a single training cycle works')
parser.add_argument('--ngpu', type=int, default=1, help='number of GPUs to use')
parser.add_argument('--netG', default='', help="path to netG (to continue training)")
parser.add_argument('--netD', default='', help="path to netD (to continue training)")
parser.add_argument('--outf', default='.', help='folder to output images and model checkpoints')
parser.add_argument('--manualSeed', type=int, help='manual seed')
parser.add_argument('--classes', default='bedroom', help='comma separated list of classes for the lsun data set')
parser.add_argument('--accel', action='store_true', default=False, help='enables accelerator')

opt = parser.parse_args(ARGV)  # port: the test's argv
print(opt)

try:
    os.makedirs(opt.outf)
except OSError:
    pass

if opt.manualSeed is None:
    opt.manualSeed = random.randint(1, 10000)
print("Random Seed: ", opt.manualSeed)
random.seed(opt.manualSeed)
torch.manual_seed(opt.manualSeed)

cudnn.benchmark = True

if opt.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

print(f"Using device: {device}")

if opt.dataroot is None and str(opt.dataset).lower() != 'fake':
    raise ValueError("`dataroot` parameter is required for dataset \"%s\"" % opt.dataset)

if opt.dataset in ['imagenet', 'folder', 'lfw']:
    # folder dataset
    dataset = dset.ImageFolder(root=opt.dataroot,
                               transform=transforms.Compose([
                                   transforms.Resize(opt.imageSize),
                                   transforms.CenterCrop(opt.imageSize),
                                   transforms.ToTensor(),
                                   transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                               ]))
    nc=3
elif opt.dataset == 'lsun':
    classes = [ c + '_train' for c in opt.classes.split(',')]
    dataset = dset.LSUN(root=opt.dataroot, classes=classes,
                        transform=transforms.Compose([
                            transforms.Resize(opt.imageSize),
                            transforms.CenterCrop(opt.imageSize),
                            transforms.ToTensor(),
                            transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                        ]))
    nc=3
elif opt.dataset == 'cifar10':
    dataset = dset.CIFAR10(root=opt.dataroot, download=True,
                           transform=transforms.Compose([
                               transforms.Resize(opt.imageSize),
                               transforms.ToTensor(),
                               transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                           ]))
    nc=3

elif opt.dataset == 'mnist':
        dataset = dset.MNIST(root=opt.dataroot, download=True,
                           transform=transforms.Compose([
                               transforms.Resize(opt.imageSize),
                               transforms.ToTensor(),
                               transforms.Normalize((0.5,), (0.5,)),
                           ]))
        nc=1

elif opt.dataset == 'fake':  # port: FakeData's place, learnable: a bright disc on a dark ground, in [-1, 1] as Normalize gives
    grid = np.mgrid[:opt.imageSize, :opt.imageSize] / opt.imageSize - 0.5  # port: (2, H, W)
    disc = np.where((grid ** 2).sum(0) < 0.25 ** 2, 1.0, -1.0).astype(np.float32)  # port: (H, W)
    images = np.broadcast_to(disc, (64, 3) + disc.shape).copy()  # port: 64 images (N, 3, H, W)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.zeros(64, dtype=torch.long))  # port: (image, class) as FakeData's
    nc=3

assert dataset
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize,
                                         shuffle=True, num_workers=int(opt.workers))

ngpu = int(opt.ngpu)
nz = int(opt.nz)
ngf = int(opt.ngf)
ndf = int(opt.ndf)


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(next(m.parameters()), 0.0, 0.02)  # port: m.weight by position: tricycle's convolutions name it weights
    elif classname.find('BatchNorm') != -1:
        weight, bias = m.parameters()  # port: m.weight and m.bias by position: tricycle's norms name them gamma, beta
        torch.nn.init.normal_(weight, 1.0, 0.02)  # port: as above
        torch.nn.init.zeros_(bias)  # port: as above


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(     nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            # state size. (ngf*8) x 4 x 4
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 8 x 8
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 16 x 16
            nn.ConvTranspose2d(ngf * 2,     ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            # state size. (ngf) x 32 x 32
            nn.ConvTranspose2d(    ngf,      nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 64 x 64
        )

    def forward(self, input):

        if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


netG = Generator(ngpu).to(device)
netG.apply(weights_init)
if opt.netG != '':
    netG.load_state_dict(torch.load(opt.netG))
print(netG)


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 64 x 64
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 32 x 32
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 16 x 16
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*4) x 8 x 8
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*8) x 4 x 4
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)

        return output.view(-1, 1).squeeze(1)


netD = Discriminator(ngpu).to(device)
netD.apply(weights_init)
if opt.netD != '':
    netD.load_state_dict(torch.load(opt.netD))
print(netD)

criterion = nn.BCELoss()

fixed_noise = torch.randn(opt.batchSize, nz, 1, 1, device=device)
real_label = 1
fake_label = 0

# setup optimizer
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

if opt.dry_run:
    opt.niter = 1

samples = []  # port: the test reads the fixed noise's images in place of the files
for epoch in range(opt.niter):
    for i, data in enumerate(dataloader, 0):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        # train with real
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label,
                           dtype=real_cpu.dtype, device=device)

        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        # train with fake
        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
              % (epoch, opt.niter, i, len(dataloader),
                 errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        if i % 2 == 0:  # port: 100 shrunk
            assert real_cpu.shape == (batch_size, nc, opt.imageSize, opt.imageSize)  # port: vutils.save_image(real_cpu, ...)'s place
            fake = netG(fixed_noise)
            samples.append(fake.detach().numpy())  # port: vutils.save_image(fake.detach(), ...)'s place: the test reads them

        if opt.dry_run:
            break
    # do checkpointing
    torch.save(netG.state_dict(), '%s/netG_epoch_%d.pth' % (opt.outf, epoch))
    torch.save(netD.state_dict(), '%s/netD_epoch_%d.pth' % (opt.outf, epoch))
"""  # noqa: E501

# reinforcement_learning/reinforce.py's task: actor_critic's GustyPole, as
# tests/test_torch_examples_b.py writes it
GUSTY_POLE = (
    "import numpy as np\nfrom collections import namedtuple\n\n\n"
    + ACTOR_CRITIC[ACTOR_CRITIC.index("class GustyPole") : ACTOR_CRITIC.index("render_mode =")]
)

# reinforcement_learning/reinforce.py
REINFORCE = r"""import argparse
# import gymnasium as gym  # port: a tiny task of the test's in place of gymnasium's CartPole
from gusty_pole import GustyPole  # port: as above
import numpy as np
from itertools import count
from collections import deque
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


parser = argparse.ArgumentParser(description='PyTorch REINFORCE example')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G',
                    help='discount factor (default: 0.99)')
parser.add_argument('--seed', type=int, default=543, metavar='N',
                    help='random seed (default: 543)')
parser.add_argument('--render', action='store_true',
                    help='render the environment')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='interval between training status logs (default: 10)')
args = parser.parse_args([])  # port: argv (the defaults)


render_mode = "human" if args.render else None
env = GustyPole()  # port: in place of gym.make('CartPole-v1', render_mode=render_mode)
env.reset(seed=args.seed)
torch.manual_seed(args.seed)


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.appendleft(R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def main():
    running_reward = 10
    for i_episode in count(1):
        state, _ = env.reset()
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, terminated, truncated, _ = env.step(action)
            if args.render:
                env.render()
            policy.rewards.append(reward)
            ep_reward += reward
            if terminated or truncated:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
        if i_episode % args.log_interval == 0:
            print(f'Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}')
        if running_reward > env.spec.reward_threshold:
            print(f"Solved! Running reward is now {running_reward} and the last episode runs to {t} time steps!")
            break


if __name__ == '__main__':
    main()
"""  # noqa: E501

# distributed/ddp/example.py
DDP_EXAMPLE = r'''import argparse
import os
import sys
import tempfile
from urllib.parse import urlparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim

from torch.nn.parallel import DistributedDataParallel as DDP

def verify_min_gpu_count(min_gpus: int = 2) -> bool:
    """ verification that we have at least 2 gpus to run dist examples """
    has_gpu = torch.accelerator.is_available()
    gpu_count = torch.accelerator.device_count()
    return has_gpu and gpu_count >= min_gpus

class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(rank):

    print(
        f"[{os.getpid()}] rank = {dist.get_rank()}, "
        + f"world_size = {dist.get_world_size()}"
        )

    model = ToyModel().to("cpu")  # port: the CPU (rank 0 is cuda:0)
    ddp_model = DDP(model)  # port: a CPU module takes no device_ids

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    inputs = torch.randn(20, 10)  # port: named, for the test's check of the step
    outputs = ddp_model(inputs)  # port: torch.randn(20, 10) named
    labels = torch.randn(20, 5).to("cpu")  # port: the CPU
    loss_fn(outputs, labels).backward()
    step["loss"] = loss_fn(outputs, labels).item()  # port: the test checks the step
    step["before"] = [p.detach().numpy().copy() for p in ddp_model.parameters()]  # port: as above
    step["grads"] = [p.grad.numpy().copy() for p in ddp_model.parameters()]  # port: as above
    optimizer.step()
    step["after"] = [p.detach().numpy().copy() for p in ddp_model.parameters()]  # port: as above
    step["new_loss"] = loss_fn(ddp_model(inputs), labels).item()  # port: as above

    print(f"training completed in rank {rank}!")


def main():
    # These are the parameters used to initialize the process group
    env_dict = {
        key: os.environ[key]
        for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
    }
    rank = int(env_dict['RANK'])
    local_rank = int(env_dict['LOCAL_RANK'])
    local_world_size = int(env_dict['LOCAL_WORLD_SIZE'])

    if sys.platform == "win32":
        # Distributed package only covers collective communications with Gloo
        # backend and FileStore on Windows platform. Set init_method parameter
        # in init_process_group to a local file.
        if "INIT_METHOD" in os.environ.keys():
            print(f"init_method is {os.environ['INIT_METHOD']}")
            url_obj = urlparse(os.environ["INIT_METHOD"])
            if url_obj.scheme.lower() != "file":
                raise ValueError("Windows only supports FileStore")
            else:
                init_method = os.environ["INIT_METHOD"]
        else:
            # It is a example application, For convience, we create a file in temp dir.
            temp_dir = tempfile.gettempdir()
            init_method = f"file:///{os.path.join(temp_dir, 'ddp_example')}"
        dist.init_process_group(backend="gloo", init_method=init_method, rank=int(env_dict["RANK"]), world_size=int(env_dict["WORLD_SIZE"]))
    else:
        print(f"[{os.getpid()}] Initializing process group with: {env_dict}")
        acc = torch.accelerator.current_accelerator()
        backend = torch.distributed.get_default_backend_for_device("cpu")  # port: the CPU (acc is None)
        # torch.accelerator.set_device_index(rank)  # port: the CPU
        dist.init_process_group(backend=backend)

    print(
        f"[{os.getpid()}]: world_size = {dist.get_world_size()}, "
        + f"rank = {dist.get_rank()}, backend={dist.get_backend()} \n", end=''
    )

    demo_basic(rank)

    # Tear down the process group
    dist.destroy_process_group()

if __name__ == "__main__":
    _min_gpu_count = 2
    if not verify_min_gpu_count(min_gpus=_min_gpu_count):
        print(f"Unable to locate sufficient {_min_gpu_count} gpus to run this example. Exiting.")
        # sys.exit()  # port: a world of one on the CPU all the same
    step = {}  # port: the test checks the step
    main()
'''  # noqa: E501


# ------------------------------------------------------------------------- the tests
REPR_LINE = re.compile(r"^\s+\([\w.]+\): (\w+)\(", re.MULTILINE)  # "  (0): Conv2d(3, 8, ..."


def outside_reprs(printed: str) -> list[str]:
    """``lines`` of what was printed, without the models' reprs (see the module's doc)."""
    kept, inside = [], False
    for line in lines(printed):  # a repr: from "Generator(" to its ")" (and a count after it)
        closing = line.startswith(")")
        inside = (inside or re.fullmatch(r"\w+\(", line) is not None) and not closing
        kept += [] if inside or closing else [line]
    return kept


def correlation(a, b) -> float:
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


@pytest.mark.usefixtures("world_of_one")  # for its tricycle.nn.parallel
def test_dcgan(tmp_path, monkeypatch):
    argv = ["--dataset", "fake", "--batchSize", "8", "--nz", "8", "--ngf", "4", "--ndf", "4",
            "--niter", "2", "--lr", "0.01", "--workers", "0", "--manualSeed", "1"]  # fmt: skip
    files = {"main.py": DCGAN}
    theirs, ours = both(files, ["main.py"], tmp_path, monkeypatch, ARGV=argv)
    # again from the last epoch's checkpoints, one step with lr 0: the trained models as saved
    resume = argv + ["--netG", "netG_epoch_1.pth", "--netD", "netD_epoch_1.pth", "--dry-run",
                     "--lr", "0"]  # fmt: skip
    theirs_again, ours_again = both(files, ["main.py"], tmp_path, monkeypatch, ARGV=resume)
    for their_run, our_run in ((theirs, ours), (theirs_again, ours_again)):
        assert outside_reprs(our_run[0]) == outside_reprs(their_run[0])
        assert REPR_LINE.findall(our_run[0]) == REPR_LINE.findall(their_run[0])  # Tanh, Sigmoid
    runs = (("torch", theirs, theirs_again), ("tricycle", ours, ours_again))
    for library, (printed, (space,)), (_, (again,)) in runs:
        loss_d = numbers(r"Loss_D: ([\d.]+)", printed)  # 2 epochs of 8 batches
        assert len(loss_d) == 16, (library, loss_d)
        assert np.mean(loss_d[8:]) < 0.75 * np.mean(loss_d[:2]), (library, loss_d)
        d_real = numbers(r"D\(x\): ([\d.]+)", printed)
        d_fake = numbers(r"D\(G\(z\)\): ([\d.]+)", printed)  # before D's step
        assert np.mean(d_real[8:]) - np.mean(d_fake[8:]) > 0.25, (library, d_real, d_fake)
        # the generator's images of fixed_noise, every other step, take the data's shape
        assert all(sample.shape == (8, 3, 64, 64) for sample in space["samples"])
        disc = space["images"][0]
        shapes = [correlation(sample.mean(0), disc) for sample in space["samples"]]
        assert max(shapes) > shapes[0] + 0.15, (library, shapes)
        for epoch in (0, 1):
            assert (tmp_path / library / f"netG_epoch_{epoch}.pth").exists()
        trained = space["netG"](space["fixed_noise"]).detach().numpy()  # the last epoch's, saved
        np.testing.assert_allclose(again["samples"][0], trained, rtol=1e-5, atol=1e-6)


def test_reinforce(tmp_path, monkeypatch):
    files = {"gusty_pole.py": GUSTY_POLE, "reinforce.py": REINFORCE}
    theirs, ours = both(files, ["reinforce.py"], tmp_path, monkeypatch)
    assert set(lines(ours[0])) == set(lines(theirs[0]))  # the episodes differ in number
    for library, (printed, (space,)) in (("torch", theirs), ("tricycle", ours)):
        assert "Solved!" in printed, (library, printed)  # the running reward went 10 -> 15
        assert space["env"].episodes < space["env"].max_episodes
        averages = numbers(r"Average reward: ([\d.]+)", printed)
        assert averages[-1] > averages[0] + 3, (library, averages)  # every 10 episodes
        assert space["policy"].rewards == [] and space["policy"].saved_log_probs == []


@pytest.mark.usefixtures("world_of_one")
def test_ddp_example(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")  # torchrun's, which example.py reads too
    theirs, ours = both({"example.py": DDP_EXAMPLE}, ["example.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, (space,)) in (("torch", theirs), ("tricycle", ours)):
        few = pytest.importorskip(library).cuda.device_count() < 2  # a CPU machine, one GPU
        assert ("Unable to locate sufficient 2 gpus" in printed) == few, library
        assert "world_size = 1, rank = 0, backend=gloo" in printed, library
        assert "training completed in rank 0!" in printed, library
        step = space["step"]  # one SGD step (lr 0.001) of the gradient DDP averaged over one rank
        sizes = [p.size for p in step["grads"]]  # tricycle's Linear: weights (in, out)
        assert sizes == [p.size for p in theirs[1][0]["step"]["grads"]] == [100, 10, 50, 5]
        for before, grad, after in zip(step["before"], step["grads"], step["after"]):
            np.testing.assert_allclose(after, before - 0.001 * grad, rtol=1e-6, atol=1e-8)
        assert step["new_loss"] < step["loss"], (library, step["loss"], step["new_loss"])


# ---------------------------------------------------------------------- the fixes they needed
def test_tanh_and_sigmoid_are_modules_as_torchs():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    def build(nn):
        return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2), nn.Sigmoid())

    theirs, ours = build(torch.nn), build(nn)
    nn.from_torch(ours, theirs.state_dict())
    kinds = [type(m).__name__ for m in ours.modules() if not isinstance(m, nn.Linear)]  # Dense
    assert kinds == [type(m).__name__ for m in theirs.modules() if type(m).__name__ != "Linear"]
    assert len(list(ours.named_children())) == len(list(theirs.named_children())) == 4
    assert isinstance(ours[1], nn.Module) and "(sequence.3): Sigmoid()" in repr(ours)
    seen = {}  # a hook on the Tanh runs, as torch's
    for model, key in ((theirs, "torch"), (ours, "tricycle")):
        model[1].register_forward_hook(lambda m, args, out, key=key: seen.update({key: out}))
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    their_x, our_x = torch.tensor(x, requires_grad=True), tricycle.tensor(x, requires_grad=True)
    their_y, our_y = theirs(their_x), ours(our_x)
    np.testing.assert_allclose(our_y.numpy(), their_y.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(seen["tricycle"].numpy(), seen["torch"].detach().numpy(),
                               rtol=1e-5, atol=1e-7)  # fmt: skip
    (their_y**2).sum().backward()
    (our_y**2).sum().backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours[0].weights.grad.numpy(), theirs[0].weight.grad.numpy().T,
                               rtol=1e-5, atol=1e-7)  # fmt: skip


def test_tensor_device_flags_as_torchs():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    ours, theirs = tricycle.ones(2), torch.ones(2)
    for flag in ("is_cpu", "is_cuda", "is_xpu", "is_mps"):
        assert getattr(ours, flag) is getattr(theirs, flag), flag


def test_backends_cudnn_switches_as_torchs_without_cudnn(monkeypatch):
    torch = pytest.importorskip("torch")
    import tricycle.backends.cudnn as cudnn  # noqa: PLC0415

    for switch in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cudnn, switch) == getattr(torch.backends.cudnn, switch), switch
    assert cudnn.is_available() is False and cudnn.version() is None
    if not torch.backends.cudnn.is_available():  # a machine without cuDNN, as tricycle is
        assert cudnn.benchmark_limit == torch.backends.cudnn.benchmark_limit
    monkeypatch.setattr(cudnn, "benchmark", True)  # a script's `cudnn.benchmark = True`
    import tricycle  # noqa: PLC0415

    assert tricycle.backends.cudnn.benchmark is True


def test_torchs_bias_on_a_norm_names_its_tensors():
    import tricycle.nn as nn  # noqa: PLC0415

    with pytest.raises(AttributeError, match=r"^BatchNorm2d has no 'bias' \(torch's name\); its "
                       r"tensors are gamma \(4,\), beta \(4,\), running_mean \(4,\), "
                       r"running_var \(4,\): .* and bias are gamma and beta$"):  # fmt: skip
        _ = nn.BatchNorm2d(4).bias  # dcgan's weights_init: torch.nn.init.zeros_(m.bias)
    assert nn.Conv2d(1, 2, 3, bias=False).bias is None and nn.Linear(2, 3).bias.shape == (3,)
    assert getattr(nn.ReLU(), "bias", None) is None and not hasattr(nn.LayerNorm(3), "bias")
