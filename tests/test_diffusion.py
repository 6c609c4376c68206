"""DDPM: the noise schedules against their closed forms, the forward process, the samplers
on data whose ideal noise predictor is known exactly, and the U-Net's residual block, the
U-Net and the DDPM loss against PyTorch twins with copied weights, the same noise and the
same steps."""

import math

import numpy as np
import pytest

from tests.helpers import check_grads, same_on_host_and
from tricycle.nn.diffusion import (
    NoiseSchedule,
    ancestral_sample,
    cosine_betas,
    ddim_sample,
    ddim_timesteps,
    ddpm_loss,
    linear_betas,
    q_sample,
    timestep_embedding,
)
from tricycle.nn.unet import ResidualBlock, UNet
from tricycle.tensor import Tensor, to_tensor


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# ====================================================================== schedules


def test_linear_schedule_is_ddpms():
    betas = linear_betas(1000)
    assert betas[0] == pytest.approx(1e-4) and betas[-1] == pytest.approx(0.02)
    np.testing.assert_allclose(np.diff(betas), (0.02 - 1e-4) / 999)
    np.testing.assert_allclose(linear_betas(250), np.linspace(4e-4, 0.08, 250))  # scaled
    np.testing.assert_allclose(linear_betas(10, 0.1, 0.2), np.linspace(0.1, 0.2, 10))


@pytest.mark.parametrize("T", [1, 7, 1000])
def test_cosine_schedule_alpha_bars_follow_the_squared_cosine(T):
    schedule = NoiseSchedule.cosine(T)
    s = 0.008
    f = np.cos((np.arange(T + 1) / T + s) / (1 + s) * math.pi / 2) ** 2
    uncapped = cosine_betas(T) < 0.999
    np.testing.assert_allclose(schedule.alpha_bars[uncapped], (f[1:] / f[0])[uncapped], rtol=1e-10)
    np.testing.assert_allclose(schedule.alphas, 1 - schedule.betas)
    np.testing.assert_allclose(schedule.alpha_bars, np.cumprod(1 - schedule.betas))
    assert schedule.T == T and np.all(schedule.betas <= 0.999)
    assert np.all(np.diff(schedule.alpha_bars) < 0)  # more noise at every step


def test_schedule_errors():
    with pytest.raises(ValueError, match="betas"):
        NoiseSchedule([0.1, 1.0])
    with pytest.raises(ValueError, match="beta_start <= beta_end"):
        linear_betas(10, 0.2, 0.1)
    with pytest.raises(ValueError, match="exceeds"):
        ddim_timesteps(10, 11)


def test_ddim_timesteps_span_the_schedule():
    assert ddim_timesteps(1000, 1000).tolist() == list(range(1000))
    steps = ddim_timesteps(1000, 50)
    assert len(steps) == 50 and steps[0] == 0 and steps[-1] == 999
    assert np.all(np.diff(steps) > 0)


# ====================================================================== forward process


def test_q_sample_is_the_closed_form():
    schedule = NoiseSchedule.linear(100)
    x0, noise, t = randn(4, 1, 3, 3), randn(4, 1, 3, 3, seed=1), np.array([0, 5, 99, 42])
    x_t = q_sample(schedule, Tensor(x0), t, Tensor(noise))
    ab = schedule.alpha_bars[t][:, None, None, None]
    np.testing.assert_allclose(x_t.array, np.sqrt(ab) * x0 + np.sqrt(1 - ab) * noise)
    assert x_t.dtype == np.float64


def test_timestep_embedding_is_sines_then_cosines():
    t = np.array([0, 1, 17, 999])
    embedding = timestep_embedding(t, 8).array
    w = 10_000.0 ** (-np.arange(4) / 4)
    expected = np.concatenate([np.sin(t[:, None] * w), np.cos(t[:, None] * w)], axis=1)
    np.testing.assert_allclose(embedding, expected, rtol=1e-5, atol=1e-4)
    odd = timestep_embedding(t, 9).array
    assert odd.shape == (4, 9) and np.all(odd[:, -1] == 0)
    assert not timestep_embedding(t, 8).requires_grad


# ====================================================================== samplers


def _gaussian_data_model(schedule, mu, s):
    """The exact noise predictor for data x_0 ~ N(mu, s^2): x_t ~ N(sqrt(ab) mu, v) with
    v = ab s^2 + 1 - ab, and E[eps | x_t] = sqrt(1 - ab) (x_t - sqrt(ab) mu) / v."""

    def model(x, t):
        ab = schedule.alpha_bars[t][:, None, None, None]
        v = ab * s**2 + 1 - ab
        return Tensor(np.sqrt(1 - ab) * (x.array - np.sqrt(ab) * mu) / v)

    return model


@pytest.mark.parametrize(
    "sampler", [ancestral_sample, lambda *a, **k: ddim_sample(*a, steps=100, **k)],
    ids=["ancestral", "ddim"],
)  # fmt: skip
def test_samplers_draw_the_data_distribution_given_the_ideal_model(sampler):
    """With the exact noise predictor of Gaussian data, both samplers reproduce the data's
    mean and spread. (DDIM's first-order steps shrink the spread a little, more so with
    fewer steps: 2% with all 100 here.)"""
    from tricycle import random

    random.manual_seed(0)
    schedule = NoiseSchedule.cosine(100)
    mu, s = 0.3, 0.5
    x = sampler(_gaussian_data_model(schedule, mu, s), schedule, (4000, 1, 1, 1), clip=None)
    assert x.dtype == np.float32 and x.shape == (4000, 1, 1, 1)
    assert abs(x.mean() - mu) < 0.03 and abs(x.std() - s) < 0.03


def test_samplers_return_the_single_data_point_and_are_seeded():
    """Data that is one point x*: every x_0 estimate is x*, so both samplers end on it."""
    from tricycle import random

    schedule = NoiseSchedule.linear(50)
    point = np.array([0.5, -0.25])[None, :, None, None]

    def model(x, t):
        ab = schedule.alpha_bars[t][:, None, None, None]
        return Tensor((x.array - np.sqrt(ab) * point) / np.sqrt(1 - ab))

    for sampler in (ancestral_sample, ddim_sample):
        random.manual_seed(1)
        first = sampler(model, schedule, (3, 2, 1, 1))
        np.testing.assert_allclose(first, np.broadcast_to(point, first.shape), atol=1e-5)
    random.manual_seed(1)
    a = ddim_sample(model, schedule, (3, 2, 1, 1), eta=1.0)
    random.manual_seed(1)
    np.testing.assert_array_equal(a, ddim_sample(model, schedule, (3, 2, 1, 1), eta=1.0))


# ====================================================================== U-Net


def test_residual_block_gradients_match_finite_differences():
    """With respect to its input and the step's embedding, in float64."""
    block = ResidualBlock(4, 6, time_dim=5, num_groups=2)
    for p in block.parameters():
        p.array = p.array.astype(np.float64)
    check_grads(lambda x, e: block(x, e), randn(2, 4, 3, 1), randn(2, 5, seed=1), rtol=1e-4)


def test_unet_output_shape_and_errors():
    model = UNet(in_channels=2, channels=(8, 16, 16), num_groups=4)
    x = to_tensor(randn(3, 2, 8, 4, dtype=np.float32))
    assert model(x, np.array([0, 5, 9])).shape == (3, 2, 8, 4)
    with pytest.raises(ValueError, match="divisible by 4"):
        model(to_tensor(randn(1, 2, 6, 8)), np.array([0]))


torch_twins = """
import torch
from torch import nn
from torch.nn import functional as F


def embedding(t, dim):
    half = dim // 2
    w = torch.exp(-math.log(10_000.0) * torch.arange(half, dtype=torch.float64) / half)
    angles = t.double()[:, None] * w[None]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class TorchResidualBlock(nn.Module):
    def __init__(self, c_in, c_out, time_dim, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.time_projection = nn.Linear(time_dim, c_out)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, x, time):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_projection(F.silu(time))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (x if self.skip is None else self.skip(x)) + h


class TorchUNet(nn.Module):
    def __init__(self, c_in, channels, groups):
        super().__init__()
        time_dim = 4 * channels[0]
        self.channels = channels
        self.time_mlp = nn.Sequential(
            nn.Linear(channels[0], time_dim), nn.SiLU(), nn.Linear(time_dim, time_dim)
        )
        self.conv_in = nn.Conv2d(c_in, channels[0], 3, padding=1)
        previous = (channels[0],) + channels[:-1]
        block = lambda a, b: TorchResidualBlock(a, b, time_dim, groups)
        self.down = nn.ModuleList([block(a, b) for a, b in zip(previous, channels)])
        self.downsample = nn.ModuleList(
            [nn.Conv2d(c, c, 3, stride=2, padding=1) for c in channels[:-1]]
        )
        self.middle = block(channels[-1], channels[-1])
        below = channels[1:] + (channels[-1],)
        self.up = nn.ModuleList([block(b + c, c) for b, c in zip(below, channels)])
        self.norm_out = nn.GroupNorm(groups, channels[0])
        self.conv_out = nn.Conv2d(channels[0], c_in, 3, padding=1)

    def forward(self, x, t):
        time = self.time_mlp(embedding(t, self.channels[0]))
        h, skips = self.conv_in(x), []
        for level in range(len(self.channels)):
            h = self.down[level](h, time)
            skips.append(h)
            if level < len(self.channels) - 1:
                h = self.downsample[level](h)
        h = self.middle(h, time)
        for level in reversed(range(len(self.channels))):
            h = self.up[level](torch.cat([h, skips[level]], dim=1), time)
            if level > 0:
                h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        return self.conv_out(F.silu(self.norm_out(h)))
"""


def _twins():
    """The torch twins, defined once torch is known to be importable."""
    pytest.importorskip("torch")
    namespace = {"math": math}
    exec(torch_twins, namespace)  # noqa: S102 - test code, kept beside the tests it serves
    return namespace


_TORCH_SUFFIXES = {"weights": "weight", "gamma": "weight", "beta": "bias"}


def _torch_name(name: str) -> str:
    name = name.replace(".sequence.", ".")
    prefix, _, last = name.rpartition(".")
    return f"{prefix}.{_TORCH_SUFFIXES.get(last, last)}"


def _copy_weights(ours, theirs):
    """Our parameters into the twin, as float64 on both sides; Dense weights transposed."""
    import torch

    theirs.double()
    params = dict(theirs.named_parameters())
    assert len(params) == len(ours.parameters())
    with torch.no_grad():
        for name, p in ours.named_parameters():
            p.array = p.array.astype(np.float64)
            value = p.array.T if p.ndim == 2 else p.array
            params[_torch_name(name)].copy_(torch.tensor(np.ascontiguousarray(value)))
    return params


def _compare_grads(ours, params):
    for name, p in ours.named_parameters():
        expected = params[_torch_name(name)].grad.numpy()
        expected = expected.T if p.ndim == 2 else expected
        np.testing.assert_allclose(p.grad.array, expected, rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("c_in, c_out", [(4, 6), (6, 6)])
def test_residual_block_matches_pytorch(c_in, c_out):
    torch = pytest.importorskip("torch")

    twins = _twins()
    ours = ResidualBlock(c_in, c_out, time_dim=5, num_groups=2)
    theirs = twins["TorchResidualBlock"](c_in, c_out, 5, 2)
    params = _copy_weights(ours, theirs)
    x, time = randn(3, c_in, 5, 3), randn(3, 5, seed=1)
    tx, ttime = torch.tensor(x, requires_grad=True), torch.tensor(time, requires_grad=True)
    expected = theirs(tx, ttime)
    dout = randn(*expected.shape, seed=2)
    expected.backward(torch.tensor(dout))

    X, E = Tensor(x), Tensor(time)
    out = ours(X, E)
    out.backward(dout)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(E.grad.array, ttime.grad.numpy(), rtol=1e-8, atol=1e-10)
    _compare_grads(ours, params)


def test_ddpm_loss_through_the_unet_matches_pytorch():
    """The loss mean((eps - model(x_t, t))^2) and every gradient, with the same x_0, steps
    and noise on both sides, through the whole U-Net (two levels, nearest upsampling)."""
    torch = pytest.importorskip("torch")

    twins = _twins()
    schedule = NoiseSchedule.cosine(50)
    ours = UNet(in_channels=1, channels=(4, 8), num_groups=2)
    theirs = twins["TorchUNet"](1, (4, 8), 2)
    params = _copy_weights(ours, theirs)
    x0, noise, t = randn(3, 1, 4, 6), randn(3, 1, 4, 6, seed=1), np.array([0, 17, 49])

    loss = ddpm_loss(ours, schedule, Tensor(x0, requires_grad=False), t, Tensor(noise))
    loss.backward()

    ab = torch.tensor(schedule.alpha_bars[t])[:, None, None, None]
    x_t = ab.sqrt() * torch.tensor(x0) + (1 - ab).sqrt() * torch.tensor(noise)
    expected = torch.nn.functional.mse_loss(theirs(x_t, torch.tensor(t)), torch.tensor(noise))
    expected.backward()
    np.testing.assert_allclose(loss.array, expected.item(), rtol=1e-10)
    _compare_grads(ours, params)


def test_ddpm_loss_draws_steps_and_noise_from_the_seed():
    from tricycle import random

    model = UNet(in_channels=1, channels=(4,), num_groups=2)
    schedule, x0 = NoiseSchedule.linear(20), to_tensor(randn(2, 1, 4, 4, dtype=np.float32))
    losses = []
    for _ in range(2):
        random.manual_seed(3)
        losses.append(float(ddpm_loss(model, schedule, x0)))
    assert losses[0] == losses[1] and losses[0] > 0


def test_the_example_runs_and_repeats_its_numbers(tmp_path):
    """examples/diffusion_digits.py, a few steps of everything: the PNG is written and a
    second run with the same seed prints the same numbers."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    example = pytest.importorskip("examples.diffusion_digits")
    tiny = ["--steps", "3", "--samples", "9", "--sample-steps", "2", "--channels", "8,16"]
    tiny += ["--batch-size", "16", "--classifier-epochs", "1"]
    results = [example.main(tiny + ["--out", str(tmp_path / f"{k}.png")]) for k in range(2)]
    assert (tmp_path / "0.png").stat().st_size > 0
    for key in ("samples", "shares", "confident", "accuracy"):
        np.testing.assert_array_equal(results[0][key], results[1][key])
    assert results[0]["shares"].sum() == pytest.approx(1.0)
    ancestral = ["--sampler", "ancestral", "--timesteps", "4", "--out", str(tmp_path / "a.png")]
    assert example.main(tiny + ancestral)["samples"].shape == (9, 8, 8)


def test_the_unet_and_its_loss_agree_on_every_backend(xp):
    """The loss and every gradient on the host and on ``xp``'s device (a GPU when present);
    on the host, in float32, the PyTorch twin's in float64."""
    model = UNet(in_channels=1, channels=(8, 16), num_groups=4)
    schedule, t = NoiseSchedule.cosine(20), np.array([0, 3, 10, 19])
    x0, noise = randn(4, 1, 8, 8, dtype=np.float32), randn(4, 1, 8, 8, seed=1, dtype=np.float32)

    def run(array_module):
        x0_, noise_ = (Tensor(array_module.asarray(a), requires_grad=False) for a in (x0, noise))
        loss = ddpm_loss(model, schedule, x0_, t, noise_)
        loss.backward()
        return loss

    if xp is not np:
        same_on_host_and(xp, model, run, rtol=1e-4, atol=1e-5)
        return
    # the host against itself would compare nothing: the twin's numbers instead
    torch = pytest.importorskip("torch")
    loss = run(np)
    grads = {name: p.grad.array for name, p in model.named_parameters()}  # float32
    theirs = _twins()["TorchUNet"](1, (8, 16), 4)
    params = _copy_weights(model, theirs)  # float64 on both sides (ours: after its run)
    x0_, noise_ = (torch.tensor(a, dtype=torch.float64) for a in (x0, noise))
    ab = torch.tensor(schedule.alpha_bars[t])[:, None, None, None]
    x_t = ab.sqrt() * x0_ + (1 - ab).sqrt() * noise_  # (4, 1, 8, 8)
    expected = torch.nn.functional.mse_loss(theirs(x_t, torch.tensor(t)), noise_)
    expected.backward()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)  # float32 against float64
    for name, grad in grads.items():
        their_grad = params[_torch_name(name)].grad.numpy()
        their_grad = their_grad.T if grad.ndim == 2 else their_grad
        np.testing.assert_allclose(grad, their_grad, rtol=1e-4, atol=1e-6, err_msg=name)


def test_samplers_run_where_the_model_is(xp):
    """DDIM and ancestral sampling with the model on ``xp``'s device (a GPU) draw the samples
    they draw on the host, from the same seed."""
    from tricycle import backend, random

    if xp is np:
        pytest.skip("the host against itself: the GPU case compares")
    model = UNet(in_channels=1, channels=(8,), num_groups=4)
    schedule = NoiseSchedule.cosine(10)
    results = []
    for device in ("host", "device"):
        if device == "device" and xp is not np:
            model.to_gpu()
        random.manual_seed(0)
        ddim = ddim_sample(model, schedule, (2, 1, 4, 4), steps=3, eta=0.5)
        ancestral = ancestral_sample(model, schedule, (2, 1, 4, 4))
        results.append([backend.to_host_array(a) for a in (ddim, ancestral)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
