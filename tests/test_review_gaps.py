"""Gaps the second-order review found in first-order code, each against torch (float64).

- ``F.scaled_dot_product_attention`` with a float ``attn_mask`` that requires grad (a learnt
  bias): its gradient is dS summed to the mask's shape (broadcast masks, causal, GQA, hidden
  entries, rows that see no key), also under create_graph; ``nn.MultiheadAttention``'s float
  ``attn_mask`` the same;
- ``F.scaled_dot_product_attention`` on inputs of any batch rank (T, D), (N, T, D),
  (A, B, H, T, D);
- ``clamp``/``clip`` with tensor bounds, and torch's ``min=``/``max=`` keywords on every
  route (crossed bounds give max);
- ``F.embedding``'s and ``nn.Embedding``'s torch arguments (``max_norm``, ``norm_type``,
  ``scale_grad_by_freq``, ``_weight``, ``_freeze``, ``from_pretrained``).
"""

import numpy as np
import pytest

import tricycle
import tricycle.nn.functional as F
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def pair(rng, *shape, grad=True):
    """(tricycle Tensor, torch tensor) of the same float64 normals."""
    x = rng.normal(size=shape)
    return Tensor(x.copy(), requires_grad=grad), torch.tensor(x, requires_grad=grad)


def close(ours, theirs, tol=1e-10):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    ours = ours.array if isinstance(ours, Tensor) else ours
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=tol, atol=tol)


# ------------------------------------------------------------------ sdpa: a learnt mask
MASK_CASES = {  # name: (q heads, kv heads, Tq, Tk, mask shape, causal)
    "full": (2, 2, 3, 4, (2, 2, 3, 4), False),
    "per head": (2, 2, 3, 3, (1, 2, 3, 3), False),
    "one for all": (2, 2, 3, 3, (3, 3), False),
    "row": (2, 2, 3, 3, (3, 1), False),
    "causal": (2, 2, 3, 3, (1, 2, 3, 3), True),
    "causal, Tq < Tk": (2, 2, 2, 4, (2, 4), True),
    "gqa": (4, 2, 3, 3, (1, 4, 3, 3), False),
}


def causal_in_mask(tmask, Tq, Tk):
    """torch refuses attn_mask with is_causal: tricycle's causal=True (query i at position
    i + Tk - Tq sees keys up to it) written into torch's mask instead."""
    seen = torch.ones(Tq, Tk, dtype=torch.bool).tril(Tk - Tq)
    return torch.where(seen, tmask, -torch.inf)


@pytest.mark.parametrize("case", MASK_CASES, ids=list(MASK_CASES))
def test_sdpa_learnt_mask_gradient(case):
    H, Hkv, Tq, Tk, mask_shape, causal = MASK_CASES[case]
    rng = np.random.default_rng(0)
    (q, tq), (k, tk) = pair(rng, 2, H, Tq, 5), pair(rng, 2, Hkv, Tk, 5)
    v, tv = pair(rng, 2, Hkv, Tk, 3)
    mask, tmask = pair(rng, *mask_shape)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, causal=causal)
    effective = causal_in_mask(tmask, Tq, Tk) if causal else tmask
    expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=effective, enable_gqa=H != Hkv)
    close(out, expected)
    weights = rng.normal(size=out.shape)
    (out * Tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv), (mask, tmask)):
        assert ours.grad.shape == tuple(theirs.shape)
        close(ours.grad, theirs.grad)


def test_sdpa_learnt_mask_hidden_entries_and_empty_rows():
    """-inf entries of the mask and a row that sees no key: 0 output and 0 gradients, as
    torch 2.13's."""
    rng = np.random.default_rng(1)
    (q, tq), (k, tk), (v, tv) = (pair(rng, 1, 2, 3, 4) for _ in range(3))
    values = rng.normal(size=(2, 3, 3))
    values[0, 0, :] = -np.inf  # head 0, query 0: sees nothing
    values[1, 2, 1] = -np.inf
    mask, tmask = (
        Tensor(values.copy(), requires_grad=True),
        torch.tensor(values, requires_grad=True),
    )
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask)
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv), (mask, tmask)):
        close(ours.grad, theirs.grad)
    assert not mask.grad[0, 0].any() and mask.grad[1, 2, 1] == 0


def test_sdpa_constant_mask_is_unchanged():
    """A mask that needs no gradient stays data: the node has three inputs, as before."""
    rng = np.random.default_rng(2)
    q = Tensor(rng.normal(size=(1, 1, 2, 3)), requires_grad=True)
    mask = Tensor(rng.normal(size=(2, 2)), requires_grad=False)
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert len(out.args) == 3


def test_sdpa_learnt_mask_under_create_graph():
    """A gradient penalty through attention with a learnt bias: the second derivatives of
    the mask and the queries equal torch's."""
    rng = np.random.default_rng(3)
    (q, tq), (k, tk), (v, tv) = pair(rng, 1, 2, 3, 4), pair(rng, 1, 2, 3, 4), pair(rng, 1, 2, 3, 4)
    mask, tmask = pair(rng, 2, 3, 3)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, causal=True)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=causal_in_mask(tmask, 3, 3))
    (gq,) = tricycle.autograd.grad((out * out).sum(), [q], create_graph=True)
    (tgq,) = torch.autograd.grad((expected * expected).sum(), [tq], create_graph=True)
    close(gq, tgq)
    (gq * gq).sum().backward()
    (tgq * tgq).sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv), (mask, tmask)):
        close(ours.grad, theirs.grad, 1e-9)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_learnt_float_mask(need_weights):
    rng = np.random.default_rng(4)
    E, H, L, S, N = 4, 2, 3, 3, 2
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    ours = tricycle.nn.MultiheadAttention(E, H, batch_first=True).double()
    ours.load_torch_state_dict(theirs.state_dict())
    (x, tx), (mask, tmask) = pair(rng, N, L, E), pair(rng, N * H, L, S)
    padding = np.zeros((N, S))
    padding[1, 0] = -np.inf  # a float key padding mask, as the float attn_mask (torch warns)
    out, _ = ours(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=need_weights)
    expected, _ = theirs(tx, tx, tx, attn_mask=tmask, key_padding_mask=torch.tensor(padding),
                         need_weights=need_weights)  # fmt: skip
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    close(x.grad, tx.grad)
    close(mask.grad, tmask.grad)


# ------------------------------------------------------------------ sdpa: any batch rank
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 2, 2, 3, 4)], ids=str)
def test_sdpa_any_batch_rank_causal(shape):
    rng = np.random.default_rng(6)
    (q, tq), (k, tk), (v, tv) = (pair(rng, *shape) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        close(ours.grad, theirs.grad)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 2, 2, 3, 4)], ids=str)
def test_sdpa_any_batch_rank(shape):
    rng = np.random.default_rng(5)
    (q, tq), (k, tk), (v, tv) = (pair(rng, *shape) for _ in range(3))
    mask, tmask = pair(rng, *shape[:-2], shape[-2], shape[-2])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask)
    assert out.shape == tuple(expected.shape)
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv), (mask, tmask)):
        close(ours.grad, theirs.grad)


def test_sdpa_batch_axes_that_differ_are_refused():
    q = Tensor(np.zeros((2, 1, 1, 3, 4)))
    k = Tensor(np.zeros((1, 2, 1, 3, 4)))
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*same batch axes"):
        F.scaled_dot_product_attention(q, k, k)


# ------------------------------------------------------------------ clamp with tensor bounds
CLAMPS = {  # name: (x shape, min shape or None, max shape or None)
    "both, same shape": ((3, 4), (3, 4), (3, 4)),
    "min, broadcast": ((3, 4), (4,), None),
    "max, broadcast": ((3, 4), None, (3, 1)),
    "bounds wider than x": ((1, 4), (3, 4), (3, 1)),
    "min wider than x": ((4,), (3, 4), None),
    "one-element min": ((3, 4), (1,), (3, 4)),
}


@pytest.mark.parametrize("case", CLAMPS, ids=list(CLAMPS))
@pytest.mark.parametrize("route", ["tricycle.clamp", "Tensor.clamp", "tricycle.clip"])
def test_clamp_tensor_bounds(case, route):
    """Values and the gradients of x and both bounds; some minima above the maxima (the
    result is the max there, as torch's)."""
    rng = np.random.default_rng(7)
    x_shape, low_shape, high_shape = CLAMPS[case]
    x, tx = pair(rng, *x_shape)
    low, tlow = pair(rng, *low_shape) if low_shape else (None, None)
    high, thigh = pair(rng, *high_shape) if high_shape else (None, None)
    if route == "tricycle.clamp":
        out = tricycle.clamp(x, low, high)
    elif route == "Tensor.clamp":
        out = x.clamp(min=low, max=high)
    else:
        out = tricycle.clip(x, low, high)
    expected = torch.clamp(tx, tlow, thigh)
    close(out, expected)
    weights = rng.normal(size=out.shape)
    (out * Tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for ours, theirs in ((x, tx), (low, tlow), (high, thigh)):
        if ours is not None:
            close(ours.grad, theirs.grad)


def test_clamp_tensor_bound_and_number():
    rng = np.random.default_rng(8)
    (x, tx), (low, tlow) = pair(rng, 3, 4), pair(rng, 4)
    out = tricycle.clamp(x, low, 0.5)
    expected = torch.clamp(tx, tlow, torch.tensor(0.5, dtype=torch.float64))
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    close(x.grad, tx.grad)
    close(low.grad, tlow.grad)


def test_clamp_tensor_bounds_under_create_graph():
    rng = np.random.default_rng(9)
    (x, tx), (low, tlow), (high, thigh) = pair(rng, 3, 4), pair(rng, 4), pair(rng, 3, 1)
    (gx,) = tricycle.autograd.grad(
        (tricycle.clamp(x, low, high) ** 3).sum(), [x], create_graph=True
    )
    (tgx,) = torch.autograd.grad((torch.clamp(tx, tlow, thigh) ** 3).sum(), [tx], create_graph=True)
    close(gx, tgx)
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    for ours, theirs in ((x, tx), (low, tlow), (high, thigh)):
        close(ours.grad, theirs.grad)


# ------------------------------------------------------------------ embedding's arguments
@pytest.mark.parametrize(
    "keywords",
    [
        {"max_norm": 1.0},
        {"max_norm": 0.5, "norm_type": 1.0},
        {"scale_grad_by_freq": True},
        {"scale_grad_by_freq": True, "padding_idx": 2, "max_norm": 1.5, "norm_type": 3.0},
    ],
    ids=str,
)
def test_embedding_max_norm_and_scale_grad_by_freq(keywords):
    """F.embedding renormalises the looked-up rows in place (the others untouched) and
    divides each row's gradient by its id's count in the batch, as torch's; nn.Embedding
    takes the same arguments."""
    rng = np.random.default_rng(10)
    ids = np.array([[0, 2, 2], [4, 2, 0]])
    weight, tweight = pair(rng, 6, 3)
    weight.array *= 2  # rows above the norms
    tweight.data *= 2
    out = F.embedding(ids, weight, **keywords)
    expected = TF.embedding(torch.tensor(ids), tweight, **keywords)
    close(out, expected)
    close(weight, tweight)  # the table after the renormalisation
    weights = rng.normal(size=out.shape)
    (out * Tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    close(weight.grad, tweight.grad)


def test_embedding_scale_grad_by_freq_refuses_create_graph():
    """Its scaled gradient is no function's derivative here: refused rather than wrong."""
    weight = Tensor(np.ones((3, 2)), requires_grad=True)
    out = F.embedding(np.array([0, 2, 2]), weight, scale_grad_by_freq=True)
    with pytest.raises(NotImplementedError, match="embedding"):
        tricycle.autograd.grad((out**3).sum(), [weight], create_graph=True)


# ------------------------------------------------------------------ clip/clamp's keywords
CLIP_KEYWORDS = {  # name: (tricycle's call, torch's call)
    "Tensor.clip": (lambda x, **kw: x.clip(**kw), lambda x, **kw: x.clip(**kw)),
    "tricycle.clip": (lambda x, **kw: tricycle.clip(x, **kw), lambda x, **kw: torch.clip(x, **kw)),
    "Tensor.clip_": (lambda x, **kw: (x * 1).clip_(**kw), lambda x, **kw: (x * 1).clip_(**kw)),
    "Tensor.clamp_": (lambda x, **kw: (x * 1).clamp_(**kw), lambda x, **kw: (x * 1).clamp_(**kw)),
    "tricycle.clamp": (
        lambda x, **kw: tricycle.clamp(x, **kw),
        lambda x, **kw: torch.clamp(x, **kw),
    ),
}
BOUNDS = [{"min": -0.5}, {"max": 0.3}, {"min": -0.5, "max": 0.3}, {"min": 0.4, "max": -0.2}]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
@pytest.mark.parametrize("route", CLIP_KEYWORDS, ids=list(CLIP_KEYWORDS))
def test_clip_and_clamp_take_torchs_keywords(route, bounds):
    """min=/max= by keyword on every route, crossed bounds (min > max) giving max as torch's;
    values and gradients."""
    ours_call, torch_call = CLIP_KEYWORDS[route]
    rng = np.random.default_rng(11)
    x, tx = pair(rng, 3, 4)
    out, expected = ours_call(x, **bounds), torch_call(tx, **bounds)
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    close(x.grad, tx.grad)


def test_clip_tensor_bounds_by_keyword():
    rng = np.random.default_rng(12)
    (x, tx), (low, tlow), (high, thigh) = pair(rng, 3, 4), pair(rng, 4), pair(rng, 3, 1)
    out, expected = x.clip(min=low, max=high), tx.clip(min=tlow, max=thigh)
    close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for ours, theirs in ((x, tx), (low, tlow), (high, thigh)):
        close(ours.grad, theirs.grad)


def test_clip_keeps_tricycles_names():
    """low/high still work (low > high stays tricycle's ValueError); both forms at once are
    refused."""
    x = Tensor(np.linspace(-2, 2, 5))
    close(x.clip(low=-1, high=1), np.clip(x.array, -1, 1))
    close(tricycle.clip(x, -1, high=1), np.clip(x.array, -1, 1))
    with pytest.raises(ValueError, match="low=1 must not exceed high=0"):
        x.clip(1, 0)
    with pytest.raises(TypeError, match="clip: give the bounds as low/high or as torch's"):
        x.clip(low=0, min=1)


# ------------------------------------------------------------------ nn.Embedding's arguments
LAYER_KEYWORDS = [
    {},
    {"padding_idx": 2},
    {"max_norm": 1.0},
    {"max_norm": 0.5, "norm_type": 1.0, "padding_idx": -1},
    {"scale_grad_by_freq": True},
    {"max_norm": 1.5, "norm_type": 3.0, "scale_grad_by_freq": True, "padding_idx": 0},
]


@pytest.mark.parametrize("keywords", LAYER_KEYWORDS, ids=str)
def test_nn_embedding_takes_torchs_arguments(keywords):
    """nn.Embedding(V, E, **keywords) with torch's table: outputs, the table after the
    renormalisation and its gradient over two steps (the second lookup sees the renormalised
    rows) equal torch's."""
    rng = np.random.default_rng(13)
    ids = np.array([[0, 2, 2], [5, 2, 0]])
    table = 2 * rng.normal(size=(6, 3))
    layer = tricycle.nn.Embedding(6, 3, _weight=Tensor(table.copy()), **keywords)
    twin = torch.nn.Embedding(6, 3, _weight=torch.tensor(table), **keywords)
    for step in range(2):
        out, expected = layer(ids[step:]), twin(torch.tensor(ids[step:]))
        close(out, expected)
        close(layer.weights, twin.weight)
        weights = rng.normal(size=out.shape)
        (out * Tensor(weights)).sum().backward()
        (expected * torch.tensor(weights)).sum().backward()
        close(layer.weights.grad, twin.weight.grad)
        layer.weights.grad, twin.weight.grad = None, None


def test_nn_embedding_weight_freeze_and_from_pretrained():
    table = np.arange(12.0).reshape(4, 3)
    given = torch.nn.Embedding(4, 3, padding_idx=1, _weight=torch.tensor(table))
    ours = tricycle.nn.Embedding(4, 3, padding_idx=1, _weight=Tensor(table.copy()))
    close(ours.weights, given.weight)  # a given table keeps its padding row, as torch's
    frozen = tricycle.nn.Embedding(4, 3, _freeze=True)
    assert not frozen.weights.requires_grad and not frozen.parameters()[0].requires_grad
    for freeze in (True, False):
        layer = tricycle.nn.Embedding.from_pretrained(Tensor(table.copy()), freeze=freeze,
                                                      max_norm=10.0)  # fmt: skip
        twin = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze,
                                                  max_norm=10.0)  # fmt: skip
        assert layer.weights.requires_grad == twin.weight.requires_grad == (not freeze)
        close(layer(np.array([3, 0])), twin(torch.tensor([3, 0])))
        close(layer.weights, twin.weight)
    with pytest.raises(AssertionError, match=r"expected \(4, 3\), got \(3, 3\)"):
        tricycle.nn.Embedding(4, 3, _weight=Tensor(np.zeros((3, 3))))
    with pytest.raises(AssertionError, match="2-dimensional"):
        tricycle.nn.Embedding.from_pretrained(Tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="sparse=True is not supported"):
        tricycle.nn.Embedding(4, 3, sparse=True)


def test_nn_embedding_still_pickles_under_tricycle_layers():
    """The layer moved to tricycle.embedding_layer; its pickles still name tricycle.layers."""
    import pickle

    layer = tricycle.nn.Embedding(4, 3, max_norm=1.0, scale_grad_by_freq=True)
    assert type(layer).__module__ == "tricycle.layers"
    again = pickle.loads(pickle.dumps(layer))
    assert again.max_norm == 1.0 and again.scale_grad_by_freq
    close(again.weights, layer.weights.array)
    assert "max_norm=1.0, scale_grad_by_freq=True" in repr(layer)
