"""A check for two GPUs under NCCL (not a timing): ``nn.SyncBatchNorm`` on each rank's half of
a batch against ``BatchNorm2d`` on the whole batch, and ``ZeroRedundancyOptimizer(AdamW)``
under DDP against one AdamW on the whole batch on the host, in float64; rank 0 prints the
largest differences. Without a GPU it runs the same on the host (gloo), a dry run.

    tricycle-run -n 2 benchmarks/two_gpus_check.py
"""

import numpy as np

import tricycle
import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle.distributed.optim import ZeroRedundancyOptimizer
from tricycle.tensor import Tensor

GPU = tricycle.cuda.is_available()
dist.init_process_group("nccl" if GPU else "gloo")
rank, dev = dist.get_rank(), dist.get_node_local_rank()


def gpu(t):
    """``t`` on this rank's GPU (where there is one: the host otherwise, for a dry run)."""
    return t.to_gpu(dev) if GPU else t


rng = np.random.default_rng(0)
x = rng.normal(size=(8, 3, 5, 5))
w = rng.normal(size=(8, 3, 5, 5))
rows = slice(4 * rank, 4 * rank + 4)
diffs = {}

# SyncBatchNorm: this rank's half on its GPU, in float64
bn = gpu(nn.SyncBatchNorm(3).to(tricycle.float64))
xs = gpu(Tensor(x[rows], requires_grad=True))
y = bn(xs)
(y * gpu(Tensor(w[rows]))).sum().backward()
ref = nn.BatchNorm2d(3).to(tricycle.float64)
xr = Tensor(x, requires_grad=True)
yr = ref(xr)
(yr * Tensor(w)).sum().backward()
diffs["sync_bn y"] = np.abs(y.numpy() - yr.numpy()[rows]).max()
diffs["sync_bn dx"] = np.abs(xs.grad.numpy() - xr.grad.numpy()[rows]).max()
diffs["sync_bn running_var"] = np.abs(bn.running_var.numpy() - ref.running_var.numpy()).max()


# ZeRO AdamW under DDP, each rank its half on its GPU, against one AdamW on the host
def model():
    tricycle.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)).to(tricycle.float64)


a = rng.normal(size=(8, 6))
b = a @ rng.normal(size=(6, 1))
ddp = dist.DistributedDataParallel(gpu(model()), device_ids=[dev] if GPU else None)
zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=optim.AdamW, lr=1e-2)
alone = model()
plain = optim.AdamW(alone.parameters(), lr=1e-2)
for _ in range(3):
    loss = nn.MSELoss()(ddp(gpu(Tensor(a[rows]))), gpu(Tensor(b[rows])))
    zero.zero_grad()
    loss.backward()
    zero.step()
    loss = nn.MSELoss()(alone(Tensor(a)), Tensor(b))
    plain.zero_grad()
    loss.backward()
    plain.step()
for (name, p), q in zip(ddp.module.named_parameters(), alone.parameters()):
    diffs[f"zero {name}"] = np.abs(p.numpy() - q.numpy()).max()
held = sum(p.numel() for p in zero.optim.state)
zero.consolidate_state_dict(to=0)
if rank == 0:
    whole, ours = plain.state_dict()["state"], zero.state_dict()["state"]
    diffs["zero state exp_avg_sq"] = max(
        np.abs(np.asarray(ours[i]["exp_avg_sq"]) - whole[i]["exp_avg_sq"]).max() for i in whole
    )
everything = [None, None]
dist.all_gather_object(everything, {"rank": rank, "held": held, "diffs": diffs,
                                    "device": str(xs.device)})  # fmt: skip
if rank == 0:
    for seen in everything:
        print(f"rank {seen['rank']} on {seen['device']}: state for {seen['held']} elements")
        for name, value in seen["diffs"].items():
            print(f"  {name}: max |difference| {value:.3g}")
dist.destroy_process_group()
