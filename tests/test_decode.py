"""Generation's fixed-shape decode step (tricycle.decode): the masked attention over a whole
cache against the eager attention, the device-counted cache against the host-counted one,
and whole generations through the ``Decoder`` against the eager path, greedy and sampled, for
GPT-2 and Llama (grouped-query heads, RoPE). On the CPU the step runs eagerly; the GPU tests
record it as a CUDA graph and compare it with the eager GPU path."""

from dataclasses import replace

import numpy as np
import pytest

from tricycle import backend, decode
from tricycle.attention import KVCache, attend
from tricycle.configs import DebugConfig
from tricycle.models import build_model
from tricycle.tensor import no_grad

GPT2 = DebugConfig(
    embedding_dim=32, context_window=16, vocab_size=50, n_heads=4, n_layers=2, dropout=0.0
)
LLAMA = replace(GPT2, arch="llama", n_kv_heads=2, ffn_multiple_of=16)
CONFIGS = {"gpt2": GPT2, "llama": LLAMA}


def model_of(arch: str):
    np.random.seed(3)
    return build_model(CONFIGS[arch])


def prompt(batch=3, length=5, seed=0):
    return np.random.default_rng(seed).integers(0, GPT2.vocab_size, size=(batch, length))


def prefilled(model, ids, capacity=12):
    """(head, caches holding ``ids``, the greedy first ids, a Decoder from those caches)."""
    head = model._head_matrix(len(ids))
    caches = model.new_caches(len(ids), capacity)
    first = model._last_logits(ids, caches, head).argmax(-1)
    return head, caches, first, decode.Decoder(model, caches, head)


def generate(model, ids, new, captured: bool, monkeypatch, **sampling):
    """``model.generate`` through the Decoder (``captured``) or the eager path."""
    with monkeypatch.context() as patch:
        patch.setattr(decode, "records", lambda caches: captured)
        return model.generate(ids, new, **sampling)


# ====================================================================== the pieces


@pytest.mark.parametrize("T", [1, 3])
def test_masked_attention_over_the_capacity_is_the_causal_attention(T):
    rng = np.random.default_rng(0)
    B, H, C, D, filled = 2, 3, 9, 4, 6  # the queries are positions filled - T ... filled - 1
    q = rng.normal(size=(B, H, T, D))
    keys, values = rng.normal(size=(2, B, H, C, D))  # slots past ``filled`` hold junk
    got = decode.attend_masked(np, q, keys, values, np.arange(filled - T, filled))
    expected = attend(np, q, keys[:, :, :filled], values[:, :, :filled])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert got.shape == (B, T, H, D)


def test_a_device_counted_cache_appends_and_attends_as_the_host_counted_one():
    rng = np.random.default_rng(1)
    B, H, C, D = 2, 2, 8, 4
    host = KVCache(np, B, H, C, D, np.float64)
    host.attend(np, *rng.normal(size=(3, B, H, 2, D)))  # a prefill of two positions
    fixed = decode.FixedKVCache(host)
    assert fixed.host_length is None and fixed.length.tolist() == [2]
    eager = KVCache(np, B, H, C, D, np.float64)
    eager.keys, eager.values = host.keys.copy(), host.values.copy()
    eager.length = 2
    for T in (1, 2, 1):
        q, k, v = rng.normal(size=(3, B, H, T, D))
        np.testing.assert_array_equal(fixed.positions(np, T), eager.positions(np, T))
        np.testing.assert_allclose(fixed.attend(np, q, k, v), eager.attend(np, q, k, v),
                                   rtol=1e-12, atol=1e-12)  # fmt: skip
        assert fixed.length.tolist() == [eager.length]
    np.testing.assert_array_equal(fixed.keys, eager.keys)
    np.testing.assert_array_equal(fixed.values, eager.values)


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_the_decoder_steps_give_the_eager_logits(arch):
    model = model_of(arch)
    ids = prompt()
    with no_grad():
        head, _, first, decoder = prefilled(model, ids)
        eager_caches = model.new_caches(len(ids), 12)
        model._last_logits(ids, eager_caches, head)
        fed = first
        for _ in range(4):
            logits, _ = decoder(fed, greedy=False)
            expected = model._last_logits(fed[:, None], eager_caches, head)
            np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
            fed = expected.argmax(-1)
        _, greedy = decoder(fed, greedy=True)
        np.testing.assert_array_equal(
            greedy, model._last_logits(fed[:, None], eager_caches, head).argmax(-1)
        )


# ====================================================================== whole generations


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_decoded_generation_gives_the_eager_tokens(arch, monkeypatch):
    model = model_of(arch)
    ids = prompt()
    # 24 new tokens from 5 overflow the 16-position window: a re-encode and a new Decoder
    for new, sampling in [
        (24, dict(temperature=0)),
        (9, dict(temperature=0, vocab_limit=20)),
        (24, dict(temperature=0.8, top_k=7)),
    ]:
        eager = generate(model, ids, new, False, monkeypatch,
                         rng=np.random.default_rng(5), **sampling)  # fmt: skip
        decoded = generate(model, ids, new, True, monkeypatch,
                           rng=np.random.default_rng(5), **sampling)  # fmt: skip
        np.testing.assert_array_equal(decoded, eager)
        if "vocab_limit" in sampling:
            assert (decoded[:, 5:] < 20).all()


def test_only_a_device_with_a_graph_runner_decodes_through_the_decoder():
    caches = model_of("gpt2").new_caches(1, 4)
    assert not decode.records(caches)  # numpy: the eager path


# ====================================================================== on a GPU


def _on_gpu(model, dtype: str):
    model.to_gpu()
    if dtype == "bfloat16":  # an inference copy in bfloat16: the KV caches follow the weights
        from tricycle.precision import bfloat16

        for _, tensor in model.named_tensors():
            tensor.array = tensor.array.astype(bfloat16())
    return model


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("arch", list(CONFIGS))
def test_the_captured_decode_step_gives_the_eager_gpu_tokens(arch, dtype, cp, monkeypatch):
    model = _on_gpu(model_of(arch), dtype)
    ids = prompt()
    eager = generate(model, ids, 24, False, monkeypatch, temperature=0)
    captured = generate(model, ids, 24, True, monkeypatch, temperature=0)
    if dtype == "float32":
        np.testing.assert_array_equal(captured, eager)
    else:  # rounding may flip a near tie later on; the first new tokens agree
        np.testing.assert_array_equal(captured[:, :9], eager[:, :9])
    sampled = [generate(model, ids, 12, c, monkeypatch, temperature=0.8, top_k=5,
                        rng=np.random.default_rng(0)) for c in (False, True)]  # fmt: skip
    if dtype == "float32":
        np.testing.assert_array_equal(*sampled)
    assert sampled[1].shape == (3, 17) and (sampled[1] < GPT2.vocab_size).all()


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("arch", list(CONFIGS))
def test_the_decode_step_is_recorded_once_on_a_gpu_and_replayed(arch, cp, monkeypatch):
    model = _on_gpu(model_of(arch), "float32")
    ids = prompt()
    with no_grad():
        _, caches, fed, decoder = prefilled(model, ids)
        assert decode.records(caches)
        steps = [decoder(fed, greedy=True)[1]]
        for _ in range(5):
            steps.append(decoder(steps[-1], greedy=True)[1])
    replay = decoder.run
    assert replay.failure is None and replay.graph is not None, replay.failure
    eager = generate(model, ids, 7, False, monkeypatch, temperature=0)
    np.testing.assert_array_equal(np.stack(steps, axis=1), eager[:, 6:])


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_a_replayed_step_runs_once_a_call_eager_then_recorded(cp):
    from tricycle.backends.cuda.capture import Replayed  # noqa: PLC0415 - a GPU's only

    count, x = cp.zeros(1, dtype=cp.float32), cp.arange(4, dtype=cp.float32)

    def step():
        cp.add(count, 1, out=count)  # state on the device, advanced by every replay
        return x * count  # a new array: from the graph's pool once recorded

    run = Replayed(step)
    got = [run().get().tolist() for _ in range(4)]
    assert got == [[0, n, 2 * n, 3 * n] for n in (1, 2, 3, 4)]
    assert run.failure is None and run.graph is not None and run.eager_calls == 1
