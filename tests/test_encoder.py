"""The BERT-style encoder: attention layer, block and model against PyTorch twins with copied
weights; the masked-language-model objective; the example's command line."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA_DIR, check_grads

import tricycle
from tricycle.nn.encoder import Encoder, EncoderBlock, EncoderConfig, MultiHeadAttention
from tricycle.nn.mlm import IGNORE, mask_tokens, masked_accuracy, mlm_loss
from tricycle.tensor import Tensor

ROOT = Path(__file__).resolve().parents[1]


def as_float64(layer):
    for _, t in layer.named_tensors():
        t.array = t.array.astype(np.float64)
    return layer


def linear_(torch, linear, dense):
    """Copy a Dense (weights (in, out)) into a torch Linear (weight (out, in))."""
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(dense.weights.array.T))
        linear.bias.copy_(torch.tensor(dense.bias.array))


def norm_(torch, norm, ours):
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(ours.gamma.array))
        norm.bias.copy_(torch.tensor(ours.beta.array))


def attention_(torch, mha, ours: MultiHeadAttention):
    """Copy our q and k|v projections into torch's packed in_proj and out_proj."""
    with torch.no_grad():
        q, kv = ours.q_projection.weights.array, ours.kv_projection.weights.array
        weights = np.concatenate([q, kv], axis=1)
        mha.in_proj_weight.copy_(torch.tensor(weights.T))
        bias = np.concatenate([ours.q_projection.bias.array, ours.kv_projection.bias.array])
        mha.in_proj_bias.copy_(torch.tensor(bias))
    linear_(torch, mha.out_proj, ours.out_projection)


def close(ours, theirs, rtol=1e-9, atol=1e-11):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else theirs
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def padding_of(rng, B, T):
    padding = rng.random((B, T)) > 0.3
    padding[:, 0] = True
    return padding


def test_self_attention_with_padding_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    B, T, E, H = 3, 7, 12, 3
    ours = as_float64(MultiHeadAttention(E, H))
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    attention_(torch, theirs, ours)
    x, padding = rng.normal(size=(B, T, E)), padding_of(rng, B, T)
    dout = rng.normal(size=(B, T, E))

    xt = Tensor(x, requires_grad=True)
    out = ours(xt, padding=padding)
    out.backward(dout)
    tx = torch.tensor(x, requires_grad=True)
    expected, _ = theirs(tx, tx, tx, key_padding_mask=torch.tensor(~padding), need_weights=False)
    expected.backward(torch.tensor(dout))
    close(out.array, expected)
    close(xt.grad.array, tx.grad)
    close(ours.out_projection.weights.grad.array, theirs.out_proj.weight.grad.T)
    in_grad = theirs.in_proj_weight.grad.numpy().T
    close(ours.q_projection.weights.grad.array, in_grad[:, :E])
    close(ours.kv_projection.weights.grad.array, in_grad[:, E:])


def test_cross_attention_matches_torch():
    """Queries (Tq = 4) from x, keys and values from a context of another width (Tk = 6)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    B, Tq, Tk, E, C, H = 2, 4, 6, 8, 5, 2
    ours = as_float64(MultiHeadAttention(E, H, context_dim=C))
    theirs = torch.nn.MultiheadAttention(E, H, kdim=C, vdim=C, batch_first=True,
                                         dtype=torch.float64)  # fmt: skip
    q_w, kv_w = ours.q_projection.weights.array, ours.kv_projection.weights.array
    with torch.no_grad():
        theirs.q_proj_weight.copy_(torch.tensor(q_w.T))
        theirs.k_proj_weight.copy_(torch.tensor(kv_w[:, :E].T))
        theirs.v_proj_weight.copy_(torch.tensor(kv_w[:, E:].T))
        bias = np.concatenate([ours.q_projection.bias.array, ours.kv_projection.bias.array])
        theirs.in_proj_bias.copy_(torch.tensor(bias))
    linear_(torch, theirs.out_proj, ours.out_projection)
    x, context = rng.normal(size=(B, Tq, E)), rng.normal(size=(B, Tk, C))
    padding = padding_of(rng, B, Tk)
    dout = rng.normal(size=(B, Tq, E))

    xt, ct = Tensor(x, requires_grad=True), Tensor(context, requires_grad=True)
    out = ours(xt, ct, padding=padding)
    out.backward(dout)
    tx, tc = torch.tensor(x, requires_grad=True), torch.tensor(context, requires_grad=True)
    expected, _ = theirs(tx, tc, tc, key_padding_mask=torch.tensor(~padding), need_weights=False)
    expected.backward(torch.tensor(dout))
    close(out.array, expected)
    close(xt.grad.array, tx.grad)
    close(ct.grad.array, tc.grad)


def test_attention_gradient_matches_finite_differences():
    """The layer as a whole, causal with a window and grouped key/value heads, in float64."""
    rng = np.random.default_rng(2)
    layer = as_float64(MultiHeadAttention(6, 3, n_kv_heads=1))
    padding = padding_of(rng, 2, 5)
    check_grads(lambda x: layer(x, padding=padding, causal=True, window=2),
                rng.normal(size=(2, 5, 6)))  # fmt: skip


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_block_matches_torch(norm):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    B, T, E, H = 2, 6, 8, 2
    ours = as_float64(EncoderBlock(E, H, expansion_ratio=2, norm=norm))
    theirs = torch.nn.TransformerEncoderLayer(
        E, H, dim_feedforward=2 * E, dropout=0.0, activation="gelu", batch_first=True,
        norm_first=norm == "pre", dtype=torch.float64,
    )  # fmt: skip
    attention_(torch, theirs.self_attn, ours.attention)
    linear_(torch, theirs.linear1, ours.mlp.up_projection)
    linear_(torch, theirs.linear2, ours.mlp.down_projection)
    norm_(torch, theirs.norm1, ours.layer_norm_1)
    norm_(torch, theirs.norm2, ours.layer_norm_2)
    x, padding = rng.normal(size=(B, T, E)), padding_of(rng, B, T)
    dout = rng.normal(size=(B, T, E))

    xt = Tensor(x, requires_grad=True)
    out = ours(xt, padding)
    out.backward(dout)
    tx = torch.tensor(x, requires_grad=True)
    expected = theirs(tx, src_key_padding_mask=torch.tensor(~padding))
    expected.backward(torch.tensor(dout))
    close(out.array, expected)
    close(xt.grad.array, tx.grad)
    pairs = [
        (ours.mlp.up_projection.weights, theirs.linear1.weight, True),
        (ours.mlp.down_projection.bias, theirs.linear2.bias, False),
        (ours.layer_norm_1.gamma, theirs.norm1.weight, False),
        (ours.layer_norm_2.beta, theirs.norm2.bias, False),
        (ours.attention.out_projection.weights, theirs.self_attn.out_proj.weight, True),
    ]
    for param, twin, transposed in pairs:
        grad = twin.grad.numpy()
        close(param.grad.array, grad.T if transposed else grad)


def small_config(**overrides):
    values = dict(vocab_size=20, context_window=8, embedding_dim=8, n_heads=2, n_layers=2,
                  dropout=0.0, n_segments=2)  # fmt: skip
    return EncoderConfig(**(values | overrides))


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_padding_does_not_change_the_real_tokens(norm):
    model = Encoder(small_config(norm=norm))
    ids = np.array([[1, 5, 6, 7, 0, 0], [1, 8, 9, 0, 0, 0]])
    longer = np.concatenate([ids, np.zeros((2, 2), dtype=ids.dtype)], axis=1)
    a, b = model(ids).array, model(longer).array
    np.testing.assert_allclose(a[0, :4], b[0, :4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[1, :3], b[1, :3], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_encoder_heads_and_tied_decoder(pooling):
    model = Encoder(small_config(pooling=pooling, n_classes=3))
    ids = np.array([[1, 5, 6, 7, 0], [1, 8, 9, 10, 11]])
    hidden = model(ids, segments=np.array([[0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]))
    assert hidden.shape == (2, 5, 8)
    chosen = np.array([[0, 1, 0, 1, 0], [0, 0, 1, 0, 0]], dtype=bool)
    logits = model.mlm_logits(hidden, chosen)
    assert logits.shape == (3, 20)
    np.testing.assert_allclose(logits.array, model.mlm_logits(hidden).array[chosen], rtol=1e-5)
    (logits.sum() + model.classify(ids).sum()).backward()
    assert model.classify(ids).shape == (2, 3)
    assert model.token_embedding.weights.grad is not None  # the tied decoder and the input


def test_encoder_gradient_matches_finite_differences():
    """Through the whole model, with respect to the token embedding (tied to the decoder)."""
    tricycle.manual_seed(0)
    model = as_float64(Encoder(small_config(n_layers=1, pooling="mean")))
    ids = np.array([[1, 5, 6, 0], [1, 8, 9, 10]])
    chosen = np.array([[0, 1, 1, 0], [1, 0, 0, 1]], dtype=bool)

    def f(weights):
        model.token_embedding.weights = weights
        hidden = model(ids)
        return model.mlm_logits(hidden, chosen).sum() * model.pool(hidden, ids != 0).sum()

    check_grads(f, model.token_embedding.weights.array)


def test_config_checks():
    with pytest.raises(ValueError, match="divisible"):
        EncoderConfig(embedding_dim=10, n_heads=3)
    with pytest.raises(ValueError, match="norm"):
        EncoderConfig(norm="middle")


# ------------------------------------------------------------------ the objective


def test_masking_picks_fifteen_percent_eighty_ten_ten():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, size=(400, 250))
    ids[:, 0], ids[:, -20:] = 1, 0  # [CLS] and padding are never chosen
    inputs, labels = mask_tokens(ids, mask_id=4, vocab_size=100, special_ids=(0, 1), rng=rng)
    chosen = labels != IGNORE
    ordinary = (ids != 0) & (ids != 1)
    assert not chosen[~ordinary].any() and (inputs[~ordinary] == ids[~ordinary]).all()
    assert abs(chosen.sum() / ordinary.sum() - 0.15) < 0.005
    np.testing.assert_array_equal(labels[chosen], ids[chosen])
    masked = (inputs == 4) & chosen
    kept = (inputs == ids) & chosen
    assert abs(masked.sum() / chosen.sum() - 0.8) < 0.01
    # a random token equals the original 1 time in 95: kept is 10% plus that
    assert abs(kept.sum() / chosen.sum() - (0.1 + 0.1 / 95)) < 0.01
    assert (inputs[~chosen] == ids[~chosen]).all()
    assert not np.isin(inputs[chosen & ~masked], [0, 1, 4]).any()  # never a special token


def test_masking_is_seeded_by_tricycle():
    ids = np.arange(5, 105).reshape(4, 25)
    tricycle.manual_seed(7)
    first = mask_tokens(ids, 4, 105)
    tricycle.manual_seed(7)
    second = mask_tokens(ids, 4, 105)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_loss_ignores_unchosen_positions():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 7))
    labels = np.full((3, 5), IGNORE)
    labels[0, 1], labels[2, 4] = 3, 6
    x = Tensor(logits, requires_grad=True)
    loss = mlm_loss(x, labels)
    loss.backward()
    chosen = labels != IGNORE
    assert (x.grad.array[~chosen] == 0).all() and (x.grad.array[chosen] != 0).all()
    changed = logits.copy()
    changed[~chosen] = rng.normal(size=changed[~chosen].shape)
    np.testing.assert_allclose(mlm_loss(Tensor(changed), labels).item(), loss.item())
    expected = -np.mean([logits[0, 1, 3] - np.log(np.exp(logits[0, 1]).sum()),
                         logits[2, 4, 6] - np.log(np.exp(logits[2, 4]).sum())])  # fmt: skip
    np.testing.assert_allclose(loss.item(), expected)
    # one chosen position right by construction, the other wrong; the 13 others do not count
    rigged = logits.copy()  # (3, 5, 7)
    rigged[0, 1, 3] = rigged[0, 1].max() + 1  # the top logit is the label
    rigged[2, 4, 6] = rigged[2, 4].min() - 1  # the label's logit is the lowest
    assert masked_accuracy(rigged, labels) == 0.5


# ------------------------------------------------------------------ the example


def test_example_help_and_a_tiny_seeded_run():
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "bert_mlm.py"), "--help"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert "--pretrain-steps" in result.stdout
    if not (DATA_DIR / "tinyshakespeare.txt").exists():
        pytest.skip("no tinyshakespeare.txt")
    sys.path.insert(0, str(ROOT / "examples"))
    import bert_mlm

    tiny = ["--data-dir", str(DATA_DIR), "--python-bytes", "300000", "--embedding-dim", "16",
            "--n-layers", "1", "--pretrain-steps", "3", "--pretrain-batch", "8",
            "--finetune-steps", "2", "--finetune-batch", "4", "--finetune-examples", "8",
            "--test-lines", "16", "--curve-interval", "1"]  # fmt: skip
    assert bert_mlm.main(tiny) == bert_mlm.main(tiny)
