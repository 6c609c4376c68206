"""torch's autocast queries on tricycle (``tricycle.amp``, also top-level): the same sequence
of blocks and calls gives torch's answers (enabled flags, dtypes, cache flag, nesting), per
thread; ``set_autocast_enabled`` turns autocast on for layer calls as a block does; the
deprecated ``_cpu_``/``_gpu_`` forms warn as torch's; bad arguments raise torch's errors."""

import threading
import warnings

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
from tricycle.tensor import Tensor


def name_of(dtype) -> str:
    """A dtype of either library by its name ("bfloat16", "float16", ...)."""
    return str(dtype).rpartition(".")[2]


def state(lib) -> tuple:
    return (
        lib.is_autocast_enabled("cpu"),
        lib.is_autocast_enabled("cuda"),
        lib.is_autocast_enabled(),
        name_of(lib.get_autocast_dtype("cpu")),
        name_of(lib.get_autocast_dtype("cuda")),
        lib.is_autocast_cache_enabled(),
    )


def story(lib) -> list:
    """Blocks, setters and queries in one order; what each query answers."""
    seen = [state(lib)]
    with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
        seen.append(state(lib))
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.float64)
        seen.append(state(lib))
        with lib.autocast("cpu", enabled=False):
            seen.append(state(lib))
        seen.append(state(lib))
    seen.append(state(lib))  # everything the block found is back
    lib.set_autocast_enabled(True)  # the one-argument form: "cuda"
    lib.set_autocast_dtype("cuda", lib.bfloat16)
    seen.append(state(lib))
    lib.set_autocast_enabled(False)
    lib.set_autocast_dtype("cuda", lib.float16)
    lib.set_autocast_dtype("cpu", lib.float16)
    with lib.autocast("cpu"):  # without a dtype: the one set
        seen.append(state(lib))
    lib.set_autocast_dtype("cpu", lib.bfloat16)
    lib.set_autocast_cache_enabled(False)
    seen.append(state(lib))
    lib.set_autocast_cache_enabled(True)
    lib.clear_autocast_cache()
    counts = [lib.autocast_increment_nesting(), lib.autocast_increment_nesting()]
    counts += [lib.autocast_decrement_nesting() for _ in range(3)]
    lib.autocast_increment_nesting()
    seen.append(counts)
    found = []
    thread = threading.Thread(target=lambda: found.append(state(lib)))
    lib.set_autocast_enabled("cpu", True)
    thread.start()
    thread.join()
    lib.set_autocast_enabled("cpu", False)
    seen.append(found)  # another thread sees its own state, off
    return seen


def test_blocks_and_calls_give_torchs_answers():
    torch = pytest.importorskip("torch")
    assert story(tc) == story(torch)


def test_set_autocast_enabled_casts_layer_calls_as_a_block_does():
    pytest.importorskip("ml_dtypes")
    tc.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x = Tensor(np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32))
    plain = model(x).numpy()
    with tc.autocast("cpu"):
        in_block = model(x).numpy()
    tc.set_autocast_enabled("cpu", True)
    try:
        by_call = model(x).numpy()
        tc.set_autocast_dtype("cpu", tc.float64)  # not a 16-bit float: autocast stays off
        off = model(x).numpy()
    finally:
        tc.set_autocast_dtype("cpu", tc.bfloat16)
        tc.set_autocast_enabled("cpu", False)
    np.testing.assert_array_equal(by_call, in_block)
    assert not np.array_equal(in_block, plain)  # bfloat16's rounding shows
    np.testing.assert_array_equal(off, plain)
    np.testing.assert_array_equal(model(x).numpy(), plain)  # off again


@pytest.mark.parametrize(
    "name, args, now",
    [
        ("is_autocast_cpu_enabled", (), "is_autocast_enabled('cpu')"),
        ("set_autocast_cpu_enabled", (False,), "set_autocast_enabled('cpu', enabled)"),
        ("get_autocast_cpu_dtype", (), "get_autocast_dtype('cpu')"),
        ("set_autocast_cpu_dtype", ("bfloat16",), "set_autocast_dtype('cpu', dtype)"),
        ("get_autocast_gpu_dtype", (), "get_autocast_dtype('cuda')"),
        ("set_autocast_gpu_dtype", ("float16",), "set_autocast_dtype('cuda', dtype)"),
    ],
)
def test_the_deprecated_forms_warn_and_answer_as_torchs(name, args, now):
    torch = pytest.importorskip("torch")
    answers, messages = [], []
    for lib in (tc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call_args = [getattr(lib, a) if isinstance(a, str) else a for a in args]
            answer = getattr(lib, name)(*call_args)
        answers.append(answer if isinstance(answer, bool | None) else name_of(answer))
        [warning] = [w for w in caught if issubclass(w.category, DeprecationWarning)]
        messages.append(str(warning.message).partition(" (Triggered")[0])
    assert answers[0] == answers[1]
    assert messages[0] == messages[1]
    assert f"torch.{now}" in messages[0]


def test_bad_arguments_raise_torchs_errors():
    with pytest.raises(RuntimeError, match="get_autocast_dtype.*'foo'"):
        tc.get_autocast_dtype("foo")
    with pytest.raises(TypeError, match="is_autocast_enabled.*str"):
        tc.is_autocast_enabled(1)
    with pytest.raises(TypeError, match="set_autocast_enabled: enabled"):
        tc.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match="set_autocast_dtype: dtype"):
        tc.set_autocast_dtype("cpu", "float16")
    with pytest.raises(TypeError, match="set_autocast_cache_enabled: enabled"):
        tc.set_autocast_cache_enabled(1)
    with pytest.raises(TypeError):
        tc.get_autocast_dtype()
    assert state(tc) == (False, False, False, "bfloat16", "float16", True)  # nothing changed
