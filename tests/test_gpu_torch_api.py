"""This sitting's torch API on a GPU against the host: the same computation on numpy and on
cupy arrays gives the same outputs and the same gradients (of the inputs and of the
parameters), within float32's tolerances (the GPU's kernels and cuBLAS sum in other orders).

Each test runs one feature twice through ``parity``: on the host, then with its inputs (and
its layer) on GPU 0, every output checked to be on the device it was computed on; then
each floating output is differentiated with the same fixed weights (``autograd.backward``).
What is covered is what breaks on cupy first: index arrays built on the host and used on
device arrays, numpy calls on device arrays, int64 ids, in-place writes (``add.at``,
masked and fancy assignment), values read back (``.item()``, lengths, quantile levels),
``xp.asarray`` of host arrays and lists, sorting with NaN, linear algebra.

Random draws: tricycle draws on the host from its own generator (``tricycle.random``) and
copies the numbers to the device, so one seed gives the same numbers on both devices: the
distributions' ``sample``/``rsample``, ``normal``, ``bernoulli``, ``randint_like``,
``Tensor.random_``/``normal_``/``exponential_`` and ``multinomial`` are compared as numbers.
Dropout on a GPU draws its masks on the device (a CUDA kernel), so the models here that
have dropout run with p = 0, and checkpointing's replay of a dropout mask is compared on the
GPU with itself.

Every test skips without cupy and a CUDA device.
"""

import copy
import math

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
import tricycle.nn.functional as F
import tricycle.optim as optim
from tricycle import autograd, backend
from tricycle.blocks import GPT2TransformerBlock
from tricycle.distributions import (
    Bernoulli,
    Categorical,
    Independent,
    MultivariateNormal,
    Normal,
    OneHotCategorical,
    Uniform,
    kl_divergence,
)
from tricycle.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)
from tricycle.tensor import Tensor
from tricycle.utils.checkpoint import checkpoint, checkpoint_sequential

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU"),
]

RTOL, ATOL = 1e-4, 1e-5  # float32 on two devices: sums in other orders


# ====================================================================== the harness
def rand(*shape, seed=0, dtype=np.float32, scale=1.0) -> np.ndarray:
    """Standard normal numbers of ``shape`` from ``seed`` (host), in ``dtype``."""
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(dtype)


def host(value) -> np.ndarray:
    """A Tensor's (or an array's) values as a host numpy array."""
    return backend.to_host_array(getattr(value, "array", value))


def leaf(array, gpu: bool) -> Tensor:
    """``array`` as a leaf on the host or on GPU 0; a floating one requires grad."""
    x = Tensor(np.array(array), requires_grad=backend.is_float(np.asarray(array).dtype))
    return x.to_gpu(0) if gpu else x


def tensors_in(value) -> list:
    """The Tensors of an output: a Tensor, or tuples, lists, named tuples of them."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_in(item)]
    return []


def run(fn, arrays, gpu: bool, layer=None, on_host=()):
    """``fn`` of the leaves of ``arrays`` on one device, from tricycle's seed 0, then the
    backward of each floating output weighed by fixed numbers: the outputs, the inputs'
    gradients and the layer's parameter gradients, as host arrays."""
    tc.manual_seed(0)
    if layer is not None:
        layer.to("cuda" if gpu else "cpu")
        layer.zero_grad()
    xs = [leaf(a, gpu) for a in arrays]
    outs = tensors_in(fn(*xs))
    assert outs, "the function returned no Tensor"
    for i, out in enumerate(outs):
        expected = gpu and i not in on_host
        assert out.on_gpu == expected, f"output {i} (shape {out.shape}) is on {out.device}"
    differentiable = [o for o in outs if o.requires_grad]
    if differentiable:  # host weights: autograd.backward moves them to the outputs' device
        weights = [rand(*o.shape, seed=7 + i, dtype=o.dtype) for i, o in enumerate(differentiable)]
        autograd.backward(differentiable, weights)
    grads = [x.grad for x in xs]
    params = [] if layer is None else [p.grad for p in layer.parameters()]
    for g in grads + params:
        assert g is None or g.on_gpu == gpu, f"a gradient is on {g.device}"
    return [host(o) for o in outs], [None if g is None else host(g) for g in grads + params]


def parity(fn, *arrays, layer=None, rtol=RTOL, atol=ATOL, on_host=()):
    """``fn(*leaves)`` on the host and on the GPU: the same outputs (dtypes and values) and
    the same gradients. ``on_host``: the indices of outputs that stay on the host (as
    torch's lengths do). Returns the host run's outputs."""
    (cpu_outs, cpu_grads), (gpu_outs, gpu_grads) = (
        run(fn, arrays, gpu, layer, on_host) for gpu in (False, True)
    )
    assert len(cpu_outs) == len(gpu_outs)
    for i, (a, b) in enumerate(zip(cpu_outs, gpu_outs)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"output {i}: {a.dtype} {b.dtype}"
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"output {i}")
    for i, (a, b) in enumerate(zip(cpu_grads, gpu_grads)):
        assert (a is None) == (b is None), f"gradient {i} on one device only"
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"gradient {i}")
    return cpu_outs


# ====================================================================== tricycle.autograd
class SinCos(autograd.Function):
    """Two differentiable outputs (the flat node's pieces) and an index (not differentiable)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x.sin() * scale, x.cos(), x.argmax(-1)

    @staticmethod
    def backward(ctx, dsin, dcos, dids):
        (x,) = ctx.saved_tensors
        return dsin * x.cos() * ctx.scale - dcos * x.sin(), None


class Square(autograd.Function):
    """One output; backward returns a raw array (the input's array module) of a broadcast
    shape, which apply sums back."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return (2 * dy * x).array[None]  # (1, *shape): summed back to x's shape


def test_function_with_two_outputs_an_index_and_a_raw_array_gradient():
    parity(lambda x: SinCos.apply(x, 3.0), rand(3, 5))
    parity(lambda x: Square.apply(x) + x, rand(4, 2))


def test_grad_of_several_outputs_and_inputs_with_unused_ones():
    def gradients(x, w, unused):
        h = (x @ w).tanh()
        y1, y2 = h.sum(), (h * h).mean(dim=0)
        seed = np.full(y2.shape, 2.0, dtype=np.float32)  # a host seed for a device output
        gx, gh, gu = autograd.grad(
            [y1, y2], [x, h, unused], grad_outputs=[None, seed], retain_graph=True,
            materialize_grads=True,
        )  # fmt: skip
        (gw,) = autograd.grad(y2.sum(), w)  # the `wanted` walk through the kept graph
        return gx, gh, gu, gw

    outs = parity(gradients, rand(3, 4), rand(4, 2, seed=1), rand(5, seed=2))
    assert not outs[2].any()  # the unused input: materialized zeros


class HostGradient(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        return np.full(dy.shape, 2, dtype=np.float32)  # a host array whatever the device


def test_gradients_on_the_wrong_device_are_refused():
    x = leaf(rand(3), gpu=True)
    with pytest.raises(ValueError, match=r"HostGradient.backward returned a gradient on cpu"):
        HostGradient.apply(x).sum().backward()
    with pytest.raises(ValueError, match=r"grad: the gradient of output 0 is on cpu; expected"):
        autograd.grad(x * 2, x, grad_outputs=tc.ones(3))
    on_host = leaf(rand(3), gpu=False)
    with pytest.raises(ValueError, match=r"gradient of output 0 is on cuda:0; expected .* cpu"):
        autograd.grad(on_host * 2, on_host, grad_outputs=tc.ones(3, device="cuda"))
    with pytest.raises(ValueError, match="index_select: all tensors must be on the same device"):
        leaf(X, gpu=False).index_select(0, tc.tensor([1, 0], device="cuda"))
    (seeded,) = autograd.grad(x * 2, x, grad_outputs=np.ones(3, np.float32))  # host data: moved
    assert seeded.on_gpu


def test_backward_of_several_tensors_accumulates_into_leaves():
    def accumulated(x):
        y = x.exp()
        autograd.backward([y.sum(), (y * x).sum()], retain_graph=True)
        first = x.grad
        x.grad = None
        return first * 1.0, y  # y goes on to the harness's backward

    parity(accumulated, rand(2, 3))


# ====================================================================== nn.Transformer family
def test_transformer_with_masks_on_the_device():
    tc.manual_seed(0)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=16, dropout=0.0, batch_first=True)  # fmt: skip
    padding = np.array([[False] * 6, [False] * 4 + [True] * 2])  # (N, S): the second is short

    def forward(src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(5, device=tgt.device)
        keys = tc.tensor(padding, device=src.device)
        return model(src, tgt, tgt_mask=causal, src_key_padding_mask=keys,
                     memory_key_padding_mask=keys)  # fmt: skip

    parity(forward, rand(2, 6, 8), rand(2, 5, 8, seed=1), layer=model)


def test_encoder_norm_first_causal_and_a_decoder_stack():
    tc.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True,
                                       activation="gelu")  # fmt: skip
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    parity(lambda x: encoder(x, is_causal=True), rand(5, 3, 8), layer=encoder)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2)
    parity(lambda t, m: decoder(t, m, tgt_is_causal=True), rand(4, 8), rand(6, 8, seed=1),
           layer=decoder)  # fmt: skip


def test_a_stack_of_a_layer_on_the_device_stays_there():
    """The stacks deep-copy their layer (its copies start equal): made of a layer on the
    GPU, every copy is on the GPU, equal to a stack made on the host and moved."""
    tc.manual_seed(0)
    on_host = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
    tc.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).to("cuda")
    on_device = nn.TransformerEncoder(layer, 2)
    assert all(t.on_gpu for _, t in on_device.named_tensors())
    x = leaf(rand(5, 2, 8), gpu=True)
    expected = host(on_host.to("cuda")(x))
    np.testing.assert_allclose(host(on_device(x)), expected, rtol=1e-5, atol=1e-6)



def test_backward_refuses_a_seed_tensor_on_another_device():
    """Tensor.backward(grad): a gradient Tensor on another device than the tensor is an
    error naming backward (host arrays and numbers are copied to the tensor's device)."""
    x = leaf(rand(3), gpu=True)
    y = x * 2.0
    with pytest.raises(ValueError, match="backward: all tensors must be on the same device"):
        y.backward(Tensor(np.ones(3, dtype=np.float32)), retain_graph=True)
    y.backward(np.ones(3, dtype=np.float32))  # host data: copied to the GPU
    np.testing.assert_allclose(host(x.grad), [2.0, 2.0, 2.0])

def test_a_deep_copy_of_a_model_on_the_device_stays_there():
    """copy.deepcopy of a GPU model (an EMA twin, a target network) is on the GPU, as
    torch's; a pickle still holds host arrays."""
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3)).to("cuda")
    twin = copy.deepcopy(model)
    assert all(t.on_gpu for _, t in twin.named_tensors())
    assert all(a is not b for a, b in zip(twin.parameters(), model.parameters()))
    x = leaf(rand(2, 4), gpu=True)
    np.testing.assert_array_equal(host(twin(x)), host(model(x)))
    import pickle  # noqa: PLC0415

    state = pickle.loads(pickle.dumps(model[0].weights))
    assert not state.on_gpu

# ====================================================================== small layers
class Mixture(nn.Module):
    """Parameters held in a ParameterList and a ParameterDict."""

    def __init__(self):
        self.weights = nn.ParameterList([nn.Parameter(tc.randn(3, 4)), nn.Parameter(tc.randn(4))])
        self.scales = nn.ParameterDict({"a": nn.Parameter(tc.randn(4)), "b": tc.randn(4)})

    def forward(self, x):
        return (x @ self.weights[0] + self.weights[1]) * self.scales["a"] - self.scales["b"]


LAYERS = {
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 5)),
    "ReplicationPad1d": (lambda: nn.ReplicationPad1d((3, 1)), (2, 3, 4)),
    "CircularPad2d": (lambda: nn.CircularPad2d(1), (1, 2, 3, 4)),
    "ConstantPad3d": (lambda: nn.ConstantPad3d((1, 0, 0, 1, 1, 1), 0.5), (1, 2, 2, 3, 2)),
    "ZeroPad2d": (lambda: nn.ZeroPad2d((0, 1, 2, 0)), (3, 4, 2)),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), (2, 8, 3, 3)),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, -1)), (3, 6)),
    "Flatten": (lambda: nn.Flatten(0, 1), (2, 3, 4)),
    "Unfold": (lambda: nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), (2, 3, 5, 6)),
    "Fold": (lambda: nn.Fold((4, 5), 2, padding=1), (2, 12, 30)),
    "ParameterList/Dict": (Mixture, (5, 3)),
}


@pytest.mark.parametrize("name", LAYERS)
def test_small_layers(name):
    make, shape = LAYERS[name]
    tc.manual_seed(0)
    layer = make()
    parity(layer, rand(*shape), layer=layer)


def test_bilinear_layer_and_function():
    tc.manual_seed(0)
    layer = nn.Bilinear(3, 4, 2)
    parity(layer, rand(5, 3), rand(5, 4, seed=1), layer=layer)
    parity(lambda a, b, w: F.bilinear(a, b, w), rand(2, 3, 3), rand(2, 3, 4), rand(5, 3, 4))


def test_fold_of_unfold_with_every_geometry():
    def roundtrip(x):
        cols = F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2))
        return F.fold(cols * 2.0, (5, 6), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2))

    parity(roundtrip, rand(2, 3, 5, 6))
    parity(lambda c: F.fold(c, (3, 3), 2), rand(8, 4))  # unbatched (C kh kw, L)


INTERPOLATIONS = [
    ("nearest", dict(scale_factor=2), (1, 2, 3, 4)),  # whole factors: a repeat
    ("nearest", dict(size=(5, 7)), (1, 2, 3, 4)),  # a gather with host-built ids
    ("nearest-exact", dict(scale_factor=1.7), (2, 1, 5)),
    ("linear", dict(size=7, align_corners=True), (2, 3, 4)),
    ("bilinear", dict(scale_factor=(1.5, 0.5)), (1, 2, 4, 6)),
    ("bicubic", dict(size=(6, 3), align_corners=False), (1, 2, 4, 5)),
    ("bicubic", dict(size=(2, 3), antialias=True), (1, 1, 7, 8)),
    ("bilinear", dict(size=(3, 2), antialias=True), (1, 2, 7, 5)),
    ("trilinear", dict(scale_factor=(2, 1, 1.5)), (1, 1, 2, 3, 4)),
    ("area", dict(size=(3, 2)), (2, 1, 7, 5)),
]


@pytest.mark.parametrize("mode, kwargs, shape", INTERPOLATIONS)
def test_interpolate(mode, kwargs, shape):
    parity(lambda x: F.interpolate(x, mode=mode, **kwargs), rand(*shape))


# ====================================================================== PackedSequence
def test_pack_an_lstm_and_unpack_with_lengths_on_the_device():
    tc.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)

    def packed_run(x, h0):
        lengths = tc.tensor([5, 2, 4], device=x.device)  # read back to build the host ids
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        assert not packed.batch_sizes.on_gpu and packed.sorted_indices.on_gpu == x.on_gpu
        out, (h, c) = lstm(packed, (h0, h0 * 0.5))
        padded, found = pad_packed_sequence(out, batch_first=True, padding_value=-1.0,
                                            total_length=6)  # fmt: skip
        assert found.tolist() == [5, 2, 4]
        return (padded, h, c, *unpack_sequence(out), found)

    parity(packed_run, rand(3, 6, 3), rand(4, 3, 4, seed=1), layer=lstm, on_host=(6,))


def test_packed_sequence_moved_to_the_device_and_a_gru_on_it():
    tc.manual_seed(0)
    gru = nn.GRU(2, 3)

    def moved(a, b, c):
        on = a.device
        sequences = [s.cpu() for s in (a, b, c)]  # packed on the host, as a DataLoader does
        packed = pack_sequence(sequences, enforce_sorted=False).to(on)
        assert packed.is_cuda == (on != "cpu") and not packed.batch_sizes.on_gpu
        out, h = gru(packed)
        return (out.data, h, pad_sequence([a, b, c], batch_first=True, padding_side="left"))

    parity(moved, rand(2, 2), rand(4, 2, seed=1), rand(3, 2, seed=2), layer=gru)


def test_unpad_sequence_and_a_packed_sequence_made_by_hand():
    def by_hand(data, padded):
        order = tc.tensor([2, 0, 1], device=data.device)
        packed = PackedSequence(data, tc.tensor([3, 2, 1]), order)  # batch_sizes on the host
        pieces = unpad_sequence(padded, [3, 1, 2], batch_first=True)
        return (*unpack_sequence(packed), *pieces)

    parity(by_hand, rand(6, 2), rand(3, 3, 2, seed=1))


# ====================================================================== torch's math
X = rand(3, 5, seed=3)
TIED = np.array([[1, 3, 3, 0, 2], [2, 2, 1, 1, 2], [0, -1, 5, 5, 5]], dtype=np.float32)
ZEROED = np.array([[1.5, 0, 2, -1, 0.5], [0.5, -2, 3, 0, 1], [2, 1.5, -0.5, 1, 3]], np.float32)
NANS = np.where(np.arange(15).reshape(3, 5) % 4 == 1, np.nan, X).astype(np.float32)
NANS[2] = np.nan  # a row of NaN only

REDUCTIONS = {
    "std": (lambda x: tc.std(x, dim=1), X),
    "var": (lambda x: tc.var(x, dim=(0, 1), correction=0, keepdim=True), X),
    "logsumexp": (lambda x: tc.logsumexp(x * 30, dim=0), X),
    "prod": (lambda x: (tc.prod(x, dim=1), tc.prod(x)), ZEROED),
    "cumprod": (lambda x: tc.cumprod(x, dim=1), ZEROED),
    "amax/amin": (lambda x: (tc.amax(x, dim=1), tc.amin(x, dim=(0, 1))), TIED),
    "count_nonzero": (lambda x: tc.count_nonzero(x, dim=0), ZEROED),
    "nansum/nanmean": (lambda x: (tc.nansum(x, dim=1), tc.nanmean(x[:2], dim=0)), NANS),
    "median": (lambda x: (tc.median(x), tc.median(x, dim=1, keepdim=True)), TIED),
    "nanmedian": (lambda x: tc.nanmedian(x, dim=1), NANS),
    "mode": (lambda x: tc.mode(x, dim=1), TIED),
    "kthvalue": (lambda x: tc.kthvalue(x, 2, dim=0), TIED),
    "quantile": (
        lambda x: [
            tc.quantile(x, tc.tensor([0.1, 0.5, 0.9], device=x.device), dim=1, interpolation=i)
            for i in ("linear", "lower", "higher", "midpoint", "nearest")
        ],
        X,
    ),
    "quantile of all": (lambda x: tc.quantile(x, 0.3, keepdim=True), X),
    "nanquantile": (lambda x: tc.nanquantile(x, tc.tensor(0.25, device=x.device), dim=1), NANS),
    "topk": (lambda x: x.topk(2, dim=1, largest=False), X),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name):
    fn, x = REDUCTIONS[name]
    parity(fn, x)


Y = rand(3, 5, seed=4) + np.float32(0.5)
INTS = np.array([[7, -7, 9, 0, -3], [4, 5, -6, 11, 2], [1, 0, -1, 8, 3]], dtype=np.int64)
ELEMENTWISE = {
    "add/sub alpha": lambda x, y: (tc.add(x, y, alpha=2), tc.sub(x, 1.5, alpha=-0.5)),
    "div rounding": lambda x, y: (
        x.div(y, rounding_mode="floor"),
        tc.div(x, y, rounding_mode="trunc"),
    ),
    "fmod/remainder": lambda x, y: (tc.fmod(x, y), tc.remainder(x, y), x.remainder(1.5)),
    "logs": lambda x, y: (tc.log1p(y.abs()), tc.log2(y.abs()), tc.log10(y.abs() + 1)),
    "maximum ties": lambda x, y: (tc.maximum(x, x.clamp(min=0)), tc.minimum(x, y)),  # halves
    "steps": lambda x, y: (tc.sign(x) * x, tc.round(x * 10, decimals=-1), tc.trunc(x) + x),
    "logical": lambda x, y: (tc.logical_and(x > 0, y), tc.logical_xor(x, y > 1)),
    "nan_to_num": lambda x, y: tc.nan_to_num(x.log() + x / (y - y), posinf=9.0),  # NaN, inf
    "mv/addmm": lambda x, y: (tc.mv(x, y[0]), tc.addmm(y[:, :3], x, y.T, beta=0.5, alpha=2)),
    "addmm beta 0": lambda x, y: tc.addmm(y[:, :3] * math.inf, x, y.T, beta=0),
    "cdist": lambda x, y: [tc.cdist(x, y, p=p) for p in (1.0, 2.0, 3.0, math.inf)],
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_and_products(name):
    with np.errstate(all="ignore"):  # the host's log of negatives and x / 0 in nan_to_num
        parity(ELEMENTWISE[name], X, Y)


def test_integer_division_on_the_device():
    outs = parity(lambda a, b: (a.div(b, rounding_mode="floor"), tc.fmod(a, b), a.remainder(b)),
                  INTS, INTS[::-1] + 20)  # fmt: skip
    np.testing.assert_array_equal(outs[0], INTS // (INTS[::-1] + 20))
    for gpu in (False, True):
        a, b = leaf(INTS, gpu), leaf(INTS[::-1], gpu)  # holds 0: torch raises
        with pytest.raises(ZeroDivisionError, match="integer division by zero"):
            tc.fmod(a, b)


# ====================================================================== torch's indexing
IDS = np.array([[2, 0, 1, 1, 0], [1, 2, 0, 2, 2]], dtype=np.int64)
PERMUTED = np.array([[2, 0, 1, 0, 1], [1, 2, 0, 2, 0]], dtype=np.int64)  # distinct per column


def indexing_ops(x, src):
    """Every indexing op, with ids built on the host and passed as lists, host arrays and
    device tensors."""
    ids = tc.tensor(IDS, device=x.device)
    mask = tc.tensor(X > 0.3, device=x.device)
    return (
        x.index_select(1, ids[0]),
        tc.index_select(x, 0, [2, 0, 2]),  # a list, repeated
        tc.select(x, 1, -2),
        x.gather(0, ids),
        tc.scatter(x, 0, tc.tensor(PERMUTED[:, :3], device=x.device), src[:2, :3]),
        x.scatter(1, PERMUTED, 2.5),  # a host array of ids, a number
        tc.scatter_add(x, 0, ids, src[:2]),  # repeated ids add up (add.at)
        x.scatter(0, ids, src[:2], reduce="add"),
        tc.index_add(x, 1, ids[1, :3], src[:, :3], alpha=-2),
        tc.index_copy(x, 0, tc.tensor([2, 0], device=x.device), src[:2]),
        tc.index_fill(x, 1, ids[0], src[0, 0]),  # a 0-d tensor value: its gradient sums
        tc.masked_scatter(x, mask, src),
        tc.diag(src[0], 1),
        tc.diag(x, -1),
        tc.diagonal(x.reshape(3, 5, 1) * src.reshape(3, 1, 5), 1, 1, 2),
        x.masked_select(mask),
        x.masked_select(X > 0.3),  # a host mask: copied to the device
        x.repeat_interleave(tc.tensor([1, 0, 3], device=x.device), dim=0),
        tc.repeat_interleave(tc.tensor([2, 0, 1], device=x.device)),
        tc.roll(x, (1, -2), (0, 1)),
        tc.flip(x, (0, 1)),
        x.detach().clone().fill_diagonal_(3.0, wrap=True),  # in place, off the graph
        x.detach().clone().index_add_(0, ids[1, :2], src[:2].detach()),
    )


def test_indexing_ops():
    parity(indexing_ops, X, rand(3, 5, seed=5))


def test_ids_and_values_read_back():
    def found(x):
        values, inverse, counts = tc.unique(x, return_inverse=True, return_counts=True)
        rows = tc.unique(x[:, :2], dim=0)
        return (values, inverse, counts, rows, tc.nonzero(x), *tc.nonzero(x, as_tuple=True),
                x.count_nonzero(), tc.count_nonzero(x, dim=1))  # fmt: skip

    parity(found, np.array([[0, 2, 2, 1], [3, 0, 2, 0], [0, 2, 1, 1]], dtype=np.float32))
    parity(found, INTS % 3)
    numbers = []
    for gpu in (False, True):
        x = leaf(X, gpu)
        numbers.append((x.median().item(), float(x.sum()), int(x.argmax()), x.quantile(0.5).item()))
    assert numbers[1] == pytest.approx(numbers[0], rel=1e-5)


def test_an_id_out_of_range_raises_on_the_device_too():
    for gpu in (False, True):
        x, bad = leaf(X, gpu), tc.tensor([[0, 3, 1, 0, 0]], device="cuda" if gpu else "cpu")
        with pytest.raises(IndexError, match="scatter_add"):
            tc.scatter_add(x, 0, bad, x[:1]).numpy()  # on a GPU: at the read-back


# ====================================================================== random draws
def test_draws_give_the_same_numbers_on_both_devices():
    def draws(mean, std, probs):
        generator = tc.Generator().manual_seed(5)
        empty = tc.zeros(2, 3, device=mean.device)
        return (
            tc.normal(mean, std.abs()),
            tc.normal(mean, 2.0, generator=generator),
            tc.bernoulli(probs.sigmoid()),
            probs.sigmoid().bernoulli(0.3),
            tc.randint_like(mean, 3, 9),
            empty.clone().random_(-4, 5),
            tc.zeros(6, dtype=tc.int64, device=mean.device).random_(100),
            empty.clone().normal_(1.0, 0.5),
            empty.clone().exponential_(2.0),
            empty.clone().uniform_(-1, 1),
            probs.sigmoid().multinomial(4, replacement=True),
            probs.sigmoid().multinomial(3),
        )

    parity(draws, rand(2, 3), rand(2, 3, seed=1), rand(2, 3, seed=2))


# ====================================================================== distributions
def distributions(loc, scale, logits, tril):
    """Samples (tricycle's generator: the same on both devices), log-probabilities,
    entropies and KL divergences, all differentiable in the parameters."""
    n = tril.shape[-1]
    lower = tril.tril(-1) + tril.exp() * tc.eye(n, device=tril.device)  # (2, n, n)
    covariance = lower @ lower.mT + tc.eye(n, device=tril.device) * 0.1
    normal = Normal(loc, scale.exp())
    mvn = MultivariateNormal(loc[:, :n], scale_tril=lower)
    full = MultivariateNormal(loc[:, :n], covariance_matrix=covariance)
    categorical = Categorical(logits=logits)
    bernoulli = Bernoulli(logits=logits)
    uniform = Uniform(loc - 1, loc + scale.exp())
    onehot = OneHotCategorical(probs=logits.softmax(-1))
    independent = Independent(Normal(loc, scale.exp()), 1)
    x = normal.rsample((2,))
    return (
        x, normal.log_prob(x), normal.entropy(), normal.cdf(loc),
        mvn.rsample(), mvn.log_prob(full.rsample((3,))), full.entropy(), full.precision_matrix,
        kl_divergence(mvn, full), kl_divergence(normal, Normal(loc * 0.5, scale.exp() * 2)),
        categorical.sample((4,)), categorical.log_prob(categorical.sample()),
        categorical.entropy(), bernoulli.sample(), bernoulli.log_prob(bernoulli.mean.round()),
        bernoulli.entropy(), uniform.rsample(), uniform.log_prob(uniform.mean),
        onehot.sample(), onehot.log_prob(onehot.sample()), independent.log_prob(x),
        kl_divergence(categorical, Categorical(probs=logits.sigmoid())),
    )  # fmt: skip


def test_distributions():
    parity(distributions, rand(2, 4), rand(2, 4, seed=1), rand(2, 4, seed=2),
           rand(2, 3, 3, seed=3, scale=0.3), rtol=2e-4, atol=2e-5)  # fmt: skip


def test_cholesky_and_solve_triangular_in_float64():
    from tricycle.distributions.linalg import cholesky, solve_triangular

    def solved(a, b):
        spd = a @ a.mT + tc.eye(4, dtype=tc.float64, device=a.device)  # (3, 4, 4)
        lower = cholesky(spd)
        return lower, solve_triangular(lower, b), solve_triangular(lower[0], b)  # broadcast

    parity(solved, rand(3, 4, 4, dtype=np.float64), rand(3, 4, 2, seed=1, dtype=np.float64),
           rtol=1e-9, atol=1e-10)  # fmt: skip


def test_validation_reads_device_values_back():
    for device in ("cpu", "cuda"):
        bad = tc.tensor([[1.0, 2.0], [2.0, 1.0]], device=device)  # symmetric, not definite
        with pytest.raises(ValueError, match="covariance_matrix"):
            MultivariateNormal(tc.zeros(2, device=device), covariance_matrix=bad)
        with pytest.raises(ValueError, match="scale"):
            Normal(tc.zeros(2, device=device), tc.tensor([1.0, -1.0], device=device))
        with pytest.raises(ValueError, match="log_prob: value"):
            Categorical(logits=tc.zeros(3, device=device)).log_prob(tc.tensor(3, device=device))


# ====================================================================== autocast and GradScaler
class MLP(nn.Module):
    def __init__(self):
        self.first, self.second = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.second(nn.Tanh()(self.first(x)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_autocast_cuda_computes_in_16_bits_from_float32_masters(dtype):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    tc.manual_seed(0)
    model = MLP()
    seen = []
    model.first.register_forward_hook(lambda layer, args, out: seen.append(args[0].dtype))

    def forward(x):
        device = "cuda" if x.on_gpu else "cpu"
        with tc.autocast(device, dtype=getattr(tc, dtype)):
            return model(x)

    tolerance = 5e-2 if dtype == "bfloat16" else 5e-3  # (the host's bf16 products: float32)
    parity(forward, rand(5, 4), layer=model, rtol=tolerance, atol=tolerance)
    assert seen == [np.dtype(getattr(tc, dtype))] * 2  # cast on both devices
    assert all(p.dtype == np.float32 for p in model.parameters())


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
def test_grad_scaler_steps_skips_and_updates_alike():
    def training(x):
        x = x.detach()  # (its gradient would hold step 1's inf)
        tc.manual_seed(0)
        device = "cuda" if x.on_gpu else "cpu"
        model = MLP().to(device)
        sgd = optim.SGD(model.parameters(), lr=0.1)
        scaler = tc.amp.GradScaler(device, init_scale=2.0**10, growth_interval=1)
        scales, losses = [], []
        for step in range(5):
            if step == 3:  # the state as host numbers, back on the device at the next step
                scaler.load_state_dict(scaler.state_dict())
            sgd.zero_grad()
            with tc.autocast(device, dtype=tc.float16):
                y = model(x)
            loss = (y * y).mean() * (1e6 if step == 1 else 1.0)  # step 1 overflows float16
            scaler.scale(loss).backward()
            scaler.unscale_(sgd)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(sgd)
            scaler.update()
            scales.append(scaler.get_scale())
            losses.append(loss.detach())
        return (*losses, *(p.detach() for p in model.parameters()), tc.tensor(scales))

    outs = parity(training, rand(5, 4), rtol=5e-3, atol=5e-3, on_host=(9,))  # step 1's inf
    scales = outs[9].tolist()
    assert scales[1] < scales[0] and scales[2] > scales[1]  # backed off, then grew again


# ====================================================================== checkpointing
def block(seed: int) -> nn.Sequential:
    tc.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.0), nn.Linear(8, 4),
                         nn.LayerNorm(4))  # fmt: skip


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_as_without_it(use_reentrant):
    stack = nn.Sequential(block(0), block(1), block(2))

    def checkpointed(x):
        y = checkpoint(stack[0], x, use_reentrant=use_reentrant)
        return checkpoint_sequential(stack[1:], 2, y, use_reentrant=use_reentrant)

    ours = parity(checkpointed, rand(5, 4), layer=stack)
    np.testing.assert_allclose(ours[0], parity(stack, rand(5, 4), layer=stack)[0], rtol=1e-6)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_replays_dropout_masks_on_the_device(use_reentrant):
    """The GPU's dropout kernels (the attention's and Dropout's) take seeds from the layers'
    generators, which the checkpoint's replay restores: the same masks in backward."""
    tc.manual_seed(1)
    plain = nn.Sequential(GPT2TransformerBlock(8, 2, 6, dropout_prob=0.2), nn.Dropout(0.5))
    wrapped = copy.deepcopy(plain).to("cuda")  # the same weights and generators' states
    plain.to("cuda")
    x = leaf(rand(2, 6, 8), gpu=True)
    results = []
    for model, checkpointed in ((plain, False), (wrapped, True)):
        x.grad = None
        y = checkpoint(model, x, use_reentrant=use_reentrant) if checkpointed else model(x)
        (y * y).sum().backward()
        results.append([host(y), host(x.grad), *(host(p.grad) for p in model.parameters())])
    assert (results[0][0] == 0).any()  # dropout dropped something
    for a, b in zip(*results):  # (the attention's backward kernel adds in any order)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ====================================================================== LBFGS, Rprop, ASGD
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs(line_search_fn):
    def fitted(x, y):
        tc.manual_seed(0)
        model = nn.Linear(4, 3).to(x.device, np.float64)  # float64: the same branches taken
        lbfgs = optim.LBFGS(model.parameters(), lr=0.5, max_iter=5, history_size=3,
                            line_search_fn=line_search_fn)  # fmt: skip

        def closure():
            lbfgs.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        losses = [lbfgs.step(closure).detach() for _ in range(3)]
        state = lbfgs.state_dict()
        lbfgs.load_state_dict(state)  # the history back onto the parameters' device
        losses.append(lbfgs.step(closure).detach())
        return (*losses, *(p.detach() for p in model.parameters()))

    parity(fitted, rand(16, 4, dtype=np.float64), rand(16, 3, seed=1, dtype=np.float64),
           rtol=1e-7, atol=1e-9)  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [lambda p: optim.Rprop(p, lr=0.05), lambda p: optim.ASGD(p, lr=0.05, t0=2, weight_decay=0.1)],
)
def test_rprop_and_asgd(make):
    def trained(x, y):
        tc.manual_seed(0)
        model = nn.Linear(4, 3).to(x.device)
        optimizer = make(model.parameters())
        for _ in range(5):
            optimizer.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            optimizer.step()
        averages = [v for s in optimizer.state.values() for k, v in s.items() if k == "ax"]
        return (*(p.detach() for p in model.parameters()), *(Tensor(a) for a in averages))

    parity(trained, rand(16, 4), rand(16, 3, seed=1))


# ====================================================================== torch.distributed
def test_a_world_of_one_on_the_gpu():
    import tricycle.distributed as dist

    if backend.nccl() is None:
        pytest.skip("cupy finds no NCCL library")

    def ddp_step(x):
        gpu = x.on_gpu
        dist.init_process_group("nccl" if gpu else "gloo")
        try:
            tc.manual_seed(0)
            model = MLP().to(x.device)
            ddp = dist.DistributedDataParallel(model, device_ids=[0] if gpu else None)
            (ddp(x) ** 2).sum().backward()
            total = x.sum(0).detach()
            dist.all_reduce(total, dist.ReduceOp.MAX)
            dist.broadcast(total, 0)
            gathered = [tc.zeros_like(total)]
            dist.all_gather(gathered, total)
            return (total, *gathered, *(p.grad for p in model.parameters()))
        finally:
            dist.destroy_process_group()

    parity(ddp_step, rand(5, 4))


def test_a_host_number_meets_a_gpu_tensor_as_torchs():
    """torch's rule for a 0-d host tensor beside a GPU one (imagenet's ``acc1 > best_acc1``,
    ``best_acc1`` loaded into host memory): a number on the other's device. A host tensor
    with dimensions, or one that needs a gradient, is still the devices' error."""
    x = tc.tensor(np.array([1.0, 3.0], np.float32), requires_grad=True).to_gpu()
    best = tc.tensor(np.float32(2.0))  # 0-d, host
    above = x > best
    assert above.on_gpu and above.numpy().tolist() == [False, True]
    assert (best < x).numpy().tolist() == [False, True]
    (x * best + best - x / best).sum().backward()
    assert x.grad.on_gpu and x.grad.numpy().tolist() == [1.5, 1.5]
    with pytest.raises(ValueError, match="same device"):
        x + tc.tensor(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="same device"):
        x * tc.tensor(np.float32(2.0), requires_grad=True)
