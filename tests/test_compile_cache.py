"""A program's first run, which compiles the CPU kernels, gives the numbers of its later runs,
which load them from numba's cache: layer norm's backward, whose parallel variant rounded
differently when the process that loaded it had also compiled it, run in two fresh processes
sharing one empty cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
ROOT = Path(__file__).resolve().parents[1]

LAYER_NORM_STEP = """
import hashlib
import numpy as np
import tricycle as tc
from tricycle.backends.cpu import compile
from tricycle.layers import LayerNorm

compile.set_threads(2)  # on both threads: 64 * 64 * 128 elements are enough
def step():
    x = tc.to_tensor(np.random.default_rng(0).standard_normal((64, 64, 128), dtype=np.float32))
    layer = LayerNorm(128)
    y = layer(x)
    (y * tc.to_tensor(y.array.copy(), requires_grad=False)).sum().backward()
    for array in (y.array, x.grad.array, layer.gamma.grad.array):
        print(hashlib.sha256(array.tobytes()).hexdigest())
"""
SCRIPT = LAYER_NORM_STEP + "step()\n"


def _env(tmp_path) -> dict:
    """Two threads and an empty numba cache in ``tmp_path``."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
            "NUMBA_NUM_THREADS": "2", "TRICYCLE_THREADS": "2"}  # fmt: skip


def test_a_first_run_and_a_cached_run_give_the_same_bits(tmp_path):
    env = _env(tmp_path)
    (tmp_path / "layer_norm.py").write_text(SCRIPT)

    def run():
        done = subprocess.run([sys.executable, "layer_norm.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    first, second = run(), run()
    assert "tricycle: compiled" in first.stderr  # the first compiled (in a child process)
    assert "compil" not in second.stderr  # the second loaded
    assert first.stdout == second.stdout and len(first.stdout.split()) == 3


AHEAD = """
import sys
from tricycle.backends.cpu import compile

on_demand = []  # kernels this process had to compile when it called them
compile._compile_in_a_child = lambda dispatcher, sig: on_demand.append(dispatcher)
{setup}
compile.precompile(step)
compile._ahead.wait()
step()
print(len(on_demand), file=sys.stderr)
"""


def _run(tmp_path, name, code, env):
    (tmp_path / name).write_text(code)
    done = subprocess.run([sys.executable, name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def test_compiled_ahead_in_children_the_kernels_load_and_give_the_cached_bits(tmp_path):
    """``precompile``: a recording child notes the kernels a step calls and its children
    compile them; the step then compiles nothing and gives the numbers of a run that loads."""
    env = _env(tmp_path)
    ahead = _run(tmp_path, "ahead.py", AHEAD.format(setup=LAYER_NORM_STEP), env)
    lines = ahead.stderr.strip().splitlines()
    assert lines[0].startswith("tricycle: compiling the CPU kernels"), ahead.stderr
    assert lines[1] == "0"  # nothing compiled on demand
    assert lines[2].startswith("tricycle: compiled 2 CPU kernel(s) in ")  # forward, backward
    loaded = _run(tmp_path, "loaded.py", SCRIPT, env)
    assert loaded.stderr == "" and loaded.stdout == ahead.stdout
    assert len(ahead.stdout.split()) == 3


@pytest.mark.slow
def test_a_small_gpt_compiled_ahead_leaves_nothing_for_the_run_to_compile(tmp_path):
    """``precompile_gpt``'s small model calls the kernels of the run's with the same types:
    one step and an evaluation at the default run's sizes then compile nothing."""
    env = _env(tmp_path)
    setup = """
from tricycle.apps.precompile import _gpt_step, precompile_gpt
from tricycle.configs import CPUConfig

step = lambda: _gpt_step(CPUConfig(), "fp32")  # the run's sizes
"""
    code = AHEAD.format(setup=setup).replace("compile.precompile(step)",
                                             "precompile_gpt(CPUConfig())")  # fmt: skip
    done = _run(tmp_path, "gpt.py", code, env)
    assert done.stderr.strip().splitlines()[1] == "0", done.stderr


FIRST_CALLS_FROM_THREADS = """
import threading
import numpy as np
import tricycle
import tricycle.nn as nn

errors = []
def work(seed):  # each thread the first to call these kernels, all at once
    try:
        rng = np.random.default_rng(seed)
        x = tricycle.tensor(rng.normal(size=(8, 4, 6, 6)).astype(np.float32), requires_grad=True)
        nn.BatchNorm2d(4)(x).sum().backward()
        y = tricycle.tensor(rng.normal(size=(8, 16)).astype(np.float32), requires_grad=True)
        nn.LayerNorm(16)(y).sum().backward()
    except Exception as error:
        errors.append(repr(error)[:200])
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("errors:", errors)
"""


def test_threads_calling_a_kernel_first_all_at_once_load_it_whole(tmp_path):
    """Loading a kernel refreshes numba's registries; a thread typing another kernel meanwhile
    failed ("Unknown attribute 'shape'") until the load held numba's compiler lock."""
    done = subprocess.run([sys.executable, "-c", FIRST_CALLS_FROM_THREADS], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "errors: []" in done.stdout, done.stdout
