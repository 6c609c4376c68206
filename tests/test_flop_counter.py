"""``tricycle.utils.flop_counter`` against ``torch.utils.flop_counter``: the same models
(an MLP, a conv net, an attention block, a small GPT) with the same shapes, counted forward
and forward + backward, give torch's totals and per-module, per-op counts.

torch's CPU attention kernel (``_scaled_dot_product_flash_attention_for_cpu``) has no formula
in torch's registry, so torch counts nothing for it on a CPU; the torch side is given torch's
own sdpa formulas for it (``custom_mapping``), which are what torch counts for its GPU
kernels and what tricycle counts on every device. tricycle's einsum-based linear layers are
named as torch's (``aten.addmm`` with a bias, ``aten.mm`` without); a ``Sequential``'s layers
are ``sequence.N`` in tricycle's module names.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import tricycle
from tricycle import backend
from tricycle.utils.flop_counter import FlopCounterMode, register_flop_formula

torch = pytest.importorskip("torch")
from torch.utils import flop_counter as torch_flop_counter  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

aten = torch.ops.aten
CPU_SDPA = {  # torch's CPU kernels, given the formulas torch counts its GPU kernels with
    aten._scaled_dot_product_flash_attention_for_cpu: (
        lambda q, k, v, *args, out_shape=None, **kwargs: torch_flop_counter.sdpa_flop_count(q, k, v)
    ),
    aten._scaled_dot_product_flash_attention_for_cpu_backward: (
        lambda g, q, k, v, *args, out_shape=None, **kwargs: (
            torch_flop_counter.sdpa_backward_flop_count(g, q, k, v)
        )
    ),
}
OUR_NAMES = {  # torch's CPU attention keys -> the (GPU) names tricycle counts under
    "aten._scaled_dot_product_flash_attention_for_cpu": "aten._scaled_dot_product_flash_attention",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward": (
        "aten._scaled_dot_product_flash_attention_backward"
    ),
}


def torch_counts(model, run, backward: bool, root=None) -> dict:
    """torch's {module: {op: FLOPs}} of ``run(model)`` (and its backward), op names as str."""
    with torch_flop_counter.FlopCounterMode(display=False, custom_mapping=CPU_SDPA) as counter:
        out = run(model)
        if backward:
            out.sum().backward()
    counts = {}
    for module, ops in counter.get_flop_counts().items():
        if root is not None:
            module = module.replace(type(model).__name__, root, 1)
        counts[module] = {OUR_NAMES.get(str(op), str(op)): n for op, n in ops.items()}
    return counts


def our_counts(model, run, backward: bool) -> dict:
    with FlopCounterMode(display=False) as counter:
        out = run(model)
        if backward:
            out.sum().backward()
    counts = counter.get_flop_counts()
    assert counter.get_total_flops() == sum(counts["Global"].values())
    return counts


def both(make, run_torch, run_ours, root=None, unseen=()):
    """For forward alone and forward + backward: the counts of each side, asserted equal
    (with torch's modules ``unseen`` left out)."""
    for backward in (False, True):
        theirs = torch_counts(make(torch), run_torch, backward, root)
        theirs = {k: v for k, v in theirs.items() if not k.endswith(unseen)}
        ours = our_counts(make(tricycle), run_ours, backward)
        assert ours == theirs, f"backward={backward}"
        assert sum(ours["Global"].values()) > 0
    return ours


def mlp_class(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(6, 16)
            self.act = nn.ReLU()
            self.down = nn.Linear(16, 3, bias=False)

        def forward(self, x):
            return self.down(self.act(self.up(x)))

    return MLP()


def test_an_mlp_as_torchs():
    x = np.random.default_rng(0).normal(size=(4, 5, 6)).astype(np.float32)
    ours = both(mlp_class, lambda m: m(torch.tensor(x)), lambda m: m(tricycle.tensor(x)))
    assert ours["MLP.up"] == {"aten.addmm": 2 * 20 * 6 * 16, "aten.mm": 2 * 20 * 6 * 16}
    assert ours["MLP.down"] == {"aten.mm": 3 * 2 * 20 * 16 * 3}  # forward, dx, dW
    with tricycle.no_grad():  # inference counts too, as torch's
        forward = our_counts(mlp_class(tricycle), lambda m: m(tricycle.tensor(x)), False)
    assert forward == torch_counts(mlp_class(torch), lambda m: m(torch.tensor(x)), False)


def conv_class(lib):
    nn = lib.nn

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1, stride=2)
            self.grouped = nn.Conv2d(4, 4, 3, groups=2, bias=False)
            self.up = nn.ConvTranspose2d(4, 2, 2, stride=2)
            self.head = nn.Linear(2 * 4 * 4, 5)

        def forward(self, x):
            h = self.up(self.grouped(self.conv(x).relu()))
            return self.head(h.flatten(1))

    return ConvNet()


def test_a_conv_net_with_transposed_and_grouped_convolutions_as_torchs():
    x = np.random.default_rng(1).normal(size=(2, 3, 8, 8)).astype(np.float32)
    ours = both(conv_class, lambda m: m(torch.tensor(x)), lambda m: m(tricycle.tensor(x)))
    assert set(ours["ConvNet.conv"]) == {"aten.convolution", "aten.convolution_backward"}
    # the first convolution's input needs no gradient: its backward is the weights' alone
    assert (
        ours["ConvNet.conv"]["aten.convolution_backward"]
        == ours["ConvNet.conv"]["aten.convolution"]
    )


def attention_class(lib):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
            self.out = nn.Linear(8, 8)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(x).split(8, dim=-1)
            q, k, v = (t.reshape(B, T, 2, 4).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            scores = q @ k.transpose(-2, -1)  # and a product written out: bmm
            return self.out(y.transpose(1, 2).reshape(B, T, 8)) + scores.mean()

    return Attention()


def test_an_attention_block_as_torchs():
    x = np.random.default_rng(2).normal(size=(3, 5, 8)).astype(np.float32)
    ours = both(attention_class, lambda m: m(torch.tensor(x)), lambda m: m(tricycle.tensor(x)))
    q = (3, 2, 5, 4)
    assert ours["Attention"]["aten._scaled_dot_product_flash_attention"] == (
        torch_flop_counter.sdpa_flop_count(q, q, q)
    )
    assert ours["Attention"]["aten.bmm"] == 3 * 2 * 3 * 2 * 5 * 5 * 4  # forward, dq, dk


def test_a_small_gpt_as_torchs(monkeypatch):
    import torch_reference

    from tricycle.configs import GPTConfig
    from tricycle.models import GPT

    def sdpa_attention(qkv, n_heads):  # the torch twin's attention, through torch's sdpa
        B, T, three_e = qkv.shape
        q, k, v = (t.view(B, T, n_heads, -1).transpose(1, 2) for t in qkv.split(three_e // 3, -1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, three_e // 3)

    monkeypatch.setattr(torch_reference, "causal_attention", sdpa_attention)
    config = GPTConfig(
        embedding_dim=16, context_window=8, vocab_size=32, n_heads=2, n_layers=2,
        tie_weights=False,
    )  # fmt: skip
    tokens = np.random.default_rng(3).integers(0, 32, size=(2, 8))

    def make(lib):
        return torch_reference.TorchGPT(config) if lib is torch else GPT(config)

    # tricycle's MLPBlock adds up_projection's bias inside GELU (``dense_gelu``), calling its
    # product, not the layer: its FLOPs count under the block's mlp, not mlp.up_projection
    unseen = ("mlp.up_projection",)
    ours = both(make, lambda m: m(torch.tensor(tokens)), lambda m: m(tokens), "GPT", unseen)
    assert "GPT.blocks.1.attention.qkv_projection" in ours
    assert "GPT.blocks.0.mlp" in ours and "GPT.head" in ours


def test_products_and_einsum_as_torchs():
    rng = np.random.default_rng(4)
    a, b, c = (rng.normal(size=s).astype(np.float32) for s in ((3, 4, 5), (3, 5, 2), (3, 4, 2)))
    m, n = rng.normal(size=(4, 5)).astype(np.float32), rng.normal(size=(5, 6)).astype(np.float32)

    def run(lib, counter_class, **kwargs):
        t = lambda x: lib.tensor(x, requires_grad=True)  # noqa: E731
        with counter_class(display=False, **kwargs) as counter:
            outs = [
                lib.bmm(t(a), t(b)),
                lib.baddbmm(t(c), t(a), t(b)),
                lib.mm(t(m), t(n)),
                lib.addmm(t(np.ones(6, np.float32)), t(m), t(n)),
                t(a) @ t(b),
                t(m) @ t(n[:, 0]),  # a matrix-vector product: not counted
                lib.einsum("bij,bjk->bik", t(a), t(b)),
            ]
            sum(o.sum() for o in outs).backward()
        return counter.get_total_flops(), {
            str(k): v for k, v in counter.get_flop_counts()["Global"].items()
        }

    theirs, ours = run(torch, torch_flop_counter.FlopCounterMode), run(tricycle, FlopCounterMode)
    assert ours[0] == theirs[0] > 0
    # tricycle's addmm and baddbmm are a product and an add: counted as mm and bmm
    assert ours[1] == {
        "aten.bmm": theirs[1]["aten.bmm"] + theirs[1]["aten.baddbmm"],
        "aten.mm": theirs[1]["aten.mm"] + theirs[1]["aten.addmm"],
    }


def test_a_second_derivative_counts_its_products_as_torchs():
    rng = np.random.default_rng(7)
    x, w1, w2 = (rng.normal(size=s).astype(np.float32) for s in ((4, 6), (6, 8), (8, 3)))

    def run(lib, counter_class):
        a, b = lib.tensor(w1, requires_grad=True), lib.tensor(w2, requires_grad=True)
        with counter_class(display=False) as counter:
            loss = (lib.tanh(lib.tensor(x) @ a) @ b).pow(2).sum()
            (g,) = lib.autograd.grad(loss, a, create_graph=True)
            g.pow(2).sum().backward()
        return {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}

    ours = run(tricycle, FlopCounterMode)
    assert ours == run(torch, torch_flop_counter.FlopCounterMode)
    assert ours["aten.mm"] > 3 * 2 * 4 * 6 * 8


def test_register_flop_formula_and_custom_mapping():
    from tricycle.tensor import Tensor

    def scaled(x):  # a user's op: twice x, named "flop_test_scale"
        return Tensor(x.array * 2, args=(x,), back_fns=(lambda g: g * 2,), name="flop_test_scale")

    @register_flop_formula("flop_test_scale")
    def scale_flop(x_shape, out_shape=None):
        return int(np.prod(x_shape))

    @register_flop_formula(["flop_test_scale_backward"], get_raw=True)
    def scale_backward_flop(grad, x, out_val=None):
        return 2 * x.size

    x = tricycle.randn(3, 4, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        scaled(x).sum().backward()
    assert counter.get_flop_counts()["Global"] == {
        "flop_test_scale": 12, "flop_test_scale_backward": 24,
    }  # fmt: skip
    with pytest.raises(RuntimeError, match="duplicate registrations for flop_test_scale"):
        register_flop_formula("flop_test_scale")(scale_flop)
    with pytest.raises(ValueError, match="expected each target to be an op name"):
        register_flop_formula(3)
    mapping = {"matmul": lambda a, b, out_shape: 7}  # this counter's own, over the built-in
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        tricycle.randn(2, 3) @ tricycle.randn(3, 2)
    assert counter.get_flop_counts() == {"Global": {"matmul": 7}}


def test_the_table_is_torchs_and_printed_on_exit(capsys):
    pytest.importorskip("tabulate")  # torch's table needs it
    x = np.random.default_rng(5).normal(size=(4, 6)).astype(np.float32)
    with torch_flop_counter.FlopCounterMode(depth=1) as theirs:
        mlp_class(torch)(torch.tensor(x)).sum().backward()
    with FlopCounterMode(depth=1) as ours:
        mlp_class(tricycle)(tricycle.tensor(x)).sum().backward()
    assert ours.get_table(1) == theirs.get_table(1)
    assert ours.get_table(2) == theirs.get_table(2)
    assert ours.get_table(1) in capsys.readouterr().out
    with FlopCounterMode(display=False) as empty:
        pass
    assert (
        empty.get_table()
        == "Module      FLOP    % Total\n--------  ------  ---------\nGlobal         0         0%"
    )


def test_nothing_is_swapped_in_outside_a_counter_and_it_nests_with_the_profiler():
    from tricycle import backprop
    from tricycle.graph import Node
    from tricycle.profiler import profile

    init, walk = Node.__init__, backprop._walk
    x = tricycle.randn(4, 5, requires_grad=True)
    w = tricycle.randn(5, 3, requires_grad=True)
    for outer_is_profile in (True, False):
        with FlopCounterMode(display=False) as counter, profile():
            (x @ w).sum().backward()
        assert counter.get_total_flops() == 3 * 2 * 4 * 5 * 3
        if outer_is_profile:
            with profile(), FlopCounterMode(display=False) as counter:
                (x @ w).sum().backward()
            assert counter.get_total_flops() == 3 * 2 * 4 * 5 * 3
    assert (Node.__init__, backprop._walk) == (init, walk)
    with FlopCounterMode(display=False):
        with pytest.raises(RuntimeError, match="already counting"):
            FlopCounterMode().__enter__()
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        FlopCounterMode(mods=mlp_class(tricycle))


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_counts_on_a_gpu_equal_the_hosts():
    x = np.random.default_rng(6).normal(size=(2, 3, 8, 8)).astype(np.float32)
    counts = []
    for device in ("cpu", "cuda"):
        tricycle.manual_seed(0)
        model = conv_class(tricycle).to(device)
        counts.append(our_counts(model, lambda m: m(tricycle.tensor(x, device=device)), True))
    assert counts[0] == counts[1]
