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

SCRIPT = """
import hashlib
import numpy as np
import tricycle as tc
from tricycle.backends.cpu import compile
from tricycle.layers import LayerNorm

compile.set_threads(2)  # the parallel variant: 64 * 64 * 128 elements are enough
x = tc.to_tensor(np.random.default_rng(0).standard_normal((64, 64, 128), dtype=np.float32))
layer = LayerNorm(128)
y = layer(x)
(y * tc.to_tensor(y.array.copy(), requires_grad=False)).sum().backward()
for array in (y.array, x.grad.array, layer.gamma.grad.array):
    print(hashlib.sha256(array.tobytes()).hexdigest())
"""


def test_a_first_run_and_a_cached_run_give_the_same_bits(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "NUMBA_NUM_THREADS": "2", "TRICYCLE_THREADS": "2"}  # fmt: skip
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
