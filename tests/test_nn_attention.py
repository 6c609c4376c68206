"""torch.nn.attention on tricycle (``tricycle.nn.attention``): ``SDPBackend`` has torch's
members and values, ``sdpa_kernel`` is a block that checks its arguments as torch's and
restores the choice, the causal biases of ``bias`` are torch's masks, and
``F.scaled_dot_product_attention`` gives torch's outputs and gradients with them and with
torch's ``is_causal=True`` when queries and keys differ in length (the upper-left triangle)."""

import warnings

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn.functional as F
from tricycle.nn.attention import SDPBackend, current_backends, sdpa_kernel
from tricycle.nn.attention.bias import (
    CausalBias,
    CausalVariant,
    causal_lower_right,
    causal_upper_left,
)

torch = pytest.importorskip("torch")
from torch.nn.attention import bias as torch_bias  # noqa: E402


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def test_sdp_backend_members_are_torchs():
    from torch.nn.attention import SDPBackend as TorchBackend

    assert [(m.name, int(m)) for m in SDPBackend] == [
        (name, int(value)) for name, value in TorchBackend.__members__.items()
    ]


def test_sdpa_kernel_records_the_choice_for_its_block_and_restores_it():
    everything = current_backends()
    assert SDPBackend.ERROR not in everything and SDPBackend.MATH in everything
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION) as chosen:
        assert chosen == {} and current_backends() == [SDPBackend.FLASH_ATTENTION]
        order = [SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]
        with sdpa_kernel(order, set_priority=True):
            assert current_backends() == [SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH]
        assert current_backends() == [SDPBackend.FLASH_ATTENTION]
        q = tc.tensor(normal(1, 2, 3, 4))
        expected = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    np.testing.assert_allclose(
        expected.array, F.scaled_dot_product_attention(q, q, q, is_causal=True).array
    )
    assert current_backends() == everything


@pytest.mark.parametrize("wrong", ["math", (SDPBackend.MATH,), 0])
def test_sdpa_kernel_refuses_what_torch_refuses(wrong):
    from torch.nn.attention import sdpa_kernel as torch_kernel

    for kernel in (sdpa_kernel, torch_kernel):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with kernel(wrong):
                pass


@pytest.mark.parametrize("size", [(3, 5), (4, 4), (5, 3), (1, 6)])
def test_causal_biases_are_torchs_masks(size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lower right with more queries than keys warns
        for ours, theirs in ((causal_upper_left, torch_bias.causal_upper_left),
                             (causal_lower_right, torch_bias.causal_lower_right)):  # fmt: skip
            bias, expected = ours(*size), theirs(*size)
            assert isinstance(bias, CausalBias) and isinstance(bias, tc.Tensor)
            assert int(bias.variant) == int(expected.variant)
            assert (bias.seq_len_q, bias.seq_len_kv) == size
            mask = bias._materialize()
            assert type(mask) is tc.Tensor and mask.dtype == bool
            np.testing.assert_array_equal(mask.array, expected._materialize().numpy())
            assert type(bias & mask) is tc.Tensor  # ops on a bias give plain tensors


def test_causal_bias_refusals_and_warning():
    with pytest.warns(UserWarning, match="Lower right causal bias will produce NaNs"):
        causal_lower_right(5, 3)
    with pytest.raises(AssertionError, match="only supports 2D"):
        causal_upper_left(1, 2, 3)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant"):
        CausalBias(1, 2, 3)
    q = tc.tensor(normal(1, 1, 2, 4))
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=causal_upper_left(2, 2), is_causal=True)
    assert int(CausalVariant.UPPER_LEFT) == 1 and int(CausalVariant.LOWER_RIGHT) == 2


def _torch_empty_rows_are_nan() -> bool:
    """Whether this torch's sdpa gives NaN for a query that sees no key (older versions did;
    torch 2.13 gives 0, as tricycle)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lower right with more queries than keys warns
        q = torch.ones(1, 1, 2, 1, dtype=torch.float64)
        mask = torch_bias.causal_lower_right(2, 1)
        out = torch.nn.functional.scaled_dot_product_attention(q, q[:, :, :1], q[:, :, :1],
                                                               attn_mask=mask)  # fmt: skip
    return bool(out.isnan().any())


def _attend(lib, q, k, v, **kwargs):
    qs = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = lib.nn.functional.scaled_dot_product_attention(*qs, **kwargs)
    (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(out.shape))).sum().backward()
    grads = [(x.grad.array if lib is tc else x.grad.numpy()) for x in qs]
    return (out.array if lib is tc else out.detach().numpy()), grads


@pytest.mark.parametrize("lengths", [(3, 5), (5, 3), (4, 4)])
@pytest.mark.parametrize("how", ["is_causal", "upper_left", "lower_right", "is_causal+mask"])
def test_sdpa_causal_alignments_give_torchs_outputs_and_gradients(lengths, how):
    Tq, Tk = lengths
    q, k, v = normal(2, 2, Tq, 4, seed=1), normal(2, 2, Tk, 4, seed=2), normal(2, 2, Tk, 3, seed=3)
    if how == "lower_right" and Tq > Tk and _torch_empty_rows_are_nan():
        pytest.skip("this torch's rows that see no key are NaN, tricycle's 0 (torch 2.13: 0)")
    results = []
    torch_biases = (torch_bias.causal_upper_left, torch_bias.causal_lower_right)
    for lib, biases in ((tc, (causal_upper_left, causal_lower_right)), (torch, torch_biases)):
        kwargs = {"is_causal": True}
        if how in ("upper_left", "lower_right"):
            kwargs = {"attn_mask": biases[how == "lower_right"](Tq, Tk)}
        elif how == "is_causal+mask":  # tricycle keeps both; torch asks for one: hide by hand
            kwargs = {"attn_mask": lib.tensor(np.arange(Tk) != 1)}
            if lib is torch:
                kwargs = {
                    "attn_mask": lib.tensor(np.tri(Tq, Tk, dtype=bool) & (np.arange(Tk) != 1))
                }
            else:
                kwargs["is_causal"] = True
        results.append(_attend(lib, q, k, v, **kwargs))
    (out, grads), (expected, expected_grads) = results
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    for g, e in zip(grads, expected_grads):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
