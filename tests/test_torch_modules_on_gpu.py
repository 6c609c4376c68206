"""torch's modules new in round 37 (ATen's functions, nn.grad, the recurrent functions, sparse
COO tensors, attention and flex attention, the profiler, TensorBoard, autocast's state,
signal windows) on a GPU: each result on cupy equals the same call's on the host, gradients
too. The host's results are tested against torch in their own files; this file holds what
only a GPU can check: the ``xp`` paths."""

import numpy as np
import pytest

import tricycle
import tricycle.nn.functional as F
from tests.helpers import assert_same_on_gpu as _same
from tests.helpers import on_host_and_gpu as _pair
from tricycle import backend, nn

pytestmark = pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")

rng = np.random.default_rng(0)


def _both(fn, *arrays, grads=True):
    """``fn`` of host tensors and of GPU tensors: equal outputs and input gradients."""
    pairs = [_pair(a, requires_grad=grads) for a in arrays]
    hosts, gpus = [p[0] for p in pairs], [p[1] for p in pairs]
    out_host, out_gpu = fn(*hosts), fn(*gpus)
    _same(out_host, out_gpu)
    if grads:
        first = lambda o: o[0] if isinstance(o, tuple) else o  # noqa: E731
        first(out_host).sum().backward()
        first(out_gpu).sum().backward()
        for h, g in zip(hosts, gpus, strict=True):
            _same(h.grad, g.grad)


X4 = rng.standard_normal((2, 3, 4, 4))
W = rng.standard_normal((5, 3, 3, 3)) / 3


def test_the_native_norms_and_convolution_give_the_hosts_results():
    _both(lambda x: tricycle.native_layer_norm(x, (4, 4), None, None, 1e-5), X4)
    _both(lambda x: tricycle.native_group_norm(x, None, None, 2, 3, 16, 3, 1e-5), X4)
    _both(lambda x: tricycle.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5), X4)
    _both(lambda x, w: tricycle.convolution(x, w, None, (1, 1), (1, 1), (1, 1), False, (0, 0), 1),
          X4, W)  # fmt: skip
    _both(lambda x: tricycle.constant_pad_nd(x, (1, 2), 0.5), X4)
    grid = rng.uniform(-1, 1, (2, 3, 3, 2))
    _both(lambda x, g: tricycle.grid_sampler(x, g, 0, 0, False), X4, grid)


def test_nn_grad_gives_the_hosts_gradients():
    dout = rng.standard_normal((2, 5, 4, 4))
    _both(lambda w, d: nn.grad.conv2d_input(X4.shape, w, d, padding=1), W, dout)
    x_host, x_gpu = _pair(X4)
    d_host, d_gpu = _pair(dout)
    _same(nn.grad.conv2d_weight(x_host, W.shape, d_host, padding=1),
          nn.grad.conv2d_weight(x_gpu, W.shape, d_gpu, padding=1))  # fmt: skip


def test_the_recurrent_functions_give_the_hosts_results():
    T, N, In, H = 5, 2, 3, 4
    params = [rng.standard_normal(s) / 2 for s in ((4 * H, In), (4 * H, H), (4 * H,), (4 * H,))]
    x = rng.standard_normal((T, N, In))
    h0, c0 = np.zeros((1, N, H)), np.zeros((1, N, H))

    def run(x, h, c, *weights):
        out, h_n, c_n = tricycle.lstm(x, (h, c), list(weights), True, 1, 0.0, True, False, False)
        return out, h_n, c_n

    _both(run, x, h0, c0, *params)


def test_sparse_coo_on_the_gpu_gives_the_hosts_values_and_gradients():
    indices = np.array([[0, 1, 1, 2, 0], [2, 0, 0, 1, 2]])  # repeated cells (1, 0) and (0, 2)
    values = rng.standard_normal(5)
    dense = rng.standard_normal((3, 4))

    def product(v, d):
        host = v.array.__class__ is np.ndarray
        ids = tricycle.tensor(indices) if host else tricycle.tensor(indices).to_gpu()
        adjacency = tricycle.sparse_coo_tensor(ids, v, (3, 3))
        return tricycle.spmm(adjacency.coalesce(), d[:3, :])

    _both(product, values, dense)
    x_host, x_gpu = _pair(dense * (dense > 0.5))
    s_host, s_gpu = x_host.to_sparse(), x_gpu.to_sparse()
    _same(s_host.to_dense(), s_gpu.to_dense())
    _same(
        tricycle.sparse.softmax(s_host, 1).to_dense(), tricycle.sparse.softmax(s_gpu, 1).to_dense()
    )
    back = s_gpu.to("cpu")
    np.testing.assert_allclose(back.to_dense().numpy(), s_host.to_dense().numpy())


def test_attention_and_flex_attention_give_the_hosts_values_and_gradients():
    from tricycle.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (rng.standard_normal((1, 2, 6, 4)) for _ in range(3))
    kk = rng.standard_normal((1, 2, 9, 4))
    _both(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, kk, kk)

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def flex(q, k, v):
        device = "cpu" if q.array.__class__ is np.ndarray else "cuda"
        mask = create_block_mask(causal, 1, 2, 6, 6, device=device, BLOCK_SIZE=4)
        return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s - 0.1 * (i - j),
                              block_mask=mask)  # fmt: skip

    _both(flex, q, k, v)


def test_a_multi_grad_hook_sees_gpu_gradients():
    from tricycle.autograd.graph import register_multi_grad_hook

    a, b = (tricycle.tensor(rng.standard_normal(3), requires_grad=True).to_gpu() for _ in range(2))
    seen = []
    register_multi_grad_hook((a, b), lambda grads: seen.append(grads))
    (a * b).sum().backward()
    assert len(seen) == 1 and all(backend.is_cupy_array(g.array) for g in seen[0])


def test_the_profiler_records_gpu_ops_with_device_times():
    from tricycle.profiler import ProfilerActivity, profile

    x = tricycle.tensor(rng.standard_normal((64, 64)), requires_grad=True).to_gpu()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        (x @ x).exp().sum().backward()
    names = {event.key for event in prof.key_averages()}
    assert "matmul" in names or any("matmul" in n for n in names), names
    assert "CUDA" in prof.key_averages().table(row_limit=5)


def test_tensorboard_takes_gpu_tensors(tmp_path):
    from tricycle.utils.tensorboard import SummaryWriter

    values = tricycle.tensor(rng.standard_normal(100)).to_gpu()
    image = tricycle.tensor(rng.uniform(0, 1, (3, 8, 8))).to_gpu()
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("loss", values.mean(), 1)
        writer.add_histogram("values", values, 1)
        writer.add_image("image", image, 1)
    assert any(path.name.startswith("events.out.tfevents") for path in tmp_path.iterdir())


def test_autocast_state_casts_on_the_gpu():
    model = nn.Linear(4, 3).to_gpu()
    x = tricycle.tensor(rng.standard_normal((2, 4)).astype(np.float32)).to_gpu()
    with tricycle.autocast("cuda", dtype=tricycle.float16):
        in_block = model(x)
    assert tricycle.get_autocast_dtype("cuda") == tricycle.float16
    tricycle.set_autocast_enabled("cuda", True)
    try:
        by_flag = model(x)
    finally:
        tricycle.set_autocast_enabled("cuda", False)
    _same(in_block.numpy(), by_flag)


def test_signal_windows_on_the_gpu():
    for name in ("hann", "kaiser", "gaussian"):
        window = getattr(tricycle.signal.windows, name)
        _same(window(8).array, window(8, device="cuda"))
