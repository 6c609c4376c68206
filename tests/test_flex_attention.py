"""torch's flex_attention on tricycle (``tricycle.nn.attention.flex_attention``): outputs and
log-sum-exps equal torch's eager flex_attention (torch 2.13 runs it on the CPU without its
compiler, forward only) for causal, sliding-window, document, ALiBi-style and learned-bias
score mods, GQA and a batch of one key/value; gradients equal those of the same attention
written with torch's plain ops (torch refuses flex_attention's backward on the CPU) and
finite differences; ``create_block_mask``'s tiles, ``to_dense`` and ``sparsity`` and
``create_mask`` equal torch's; the refusals are torch's."""

import functools
import warnings

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads
from tricycle.nn.attention.flex_attention import (
    AuxRequest,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)

torch = pytest.importorskip("torch")
flex = pytest.importorskip("torch.nn.attention.flex_attention")


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():  # torch's eager flex_attention warns on every call
        warnings.simplefilter("ignore")
        yield


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 2


def alibi(score, b, h, q_idx, kv_idx):
    return score + (kv_idx - q_idx) * (0.25 * (h + 1))


DOCS = np.array([0, 0, 0, 1, 1, 2, 2, 2])


def documents(lib):
    doc = lib.tensor(DOCS)

    def same_document(b, h, q_idx, kv_idx):
        return doc[q_idx] == doc[kv_idx]

    return same_document


def mods(lib, case):
    """(score_mod, mask_mod or None) of ``case`` for ``lib``'s flex_attention."""
    return {
        "causal": (None, causal),
        "sliding": (None, (and_masks if lib is tc else flex.and_masks)(causal, window)),
        "documents": (None, documents(lib)),
        "alibi": (alibi, causal),
        "none_seen": (None, lambda b, h, q_idx, kv_idx: (q_idx > 5) & (kv_idx <= q_idx)),
    }[case]


def run(lib, q, k, v, case, **kwargs):
    score_mod, mask_mod = mods(lib, case)
    L, S = q.shape[2], k.shape[2]
    # torch's block mask goes to the GPU where there is one: kept with the host's tensors
    make = (
        create_block_mask if lib is tc else functools.partial(flex.create_block_mask, device="cpu")
    )
    block = None if mask_mod is None else make(mask_mod, q.shape[0], None, L, S, BLOCK_SIZE=4)
    attend = flex_attention if lib is tc else flex.flex_attention
    args = [lib.tensor(a) for a in (q, k, v)]
    return attend(*args, score_mod=score_mod, block_mask=block, **kwargs)


def host(x):
    return x.array if isinstance(x, tc.Tensor) else x.numpy()


@pytest.mark.parametrize("case", ["causal", "sliding", "documents", "alibi", "none_seen"])
def test_outputs_and_lse_are_torchs(case):
    q, k, v = normal(2, 4, 8, 8, seed=1), normal(1, 2, 8, 8, seed=2), normal(1, 2, 8, 6, seed=3)
    (out, lse), (expected, expected_lse) = (
        run(lib, q, k, v, case, enable_gqa=True, return_lse=True) for lib in (tc, torch)
    )
    assert out.shape == (2, 4, 8, 6) and out.dtype == np.float32 and lse.dtype == np.float32
    np.testing.assert_allclose(out.array, host(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lse.array, host(expected_lse), rtol=1e-5, atol=1e-6)
    if case == "none_seen":  # queries that see no key: output 0, lse -inf, as torch's
        assert (out.array[:, :, :6] == 0).all() and np.isneginf(lse.array[:, :, :6]).all()


def test_return_aux_scale_and_float64():
    q, k, v = (normal(1, 2, 5, 4, seed=s).astype(np.float64) for s in (4, 5, 6))
    request = {"return_aux": AuxRequest(lse=True, max_scores=True), "scale": 0.7}
    out, aux = flex_attention(*(tc.tensor(a) for a in (q, k, v)), score_mod=alibi, **request)
    request["return_aux"] = flex.AuxRequest(lse=True)  # max_scores: not on torch's CPU
    t_out, t_aux = flex.flex_attention(*(torch.tensor(a) for a in (q, k, v)), score_mod=alibi,
                                       **request)  # fmt: skip
    assert out.dtype == np.float64 and aux.lse.dtype == np.float64
    np.testing.assert_allclose(out.array, host(t_out), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(aux.lse.array, host(t_aux.lse), rtol=1e-12, atol=1e-12)
    positions = np.arange(5)
    scores = q @ k.swapaxes(-1, -2) * 0.7 + (positions - positions[:, None]) * [[[0.25]], [[0.5]]]
    np.testing.assert_allclose(aux.max_scores.array, scores.max(-1), rtol=1e-12)
    only = flex_attention(*(tc.tensor(a) for a in (q, k, v)), return_aux=AuxRequest(lse=True))
    assert only[1].max_scores is None and only[1].lse.shape == (1, 2, 5)


def torch_reference(q, k, v, bias, groups):
    """The same attention with torch's plain ops: causal, a learned (H, L, S) bias."""
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + bias
    L, S = scores.shape[-2:]
    scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -float("inf"))
    return scores.softmax(-1) @ v, scores.logsumexp(-1)


def test_gradients_reach_q_k_v_and_a_learned_bias_as_torchs():
    arrays = [normal(2, 4, 6, 4, seed=7), normal(2, 2, 6, 4, seed=8), normal(2, 2, 6, 3, seed=9)]
    arrays = [a.astype(np.float64) for a in arrays] + [normal(4, 6, 6, seed=10).astype(np.float64)]
    weights = np.cos(np.arange(2 * 4 * 6 * 3)).reshape(2, 4, 6, 3)
    ours = [tc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    bias = ours[3]
    mask = create_block_mask(causal, None, None, 6, 6, BLOCK_SIZE=2)
    out, lse = flex_attention(*ours[:3], score_mod=lambda s, b, h, i, j: s + bias[h, i, j],
                              block_mask=mask, enable_gqa=True, return_lse=True)  # fmt: skip
    ((out * tc.tensor(weights)).sum() + lse.sum()).backward()
    t_out, t_lse = torch_reference(*theirs, groups=2)
    ((t_out * torch.tensor(weights)).sum() + t_lse.sum()).backward()
    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    for x, t in zip(ours, theirs):
        np.testing.assert_allclose(x.grad.array, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradients_match_finite_differences():
    block = create_block_mask(and_masks(causal, window), 1, 2, 5, 5, BLOCK_SIZE=2)

    def attend(q, k, v):
        return flex_attention(q, k, v, score_mod=alibi, block_mask=block, enable_gqa=True)

    check_grads(attend, normal(1, 2, 5, 3, seed=11), normal(1, 1, 5, 3, seed=12),
                normal(1, 1, 5, 2, seed=13))  # fmt: skip


@pytest.mark.parametrize("block_size", [4, (2, 4), 3])
@pytest.mark.parametrize("sizes", [(None, None, 8, 8), (2, 3, 8, 12)])
def test_block_masks_are_torchs(block_size, sizes):
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx + b >= kv_idx) & (kv_idx - q_idx <= h + 5)

    ours = create_block_mask(mask_mod, *sizes, BLOCK_SIZE=block_size)
    theirs = flex.create_block_mask(mask_mod, *sizes, device="cpu", BLOCK_SIZE=block_size)
    assert ours.shape == theirs.shape and ours.BLOCK_SIZE == tuple(theirs.BLOCK_SIZE)
    assert ours.seq_lengths == tuple(theirs.seq_lengths) and ours.mask_mod is mask_mod
    assert ours.numel() == theirs.numel() and ours.sparsity() == pytest.approx(theirs.sparsity())
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices"):
        np.testing.assert_array_equal(getattr(ours, name).array, host(getattr(theirs, name)))
    np.testing.assert_array_equal(ours.to_dense().array, host(theirs.to_dense()))
    assert repr(ours).startswith(f"BlockMask(shape={ours.shape}, sparsity=")


def test_create_mask_and_the_mask_combinators_are_torchs():
    def shifted(b, h, q_idx, kv_idx):
        return kv_idx == q_idx + h

    def clipped(score, b, h, q_idx, kv_idx):  # -inf where kv_idx > q_idx + b
        return tc.where(kv_idx > q_idx + b, -float("inf"), score)

    def clipped_torch(score, b, h, q_idx, kv_idx):
        return torch.where(kv_idx > q_idx + b, -float("inf"), score)

    cases = [
        (noop_mask, flex.noop_mask),
        (and_masks(causal, shifted), flex.and_masks(causal, shifted)),
        (or_masks(window, shifted), flex.or_masks(window, shifted)),
        (or_masks(), flex.or_masks()),
        (clipped, clipped_torch),
    ]
    for ours, theirs in cases:
        mask = create_mask(ours, 2, 3, 4, 5)
        assert mask.dtype == bool and mask.shape == (2, 3, 4, 5)
        np.testing.assert_array_equal(mask.array, create_mask_torch(theirs))


def create_mask_torch(mod):
    return flex.create_mask(mod, 2, 3, 4, 5, device="cpu").numpy()


def test_refusals_are_torchs():
    q, kv = tc.tensor(normal(1, 4, 4, 8)), tc.tensor(normal(1, 2, 4, 8))
    with pytest.raises(ValueError, match="Try setting enable_gqa=True"):
        flex_attention(q, kv, kv)
    with pytest.raises(ValueError, match="multiple of kv heads"):
        flex_attention(q, tc.tensor(normal(1, 3, 4, 8)), tc.tensor(normal(1, 3, 4, 8)),
                       enable_gqa=True)  # fmt: skip
    with pytest.raises(ValueError, match="same dtype"):
        flex_attention(q, kv.double(), kv.double(), enable_gqa=True)
    with pytest.raises(ValueError, match="Cannot specify both return_lse and return_aux"):
        flex_attention(q, kv, kv, enable_gqa=True, return_lse=True, return_aux=AuxRequest())
    with pytest.raises(ValueError, match="the same batch size"):
        flex_attention(tc.tensor(normal(2, 2, 4, 8)), kv, kv)
    with pytest.raises(NotImplementedError, match="must be 4D"):
        flex_attention(q[0], kv[0], kv[0])
    with pytest.raises(ValueError, match="block_mask was made for"):
        flex_attention(q, kv, kv, enable_gqa=True, block_mask=create_block_mask(causal, 1, 1, 8, 8))
    with pytest.raises(RuntimeError, match="needs a mask_mod"):
        create_block_mask(alibi, 1, 1, 4, 4)
    with pytest.raises(RuntimeError, match="callable"):
        and_masks(causal, 3)


def test_bfloat16_scores_in_float32_and_returns_bfloat16_as_torch():
    q, k, v = normal(1, 2, 6, 8, seed=14), normal(1, 2, 6, 8, seed=15), normal(1, 2, 6, 4, seed=16)
    out = flex_attention(*(tc.tensor(a).to(tc.bfloat16) for a in (q, k, v)), score_mod=alibi)
    expected = flex.flex_attention(*(torch.tensor(a).bfloat16() for a in (q, k, v)),
                                   score_mod=alibi)  # fmt: skip
    assert out.dtype == tc.bfloat16
    np.testing.assert_array_equal(out.float().array, expected.float().numpy())
