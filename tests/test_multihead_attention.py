"""``nn.MultiheadAttention`` against ``torch.nn.MultiheadAttention`` with the same weights
(loaded with ``load_torch_state_dict``), in float64: outputs, attention weights and the
gradients of the inputs and of every parameter, over the layouts, self- and
cross-attention, the masks and the arguments; finite differences; dropout; bad input."""

import copy

import numpy as np
import pytest
from helpers import check_grads, same_on_host_and
from hypothesis import given
from hypothesis import strategies as st

import tricycle
import tricycle.nn as nn
from tricycle.nn.multihead import MultiheadAttention
from tricycle.tensor import Tensor

E, H, N, L, S = 8, 2, 3, 4, 5


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def as_float64(layer):
    for _, t in layer.named_tensors():
        t.array = t.array.astype(np.float64)
    return layer


def twins(torch, **kwargs):
    """(ours, torch's) with torch's random weights in both, in float64."""
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **kwargs)
    ours = as_float64(MultiheadAttention(E, H, **kwargs)).load_torch_state_dict(theirs.state_dict())
    return ours, theirs


def close(ours, theirs, rtol=1e-10, atol=1e-12, **kwargs):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else theirs
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, **kwargs)


def masks(rng, kind: str | None, shape):
    """A mask of torch's meaning; bool: True hides (never key 0, so no row hides every key)."""
    if kind is None:
        return None
    if kind == "bool":
        mask = rng.random(shape) < 0.4
        mask[..., 0] = False
        return mask
    return rng.normal(size=shape)  # float: added to the scores


def to_torch(torch, kwargs: dict) -> dict:
    """The arrays among ``kwargs`` as torch tensors."""
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def compare(torch, ours, theirs, query, key, value, rng, torch_kwargs=None, **kwargs):
    """Run both on the same inputs (the same Tensor thrice for self-attention); check the
    outputs, the weights and, after a backward from random upstream gradients through both,
    the gradients of the distinct inputs and of every parameter."""
    ours_in = {id(a): Tensor(a, requires_grad=True) for a in (query, key, value)}
    theirs_in = {id(a): torch.tensor(a, requires_grad=True) for a in (query, key, value)}
    out, weights = ours(*(ours_in[id(a)] for a in (query, key, value)), **kwargs)
    if torch_kwargs is None:
        torch_kwargs = to_torch(torch, kwargs)
    t_out, t_weights = theirs(*(theirs_in[id(a)] for a in (query, key, value)), **torch_kwargs)
    close(out.array, t_out)
    assert (weights is None) == (t_weights is None)
    loss, t_loss = 0, 0
    for mine, their in ((out, t_out), (weights, t_weights)):
        if mine is not None:
            close(mine.array, their)
            upstream = rng.normal(size=mine.shape)
            loss = loss + (mine * upstream).sum()
            t_loss = t_loss + (their * torch.tensor(upstream)).sum()
    loss.backward()
    t_loss.backward()
    for i in ours_in:
        close(ours_in[i].grad.array, theirs_in[i].grad, rtol=1e-9, atol=1e-11)
    # torch's parameter gradients in our names and layouts: loaded as the weights of a copy
    grads = copy.deepcopy(ours).load_torch_state_dict(
        {name: p.grad for name, p in theirs.named_parameters()}
    )
    for name, p in ours.named_parameters():
        close(p.grad.array, grads.state_dict()[name], rtol=1e-9, atol=1e-11, err_msg=name)
    return out, weights


CASES = {  # id: (constructor arguments, forward's: self-attention, masks, is_causal, average)
    "self-attention": ({}, dict(same=True)),
    "batch-first-padding": ({"batch_first": True}, dict(same=True, padding="bool")),
    "cross-bool-mask": ({}, dict(attn_mask="bool")),
    "cross-float-masks-per-head": ({}, dict(attn_mask="float-heads", padding="float")),
    "causal": ({}, dict(same=True, is_causal=True)),
    "causal-padding-batch-first": ({"batch_first": True}, dict(same=True, is_causal=True,
                                                               padding="bool")),
    "weights-per-head": ({}, dict(attn_mask="bool", average=False)),
    "kdim-vdim": ({"kdim": 3, "vdim": 5}, dict(padding="bool")),
    "bias-kv-zero-attn": ({"add_bias_kv": True, "add_zero_attn": True},
                          dict(padding="bool", attn_mask="bool")),
    "no-bias": ({"bias": False}, dict(attn_mask="float")),
}  # fmt: skip


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_matches_torch(torch, case, need_weights):
    arguments, call = CASES[case]
    rng = np.random.default_rng(len(case))
    ours, theirs = twins(torch, **arguments)
    batch_first = arguments.get("batch_first", False)
    Tk = L if call.get("same") else S

    def inputs(T, width):
        return rng.normal(size=(N, T, width) if batch_first else (T, N, width))

    query = inputs(L, E)
    key = query if call.get("same") else inputs(Tk, arguments.get("kdim", E))
    value = query if call.get("same") else inputs(Tk, arguments.get("vdim", E))
    attn_mask = call.get("attn_mask")
    heads = attn_mask and attn_mask.endswith("heads")
    kwargs = dict(
        key_padding_mask=masks(rng, call.get("padding"), (N, Tk)),
        attn_mask=masks(rng, attn_mask and attn_mask.split("-")[0],
                        (N * H, L, Tk) if heads else (L, Tk)),
        need_weights=need_weights,
        average_attn_weights=call.get("average", True),
    )  # fmt: skip
    torch_kwargs = None
    if call.get("is_causal"):  # torch wants the causal mask given with its hint
        causal = torch.triu(torch.ones(L, Tk, dtype=torch.bool), diagonal=1)
        torch_kwargs = to_torch(torch, kwargs)
        torch_kwargs.update(attn_mask=causal, is_causal=True)
        kwargs["is_causal"] = True
    out, weights = compare(torch, ours, theirs, query, key, value, rng, torch_kwargs, **kwargs)
    assert out.shape == query.shape
    extra = arguments.get("add_bias_kv", 0) + arguments.get("add_zero_attn", 0)
    if need_weights:
        per_head = (H,) if not kwargs["average_attn_weights"] else ()
        assert weights.shape == (N, *per_head, L, Tk + extra)
        np.testing.assert_allclose(weights.array.sum(axis=-1), 1.0, rtol=1e-12)
    if call.get("is_causal"):  # the hint and the mask together: the same
        again, _ = ours(query, key, value, **{**kwargs, "attn_mask": causal.numpy()})
        close(again.array, out.array)


@given(
    sizes=st.tuples(*[st.integers(1, 3)] * 5),  # batch, queries, keys, heads, head size
    batch_first=st.booleans(),
    need_weights=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_shapes_match_torch(sizes, batch_first, need_weights, seed):
    torch = pytest.importorskip("torch")
    (n, tq, tk, h, d), rng = sizes, np.random.default_rng(seed)
    theirs = torch.nn.MultiheadAttention(h * d, h, batch_first=batch_first, dtype=torch.float64)
    ours = as_float64(MultiheadAttention(h * d, h, batch_first=batch_first))
    ours.load_torch_state_dict(theirs.state_dict())
    query, key = (
        rng.normal(size=(n, t, h * d) if batch_first else (t, n, h * d)) for t in (tq, tk)
    )
    compare(torch, ours, theirs, query, key, key.copy(), rng,
            key_padding_mask=masks(rng, "bool", (n, tk)), need_weights=need_weights)  # fmt: skip


@pytest.mark.parametrize("need_weights", [True, False])
def test_unbatched_matches_torch(torch, need_weights):
    rng = np.random.default_rng(1)
    ours, theirs = twins(torch, add_bias_kv=True)
    query, key = rng.normal(size=(L, E)), rng.normal(size=(S, E))
    kwargs = dict(key_padding_mask=masks(rng, "bool", (S,)),
                  attn_mask=masks(rng, "bool", (H, L, S)), need_weights=need_weights)  # fmt: skip
    out, weights = compare(torch, ours, theirs, query, key, key, rng, **kwargs)
    assert out.shape == (L, E)
    assert weights is None if not need_weights else weights.shape == (L, S + 1)


def test_a_query_that_sees_no_key_gets_zeros(torch):
    """torch's weighted path gives NaN there; ours zero weights and a zero attention output
    (so the layer's output is the output projection's bias), and finite gradients."""
    rng = np.random.default_rng(2)
    ours, _ = twins(torch, batch_first=True)
    x = Tensor(rng.normal(size=(2, L, E)), requires_grad=True)
    padding = np.zeros((2, L), dtype=bool)
    padding[1] = True  # every key of the second sequence hidden
    for need_weights in (True, False):
        out, weights = ours(x, x, x, key_padding_mask=padding, need_weights=need_weights)
        np.testing.assert_allclose(out.array[1], np.broadcast_to(ours.out_projection.bias.array,
                                                                 (L, E)))  # fmt: skip
        if need_weights:
            assert (weights.array[1] == 0).all() and np.isfinite(weights.array).all()
        out.sum().backward()
        assert np.isfinite(x.grad.array).all()
        x.grad = None


def test_gradients_match_finite_differences():
    layer = as_float64(MultiheadAttention(4, 2, add_bias_kv=True, kdim=3, batch_first=True))
    rng = np.random.default_rng(3)
    padding = np.array([[False, False, True], [False, True, False]])
    attn_mask = rng.normal(size=(2, 3))
    for part in (0, 1):  # the output, then the (per-head) weights
        check_grads(lambda q, k, v: layer(q, k, v, key_padding_mask=padding, attn_mask=attn_mask,
                                          is_causal=True, average_attn_weights=False)[part],
                    rng.normal(size=(2, 2, 4)), rng.normal(size=(2, 3, 3)),
                    rng.normal(size=(2, 3, 4)))  # fmt: skip


def test_state_and_parameters_as_torch(torch):
    ours, theirs = twins(torch, add_bias_kv=True, kdim=3)
    assert nn.MultiheadAttention is MultiheadAttention
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    assert list(ours.state_dict()) == [
        "bias_k", "bias_v", "q_projection.weights", "q_projection.bias", "k_projection.weights",
        "k_projection.bias", "v_projection.weights", "v_projection.bias",
        "out_projection.weights", "out_projection.bias",
    ]  # fmt: skip
    close(ours.k_projection.weights.array, theirs.k_proj_weight.detach().numpy().T)
    close(ours.bias_v.array, theirs.bias_v.detach().numpy().reshape(-1))
    packed = twins(torch)[0]
    close(packed.v_projection.bias.array, theirs.in_proj_bias.detach().numpy()[2 * E :])


# ---------------------------------------------------------------------- dropout
def test_dropout_is_off_in_eval_mode_as_torch(torch):
    rng = np.random.default_rng(4)
    ours, theirs = twins(torch, dropout=0.5)
    ours.eval()
    theirs.eval()
    query, key = rng.normal(size=(L, N, E)), rng.normal(size=(S, N, E))
    compare(torch, ours, theirs, query, key, key, rng)


def test_dropout_in_training_is_seeded_and_inverted():
    x = Tensor(np.random.default_rng(5).normal(size=(4, 16, E)).astype(np.float32))
    tricycle.manual_seed(1)
    layer = MultiheadAttention(E, H, dropout=0.5, batch_first=True)
    _, dropped = layer(x, x, x, average_attn_weights=False)
    out, _ = layer(x, x, x, need_weights=False)  # the fused path
    tricycle.manual_seed(1)
    twin = MultiheadAttention(E, H, dropout=0.5, batch_first=True)
    _, again = twin(x, x, x, average_attn_weights=False)
    np.testing.assert_array_equal(dropped.array, again.array)  # the same seed: the same masks
    np.testing.assert_array_equal(out.array, twin(x, x, x, need_weights=False)[0].array)

    layer.eval()
    expected, probs = layer(x, x, x, average_attn_weights=False)
    kept = dropped.array != 0
    assert dropped.shape == (4, H, 16, 16) and out.shape == expected.shape == (4, 16, E)
    assert 0.45 < 1 - kept.mean() < 0.55  # about half dropped
    np.testing.assert_allclose(dropped.array[kept], probs.array[kept] / 0.5, rtol=1e-6)
    assert not np.allclose(out.array, expected.array)


# ---------------------------------------------------------------------- on every backend
def test_on_the_device(xp):
    rng = np.random.default_rng(6)
    layer = MultiheadAttention(E, H, add_zero_attn=True, kdim=3, vdim=3)
    query, key = rng.normal(size=(L, N, E)), rng.normal(size=(S, N, 3))
    padding, attn_mask = masks(rng, "bool", (N, S)), masks(rng, "float", (L, S))

    def run(array_module):
        def on(a, dtype=np.float32):
            return Tensor(array_module.asarray(a.astype(dtype)))

        out, weights = layer(on(query), on(key), on(key), key_padding_mask=on(padding, bool),
                             attn_mask=on(attn_mask))  # fmt: skip
        (out.sum() + weights.sum()).backward()
        return out

    same_on_host_and(xp, layer, run, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- bad input
def test_bad_arguments():
    with pytest.raises(ValueError, match="embed_dim=10 must be divisible by num_heads=3"):
        MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="MultiheadAttention: dropout must be"):
        MultiheadAttention(8, 2, dropout=1.5)
    with pytest.raises(TypeError, match="MultiheadAttention: kdim must be None or an integer"):
        MultiheadAttention(8, 2, kdim=2.5)
    layer = MultiheadAttention(E, H, kdim=3)
    x, k = np.ones((L, N, E), np.float32), np.ones((S, N, 3), np.float32)
    with pytest.raises(TypeError, match="MultiheadAttention.forward: need_weights must be"):
        layer(x, k, k, need_weights="yes")


@pytest.mark.parametrize(
    ("query", "key", "value"),
    [
        ((L, N, 7), (S, N, 3), (S, N, E)),  # the query's width is not embed_dim
        ((L, N, E), (S, N, E), (S, N, E)),  # the key's is not kdim
        ((L, N, E), (S, N, 3), (S + 1, N, E)),  # keys and values of different lengths
        ((L, N, E), (S, N + 1, 3), (S, N + 1, E)),  # another batch
        ((L, N, E), (S, 3), (S, E)),  # batched queries, unbatched keys
        ((2, L, N, E), (2, S, N, 3), (2, S, N, E)),  # four axes
        ((0, N, E), (S, N, 3), (S, N, E)),  # empty
    ],
)
def test_wrong_shapes_are_named(query, key, value):
    layer = MultiheadAttention(E, H, kdim=3)
    inputs = [np.ones(shape, np.float32) for shape in (query, key, value)]
    expected = r"expected query \(L, N, 8\), key \(S, N, 3\) and value \(S, N, 8\)"
    with pytest.raises(ValueError, match=expected):
        layer(*inputs)


def test_wrong_masks_are_named():
    layer = MultiheadAttention(E, H, batch_first=True)
    x = np.ones((N, L, E), np.float32)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(3, 4\)"):
        layer(x, x, x, key_padding_mask=np.zeros((N, L + 1), bool))
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(4, 4\) or \(6, 4, 4\)"):
        layer(x, x, x, attn_mask=np.zeros((H, L, L), bool))
    with pytest.raises(TypeError, match="attn_mask must hold booleans or floats, got dtype int"):
        layer(x, x, x, attn_mask=np.zeros((L, L), int))
    with pytest.raises(TypeError, match="MultiheadAttention: needs a floating tensor"):
        layer(x.astype(int), x, x)


def test_bad_torch_state_is_refused(torch):
    theirs = torch.nn.MultiheadAttention(E, H)
    state = theirs.state_dict()
    layer = MultiheadAttention(E, H)
    with pytest.raises(ValueError, match=r"unexpected keys \['bias_q'\]"):
        layer.load_torch_state_dict({**state, "bias_q": state["out_proj.bias"]})
    with pytest.raises(ValueError, match=r"in_proj_weight must be \(24, 8\), got \(8, 8\)"):
        layer.load_torch_state_dict({**state, "in_proj_weight": state["out_proj.weight"]})
    with pytest.raises(ValueError, match="missing keys"):
        layer.load_torch_state_dict({k: v for k, v in state.items() if k != "out_proj.bias"})
    with pytest.raises(ValueError, match="shape mismatch"):  # kdim=3: torch packs (E, E) k
        MultiheadAttention(E, H, kdim=3).load_torch_state_dict(state)
