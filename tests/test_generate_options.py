"""GPT.generate with transformers' options (tricycle.generation, decode_processors,
decode_beam): greedy decoding with a repetition penalty, n-gram bans and end ids, beam search
(beams, length penalties, early stopping, several sequences) and sampling with one sequence
per draw give transformers' tokens, from tiny random GPT-2 and Llama models that transformers
saves and tricycle loads (both computing in float64); the sampling distributions after every
processor are transformers' logits processors' numbers; beams through the KV cache, without
it and through the fixed-shape decode step agree; bad options are refused by name. No
network."""

import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import backend, decode
from tricycle.configs import DebugConfig
from tricycle.decode_processors import (
    NextToken,
    ban_early_ends,
    ban_repeated_ngrams,
    penalise_repetitions,
    probabilities,
    warp,
)
from tricycle.models import GPT, build_model
from tricycle.random import manual_seed

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
from transformers.generation import logits_process as lp  # noqa: E402

VOCAB, WINDOW, PAD = 61, 64, 59


def their_model(arch: str):
    """A random model of transformers (float64), without end or pad ids of its own: every
    test says its own, to both sides."""
    torch.manual_seed(0)
    ids = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None, initializer_range=0.3)
    if arch == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=VOCAB, n_positions=WINDOW, n_embd=32, n_layer=2, n_head=4,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **ids,
        )  # fmt: skip
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=WINDOW,
            rope_theta=500.0, rms_norm_eps=1e-5, **ids,
        )  # fmt: skip
        model = transformers.LlamaForCausalLM(config)
    return model.eval()


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def models(request, tmp_path_factory):
    """(their model, ours loaded from what they saved), both in float64."""
    theirs = their_model(request.param)
    directory = tmp_path_factory.mktemp(request.param)
    theirs.save_pretrained(directory)
    ours = GPT.from_pretrained(directory)
    for _, tensor in ours.named_tensors():
        tensor.array = tensor.array.astype(np.float64)
    return theirs.double(), ours


def prompts(batch=3, length=4, seed=1):
    return np.random.default_rng(seed).integers(0, VOCAB, size=(batch, length))


def their_generate(model, prompt, new, **options) -> np.ndarray:
    ids = torch.tensor(prompt)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                             **options)  # fmt: skip
    return out.numpy()


def same(ours, theirs, options):
    assert ours.shape == theirs.shape, (options, ours, theirs)
    np.testing.assert_array_equal(ours, theirs, err_msg=str(options))


# ====================================================================== greedy and sampled rows


def frequent_ids(model, prompt) -> list[int]:
    """The two ids the model chooses most often after ``prompt``: end ids that end rows."""
    ids, counts = np.unique(model.generate(prompt, 10, do_sample=False)[:, 4:], return_counts=True)
    return ids[np.argsort(-counts, kind="stable")[:2]].tolist()


def greedy_options(a: int, b: int) -> list[dict]:
    return [
        {},
        dict(repetition_penalty=1.5),
        dict(repetition_penalty=0.6),
        dict(no_repeat_ngram_size=2),
        dict(no_repeat_ngram_size=1, repetition_penalty=1.2),
        dict(no_repeat_ngram_size=3, eos_token_id=[a, b]),
        dict(eos_token_id=a),  # the rows that end repeat their end id (transformers' pad)
        dict(eos_token_id=[b, a], pad_token_id=PAD, repetition_penalty=1.3),
        dict(temperature=0.3, top_k=2, top_p=0.5, min_p=0.2),  # greedy: no sampling options act
        dict(eos_token_id=a, min_new_tokens=6),
        dict(eos_token_id=[b, a], min_length=9, repetition_penalty=1.3),  # 5 new after 4
        dict(eos_token_id=[a, b], min_new_tokens=3, min_length=12),  # min_new_tokens rules
    ]


def test_greedy_decoding_with_processors_and_end_ids_gives_their_tokens(models):
    theirs, ours = models
    prompt = prompts()
    ended = 0
    for options in greedy_options(*frequent_ids(ours, prompt)):
        got = ours.generate(prompt, 14, do_sample=False, **options)
        same(got, their_generate(theirs, prompt, 14, do_sample=False, **options), options)
        ended += got.shape[1] < prompt.shape[1] + 14 or (got == PAD).any()
    assert ended  # some rows did end early: the end ids were exercised


def test_no_end_id_comes_before_min_new_tokens_where_one_came_without(models):
    theirs, ours = models
    prompt = prompts()
    a, _ = frequent_ids(ours, prompt)
    free = ours.generate(prompt, 14, do_sample=False, eos_token_id=a, pad_token_id=PAD)
    held = ours.generate(prompt, 14, do_sample=False, eos_token_id=a, pad_token_id=PAD,
                         min_new_tokens=6)  # fmt: skip
    assert (free[:, 4:10] == a).any()  # without it some row ends in its first 6 new ids
    assert not (held[:, 4:10] == a).any() and not (held[:, 4:10] == PAD).any()
    options = dict(do_sample=False, eos_token_id=a, pad_token_id=PAD, min_new_tokens=6)
    same(held, their_generate(theirs, prompt, 14, **options), options)


def test_sampling_one_candidate_with_several_sequences_gives_their_tokens(models):
    """top_k=1 leaves one id to draw: sampling is then deterministic on both sides, and the
    num_return_sequences rows of each prompt come together."""
    theirs, ours = models
    prompt = prompts(batch=2)
    options = dict(do_sample=True, top_k=1, num_return_sequences=3, repetition_penalty=1.4)
    got = ours.generate(prompt, 10, rng=np.random.default_rng(0), **options)
    same(got, their_generate(theirs, prompt, 10, **options), options)
    assert got.shape == (6, 14) and (got[:3, :4] == prompt[0]).all()


# ====================================================================== beam search


def beam_options(a: int, b: int) -> list[dict]:
    return [
        dict(num_beams=2),
        dict(num_beams=3, num_return_sequences=3),
        dict(num_beams=4, length_penalty=-1.0, num_return_sequences=2),
        dict(num_beams=2, eos_token_id=[b], length_penalty=2.0, early_stopping="never",
             num_return_sequences=2, pad_token_id=PAD),
        dict(num_beams=3, eos_token_id=[b], early_stopping=True, num_return_sequences=3),
        dict(num_beams=3, eos_token_id=[b], length_penalty=-1.5, num_return_sequences=3),
        dict(num_beams=3, eos_token_id=[b], length_penalty=2.0, early_stopping=True,
             num_return_sequences=2, pad_token_id=PAD),
        dict(num_beams=4, eos_token_id=[a], early_stopping=True, num_return_sequences=4),
        dict(num_beams=4, eos_token_id=[b], length_penalty=0.0, early_stopping="never",
             num_return_sequences=4, pad_token_id=PAD),
        dict(num_beams=4, eos_token_id=[a, b], length_penalty=-1.5, num_return_sequences=4),
        dict(num_beams=3, eos_token_id=[b, a], repetition_penalty=1.3, no_repeat_ngram_size=2,
             num_return_sequences=3, pad_token_id=PAD),
        dict(num_beams=2, eos_token_id=[a, b], early_stopping="never", num_return_sequences=2),
        dict(num_beams=3, eos_token_id=[b], min_new_tokens=4, num_return_sequences=2),
        dict(num_beams=2, eos_token_id=[a, b], min_length=8, early_stopping=True),
    ]  # fmt: skip


def test_beam_search_gives_their_sequences(models):
    theirs, ours = models
    prompt = prompts()
    lengths = set()
    for options in beam_options(*frequent_ids(ours, prompt)):
        got = ours.generate(prompt, 10, do_sample=False, **options)
        same(got, their_generate(theirs, prompt, 10, do_sample=False, **options), options)
        lengths.add(got.shape[1])
    assert len(lengths) > 1  # some searches ended before max_new_tokens


def test_beams_run_on_when_their_best_candidates_all_end(tmp_path):
    """A GPT-2 whose next-id distribution is the same after any context (the final norm
    gives one constant vector), with the two likeliest ids both end ids: the best 2K
    candidates of a step may all end, and transformers keeps (1 + end ids) K of them so that
    K run on; a positive length penalty with early_stopping="never" then favours them."""
    theirs = their_model("gpt2")
    a, b, c, d = 7, 11, 20, 33
    logits = np.random.default_rng(0).normal(0, 0.5, size=VOCAB)
    logits[[a, b, c, d]] = [5.0, 4.8, 3.0, 2.9]
    with torch.no_grad():  # logits = ln_f.bias . wte[v] = wte[v, 0]
        theirs.transformer.ln_f.weight.zero_()
        theirs.transformer.ln_f.bias.copy_(torch.eye(32)[0])
        theirs.transformer.wte.weight[:, 0] = torch.tensor(logits)
    theirs.save_pretrained(tmp_path)
    ours = GPT.from_pretrained(tmp_path)
    prompt = prompts(batch=2)
    options = dict(num_beams=2, eos_token_id=[a, b], early_stopping="never", length_penalty=2.0)
    got = ours.generate(prompt, 6, do_sample=False, **options)
    same(got, their_generate(theirs, prompt, 6, do_sample=False, **options), options)
    np.testing.assert_array_equal(got[:, 4:], [[c, c, c, c, c, a]] * 2)


def test_beams_search_greedily_unless_told_to_sample(models):
    """With num_beams left to its default, do_sample follows tricycle's rule (sample unless
    temperature 0); with beams it is transformers' default, False; told to, beams sample."""
    _, ours = models
    prompt = prompts(batch=1)
    searched = ours.generate(prompt, 6, num_beams=3)
    np.testing.assert_array_equal(searched, ours.generate(prompt, 6, num_beams=3, do_sample=False))
    draws = [np.random.default_rng(seed) for seed in range(6)]
    sampled = {ours.generate(prompt, 6, num_beams=3, do_sample=True, top_k=VOCAB,
                             rng=rng).tobytes() for rng in draws}  # fmt: skip
    assert len(sampled) > 1


def gumbel_multinomial(seed: int):
    """torch.multinomial without replacement as Gumbel's top-k, from a numpy Generator: the
    draws beam sampling takes, so that both sides draw the same candidates."""
    rng = np.random.default_rng(seed)

    def multinomial(probs, num_samples, replacement=False, **_):
        assert not replacement
        keys = torch.log(probs.double()).numpy() + rng.gumbel(size=tuple(probs.shape))
        return torch.tensor(np.argsort(-keys, axis=1, kind="stable")[:, :num_samples])

    return multinomial


def beam_sampling_options(a: int, b: int) -> list[dict]:
    return [
        dict(num_beams=2, top_k=VOCAB),  # (transformers' default top_k is 50)
        dict(num_beams=3, num_return_sequences=2, temperature=0.7, top_k=20),
        dict(num_beams=2, top_k=10, top_p=0.9, eos_token_id=[a, b]),
        dict(num_beams=3, top_k=VOCAB, min_p=0.05, eos_token_id=a, early_stopping=True,
             num_return_sequences=3),
        dict(num_beams=2, top_k=VOCAB, repetition_penalty=1.3, no_repeat_ngram_size=2,
             length_penalty=0.5),
    ]  # fmt: skip


def test_beam_sampling_gives_their_sequences_from_the_same_draws(models, monkeypatch):
    """transformers' beam sampling (the warpers on the log-probabilities, each keeping
    1 + end ids (at least 2), then C candidates drawn without replacement and ordered by
    score), with their multinomial drawing from the numpy Generator ours draws from."""
    theirs, ours = models
    if not _theirs_order_sampled_beams_by_score(theirs):
        pytest.skip(f"transformers {transformers.__version__} keeps the sampled beam "
                    "candidates in the order drawn (later ones order them by score)")  # fmt: skip
    prompt = prompts()
    for options in beam_sampling_options(*frequent_ids(ours, prompt)):
        for seed in range(2):
            got = ours.generate(prompt, 8, do_sample=True, rng=np.random.default_rng(seed),
                                **options)  # fmt: skip
            with monkeypatch.context() as patch:
                patch.setattr(torch, "multinomial", gumbel_multinomial(seed))
                expected = their_generate(theirs, prompt, 8, do_sample=True, **options)
            same(got, expected, (options, seed))


def _theirs_order_sampled_beams_by_score(model) -> bool:
    """transformers 5.24 orders the candidates beam sampling draws by score, as greedy beam
    search does and as ours does; older ones (5.17) keep them in the order drawn."""
    import inspect

    return ".sort(" in inspect.getsource(type(model)._get_top_k_continuations)


def test_the_gumbel_draw_is_a_draw_without_replacement():
    """Two of five ids: each pair as often as softmax's draw of one, then of another from
    the rest, gives it (p_i p_j / (1 - p_i) + p_j p_i / (1 - p_j)); the pair comes back
    ordered by score."""
    from tricycle.decode_beam import _drawn

    scores = np.log(np.array([[0.4, 0.3, 0.15, 0.1, 0.05]]))
    p = np.exp(scores[0])
    pairs = _drawn(np.repeat(scores, 40_000, axis=0), 2, np.random.default_rng(0))  # (N, 2)
    assert (pairs[:, 0] < pairs[:, 1]).all()  # ordered by score: the likelier first
    for i in range(5):
        for j in range(i + 1, 5):
            expected = p[i] * p[j] / (1 - p[i]) + p[j] * p[i] / (1 - p[j])
            seen = ((pairs[:, 0] == i) & (pairs[:, 1] == j)).mean()
            assert abs(seen - expected) < 4 * np.sqrt(expected * (1 - expected) / 40_000)


# ====================================================================== the cache and the step


# ====================================================================== left-padded prompts

PADDED = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]])


def padded_prompts() -> np.ndarray:
    """Four prompts of 4, 6, 3 and 4 ids, padded on the left with PAD (transformers' batch)."""
    return np.where(PADDED == 1, prompts(batch=4, length=6), PAD)


def padded_options(a: int, b: int) -> list[dict]:
    return [
        dict(do_sample=False),
        dict(do_sample=False, eos_token_id=a),
        dict(do_sample=False, eos_token_id=[a, b], pad_token_id=PAD),
        dict(do_sample=False, eos_token_id=b, min_length=12),  # min_length counts the padding
        dict(do_sample=False, num_beams=3, num_return_sequences=2),
        dict(do_sample=False, num_beams=2, eos_token_id=[b], early_stopping=True),
        dict(do_sample=True, top_k=1, num_return_sequences=2),
    ]


def test_left_padded_prompts_with_their_attention_mask_give_their_tokens(models):
    """transformers' batch of prompts of different lengths: each row continues as it would
    alone (transformers computes its positions from the mask), its padding kept."""
    theirs, ours = models
    prompt, mask = padded_prompts(), PADDED
    filled = 0
    for options in padded_options(*frequent_ids(ours, prompt[1:2])):
        got = ours.generate(prompt, 10, attention_mask=mask, **options)
        with torch.no_grad():
            expected = theirs.generate(torch.tensor(prompt), attention_mask=torch.tensor(mask),
                                       max_new_tokens=10, **options).numpy()  # fmt: skip
        same(got, expected, options)
        n = options.get("num_return_sequences", 1)
        np.testing.assert_array_equal(got[::n, :6], prompt)  # the padding stays
        filled += got.shape[1] < 16 or bool((got[:, 6:] == PAD).any())
    assert filled  # some rows ended before others: the right-hand fill was exercised


def test_padded_rows_are_each_row_alone(models):
    """With the processors that read the ids (which in transformers read the pad ids too),
    each padded row is the row generated alone, padded back."""
    _, ours = models
    prompt = padded_prompts()
    options = dict(do_sample=False, repetition_penalty=1.4, no_repeat_ngram_size=2)
    got = ours.generate(prompt, 8, attention_mask=PADDED, **options)
    for row, mask, out in zip(prompt, PADDED, got, strict=True):
        alone = ours.generate(row[mask == 1], 8, **options)
        np.testing.assert_array_equal(out, np.concatenate([row[mask == 0], alone]))
    unpadded = prompts(batch=2, length=6)  # a mask of ones changes nothing
    np.testing.assert_array_equal(ours.generate(unpadded, 5, attention_mask=np.ones((2, 6)),
                                                **options),
                                  ours.generate(unpadded, 5, **options))  # fmt: skip


@pytest.mark.parametrize("mask, message", [
    ([[1, 1, 0], [1, 1, 1]], r"attention_mask row 0 is \[1, 1, 0\]: expected its padding"),
    ([[0, 0, 0], [1, 1, 1]], r"attention_mask row 0 is \[0, 0, 0\]: .* and some ids"),
    ([[0, 1, 0], [1, 1, 1]], r"attention_mask row 0 is \[0, 1, 0\]"),
    ([[1, 1], [1, 1]], r"attention_mask must be 0 and 1 in the prompt's shape \(2, 3\), got "
                       r"\(2, 2\)"),
    ([[1, 1, 2], [1, 1, 1]], r"attention_mask must be 0 and 1 .* holding \[1, 2\]"),
])  # fmt: skip
def test_bad_attention_masks_are_refused_by_name(mask, message):
    model = small_model("gpt2")
    with pytest.raises(ValueError, match="GPT.generate: " + message):
        model.generate(np.array([[1, 2, 3], [4, 5, 6]]), 3, attention_mask=np.array(mask))
    with pytest.raises(ValueError, match="pad them on the left and pass attention_mask"):
        model.generate([[1, 2, 3], [4, 5]], 3)


def small_model(arch: str):
    manual_seed(3)
    config = DebugConfig(embedding_dim=32, context_window=16, vocab_size=50, n_heads=4,
                         n_layers=2, dropout=0.0)  # fmt: skip
    return build_model(replace(config, arch="llama", n_kv_heads=2, ffn_multiple_of=16)
                       if arch == "llama" else config)  # fmt: skip


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_beams_agree_with_the_cache_without_it_and_through_the_fixed_shape_step(arch, monkeypatch):
    """24 new ids from 5 overflow the 16-position window: a re-encode of reordered rows."""
    model = small_model(arch)
    prompt = np.random.default_rng(0).integers(0, 50, size=(2, 5))
    options = dict(num_beams=3, num_return_sequences=2, length_penalty=0.5, eos_token_id=7,
                   repetition_penalty=1.2)  # fmt: skip
    runs = {}
    for name, recorded, use_cache in [("eager", False, True), ("step", True, True),
                                      ("uncached", False, False)]:  # fmt: skip
        with monkeypatch.context() as patch:
            patch.setattr(decode, "records", lambda caches, recorded=recorded: recorded)
            runs[name] = model.generate(prompt, 24, use_cache=use_cache, **options)
            runs[name + " greedy"] = model.generate(
                prompt, 24, use_cache=use_cache, temperature=0, no_repeat_ngram_size=2
            )
    for name in ("step", "uncached"):
        np.testing.assert_array_equal(runs[name], runs["eager"], err_msg=name)
        np.testing.assert_array_equal(runs[name + " greedy"], runs["eager greedy"], err_msg=name)
    assert runs["eager"].shape[0] == 4


def test_a_cache_reorder_moves_every_row_in_place():
    model = small_model("gpt2")
    caches = model.new_caches(3, 4)
    for i, cache in enumerate(caches):
        cache.keys[...] = np.arange(3)[:, None, None, None] + 10 * i
    arrays = [cache.keys for cache in caches]
    decode.reorder(caches, np.array([2, 2, 0]))
    for i, cache in enumerate(caches):
        assert cache.keys is arrays[i]  # a recorded step keeps reading the same arrays
        np.testing.assert_array_equal(cache.keys[:, 0, 0, 0], np.array([2, 2, 0]) + 10 * i)


# ====================================================================== the distributions


def their_distribution(sequences, logits, temperature, top_k, top_p, min_p, penalty, ngram):
    """transformers' processors in generate's order, then softmax."""
    processors = []
    processors += [lp.RepetitionPenaltyLogitsProcessor(penalty)] if penalty != 1 else []
    processors += [lp.NoRepeatNGramLogitsProcessor(ngram)] if ngram else []
    processors += [lp.TemperatureLogitsWarper(temperature)]
    processors += [lp.TopKLogitsWarper(top_k)] if top_k is not None else []
    processors += [lp.TopPLogitsWarper(top_p)] if top_p is not None else []
    processors += [lp.MinPLogitsWarper(min_p)] if min_p is not None else []
    scores = torch.tensor(logits)
    for processor in processors:
        scores = processor(torch.tensor(sequences), scores)
    return torch.softmax(scores, dim=-1).numpy()


@pytest.mark.parametrize(
    "temperature, top_k, top_p, min_p, penalty, ngram",
    [(1.0, None, None, 0.1, 1.0, 0), (0.7, None, None, 0.3, 1.0, 0), (1.3, 7, 0.9, 0.05, 1.0, 0),
     (0.5, None, 0.6, 0.5, 1.4, 0), (1.0, 5, None, None, 0.8, 2), (2.0, None, 0.95, 0.0, 1.2, 1),
     (0.9, 3, 0.5, 1.0, 1.5, 3)],
)  # fmt: skip
def test_the_sampling_distribution_after_every_processor_is_transformers(
    temperature, top_k, top_p, min_p, penalty, ngram
):
    rng = np.random.default_rng(int(temperature * 10) + ngram)
    logits = rng.normal(0, 2, size=(4, 30))  # (B, V)
    logits[:, -3:] = -np.inf  # ids a tokeniser cannot decode (vocab_limit)
    sequences = rng.integers(0, 8, size=(4, 12))  # few ids: n-grams repeat
    choose = NextToken.of("test", True, temperature, top_k, top_p, min_p, penalty, ngram)
    got = probabilities(choose.scores(sequences, logits), temperature, top_k, top_p, min_p)
    expected = their_distribution(sequences, logits, temperature, top_k, top_p, min_p, penalty,
                                  ngram)  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    draws = choose(sequences, logits, np.random.default_rng(1))  # from that distribution
    assert (got[np.arange(4), draws] > 0).all()
    np.testing.assert_array_equal(draws, choose(sequences, logits, np.random.default_rng(1)))


def _theirs_skip_ids_past_the_scores() -> bool:
    """Recent transformers' repetition penalty passes over ids past the scores' width (a
    head narrower than the tokeniser); older ones (5.17) gather them and fail: compare such
    ids only where theirs takes them."""
    try:
        lp.RepetitionPenaltyLogitsProcessor(2.0)(torch.tensor([[3]]), torch.zeros(1, 2))
    except RuntimeError:
        return False
    return True


@given(
    st.integers(1, 3), st.integers(2, 12), st.floats(0.3, 2.0), st.one_of(st.none(),
    st.integers(1, 12)), st.one_of(st.none(), st.floats(0.05, 1.0)), st.one_of(st.none(),
    st.floats(0.0, 1.0)), st.integers(1, 4), st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_the_warpers_keeping_some_ids_are_transformers(B, V, temperature, top_k, top_p, min_p,
                                                       keep, seed):  # fmt: skip
    """Beam sampling's warpers on log-probabilities, each keeping at least ``keep`` ids
    (transformers' min_tokens_to_keep): the same ids dropped, the same scores kept."""
    scores = np.log(np.random.default_rng(seed).dirichlet(np.ones(V), size=B))  # (B, V)
    theirs = torch.tensor(scores)
    for warper in [lp.TemperatureLogitsWarper(temperature),
                   *([lp.TopKLogitsWarper(top_k, min_tokens_to_keep=keep)] if top_k else []),
                   *([lp.TopPLogitsWarper(top_p, min_tokens_to_keep=keep)] if top_p else []),
                   *([lp.MinPLogitsWarper(min_p, min_tokens_to_keep=keep)]
                     if min_p is not None else [])]:  # fmt: skip
        theirs = warper(None, theirs)
    ours = warp(scores, temperature, top_k, top_p, min_p, keep)
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs.numpy()))
    np.testing.assert_allclose(ours[np.isfinite(ours)], theirs.numpy()[np.isfinite(ours)],
                               rtol=1e-12)  # fmt: skip
    assert (np.isfinite(ours).sum(axis=1) >= min(keep, V)).all()


@given(
    st.integers(1, 3), st.integers(1, 14), st.integers(2, 9), st.integers(1, 4),
    st.floats(0.2, 3.0), st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_the_processors_are_transformers_on_any_sequences(B, T, V, n, penalty, seed):
    rng = np.random.default_rng(seed)
    past = 2 if _theirs_skip_ids_past_the_scores() else 0  # ids past the head's V too, as theirs
    sequences = rng.integers(0, V + past, size=(B, T))
    scores = rng.normal(0, 2, size=(B, V))
    ids = torch.tensor(sequences)
    penalised = lp.RepetitionPenaltyLogitsProcessor(penalty)(ids, torch.tensor(scores))
    np.testing.assert_allclose(penalise_repetitions(sequences, scores, penalty), penalised.numpy(),
                               rtol=1e-12)  # fmt: skip
    banned = lp.NoRepeatNGramLogitsProcessor(n)(ids, torch.tensor(scores)).numpy()
    np.testing.assert_array_equal(ban_repeated_ngrams(sequences, scores, n), banned)


@given(
    st.integers(1, 3), st.integers(1, 9), st.integers(0, 8), st.integers(0, 12),
    st.lists(st.integers(0, 9), min_size=1, max_size=3), st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_the_early_end_ban_is_transformers_min_new_tokens_and_min_length(
    B, prompt_length, new, least, ends, seed
):
    rng = np.random.default_rng(seed)
    T = prompt_length + new
    sequences, scores = rng.integers(0, 10, size=(B, T)), rng.normal(0, 2, size=(B, 10))
    got = ban_early_ends(scores, tuple(ends), new, least)
    ids = torch.tensor(sequences)
    theirs = lp.MinNewTokensLengthLogitsProcessor(prompt_length, least, ends)
    np.testing.assert_array_equal(got, theirs(ids, torch.tensor(scores)).numpy())
    by_length = lp.MinLengthLogitsProcessor(prompt_length + least, ends)
    np.testing.assert_array_equal(got, by_length(ids, torch.tensor(scores)).numpy())


# ====================================================================== refusals

REFUSED = [
    (dict(min_p=1.5), ValueError, "GPT.generate: min_p must be None or a finite number in [0, 1]"),
    (dict(repetition_penalty=0), ValueError, "GPT.generate: repetition_penalty must be a finite"),
    (dict(no_repeat_ngram_size=-1), ValueError, "GPT.generate: no_repeat_ngram_size must be"),
    (dict(num_beams=0), ValueError, "GPT.generate: num_beams must be an integer >= 1"),
    (dict(length_penalty=float("nan")), ValueError, "GPT.generate: length_penalty must be"),
    (dict(early_stopping="always"), ValueError, "GPT.generate: early_stopping must be one of"),
    (dict(num_return_sequences=0), ValueError, "GPT.generate: num_return_sequences must be"),
    (dict(pad_token_id=-1), ValueError, "GPT.generate: pad_token_id must be"),
    (dict(min_new_tokens=-1), ValueError, "GPT.generate: min_new_tokens must be"),
    (dict(min_length=1.5), TypeError, "GPT.generate: min_length must be"),
    (dict(do_sample=1), TypeError, "GPT.generate: do_sample must be None, True or False"),
    (dict(do_sample=True, temperature=0), ValueError, "GPT.generate: temperature must be > 0"),
    (dict(num_beams=2, num_return_sequences=3), ValueError,
     "GPT.generate: num_return_sequences must be <= num_beams (2), got 3"),
    (dict(num_return_sequences=2, do_sample=False), ValueError,
     "GPT.generate: num_return_sequences must be 1 to choose greedily"),
]  # fmt: skip


@pytest.mark.parametrize("options, error, message", REFUSED)
def test_bad_options_are_refused_by_name(options, error, message):
    model = small_model("gpt2")
    with pytest.raises(error, match=re.escape(message)):
        model.generate(np.array([[1, 2]]), 3, **options)


def test_stream_takes_the_per_token_options_and_refuses_bad_ones():
    model = small_model("gpt2")
    prompt = np.array([[1, 2, 3]])
    streamed = np.stack(list(model.stream(prompt, 8, do_sample=False, repetition_penalty=1.5,
                                          no_repeat_ngram_size=2)), axis=1)  # fmt: skip
    expected = model.generate(prompt, 8, do_sample=False, repetition_penalty=1.5,
                              no_repeat_ngram_size=2)  # fmt: skip
    np.testing.assert_array_equal(streamed, expected[:, 3:])
    with pytest.raises(ValueError, match="GPT.stream: min_p must be"):
        model.stream(prompt, 2, min_p=-0.5)


def test_the_sampler_passes_min_p_and_the_repetition_penalty_on(monkeypatch, capsys, tmp_path):
    """tricycle-sample --min-p 1 keeps only the likeliest id: sampling is then the greedy
    choice, after the repetition penalty."""
    from tricycle.apps import sample  # noqa: PLC0415 - the application, for this test alone
    from tricycle.tokeniser import CharTokeniser  # noqa: PLC0415

    tokeniser = CharTokeniser().train("abcdefghijklmnopqrstuvwxyz .\n")  # 29 ids of 50
    model = small_model("gpt2")
    monkeypatch.setattr(sample, "load", lambda *args: (model, tokeniser))
    flags = ["--prompt", "abc", "--max-tokens", "16", "--min-p", "1", "--seed", "0"]
    sample.main([str(tmp_path / "run"), *flags, "--repetition-penalty", "1.8"])
    prompt = tokeniser.encode("abc")[None]
    options = dict(do_sample=False, vocab_limit=29)
    penalised = model.generate(prompt, 16, repetition_penalty=1.8, **options)[0, 3:]
    assert capsys.readouterr().out == "abc" + tokeniser.decode(penalised) + "\n"
    assert (penalised != model.generate(prompt, 16, **options)[0, 3:]).any()
    for flag, value in (("--min-p", "1.5"), ("--min-p", "nan"), ("--repetition-penalty", "0")):
        with pytest.raises(SystemExit):
            sample.parse_args(["run", flag, value])
        assert flag in capsys.readouterr().err


# ====================================================================== on a GPU


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_beams_on_a_gpu_give_the_cpu_sequences_recorded_or_not(arch, cp, monkeypatch):
    cpu = small_model(arch)
    prompt = np.random.default_rng(0).integers(0, 50, size=(2, 5))
    gpu = small_model(arch)
    gpu.to_gpu()
    for options in [dict(num_beams=3, num_return_sequences=3, eos_token_id=7,
                         length_penalty=1.5, no_repeat_ngram_size=3),
                    dict(num_beams=2, do_sample=True, top_k=10, eos_token_id=7)]:  # fmt: skip
        rng = np.random.default_rng
        expected = cpu.generate(prompt, 20, rng=rng(0), **options)
        recorded = gpu.generate(prompt, 20, rng=rng(0), **options)  # the step as a graph
        with monkeypatch.context() as patch:
            patch.setattr(decode, "records", lambda caches: False)
            eager = gpu.generate(prompt, 20, rng=rng(0), **options)
        np.testing.assert_array_equal(recorded, eager)
        np.testing.assert_array_equal(recorded, expected)


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_min_new_tokens_on_a_gpu_gives_the_cpu_rows(arch, cp):
    """The early end ban reads the count of new ids on the host, for rows and beams alike."""
    prompt = np.random.default_rng(1).integers(0, 50, size=(3, 5))
    gpu = small_model(arch)
    gpu.to_gpu()
    for options in [dict(do_sample=False, eos_token_id=[7, 9], min_new_tokens=8),
                    dict(num_beams=2, eos_token_id=7, min_length=12, early_stopping=True)]:
        np.testing.assert_array_equal(gpu.generate(prompt, 16, **options),
                                      small_model(arch).generate(prompt, 16, **options))


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_left_padded_prompts_on_a_gpu_give_the_cpu_rows(arch, cp):
    """Each group of one length runs through the recorded decode step: the CPU's rows."""
    prompt = np.where(PADDED == 1, np.random.default_rng(2).integers(0, 50, size=(4, 6)), 49)
    gpu = small_model(arch)
    gpu.to_gpu()
    for options in [dict(do_sample=False, eos_token_id=[7, 9], repetition_penalty=1.3),
                    dict(num_beams=2, eos_token_id=7, num_return_sequences=2)]:
        expected = small_model(arch).generate(prompt, 12, attention_mask=PADDED, **options)
        got = gpu.generate(cp.asarray(prompt), 12, attention_mask=cp.asarray(PADDED), **options)
        np.testing.assert_array_equal(got, expected)
