"""Two processes that need the same kernel at once compile it once: the second waits for the
first's compile and loads what it saved (pytest's workers, two runs started together)."""

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tricycle import functions

pytest.importorskip("numba")
pytest.importorskip("fcntl")
ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import hashlib, os, sys, time
import numpy as np
from tricycle.backends.cpu import softmax
ready, go, out = sys.argv[1], sys.argv[2], sys.argv[3]
open(ready, "w").close()
while not os.path.exists(go):  # both processes call the kernel at the same moment
    time.sleep(0.01)
x = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)
y = softmax.softmax_forward(np, x)  # (4, 33)
np.save(out, y)
print(hashlib.sha256(y.tobytes()).hexdigest())
"""


def inputs() -> np.ndarray:
    """The script's x: (4, 33) float32."""
    return np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)


def test_two_processes_wanting_one_kernel_compile_it_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "TRICYCLE_THREADS": "1"}  # fmt: skip
    (tmp_path / "kernel.py").write_text(SCRIPT)
    go = tmp_path / "go"
    jobs = [
        subprocess.Popen([sys.executable, "kernel.py", str(tmp_path / f"ready{i}"), str(go),
                          str(tmp_path / f"out{i}.npy")], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        for i in range(2)
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        assert time.monotonic() < deadline and all(job.poll() is None for job in jobs)
        time.sleep(0.01)
    go.touch()
    outputs = [job.communicate(timeout=300) for job in jobs]
    for job, (_, err) in zip(jobs, outputs):
        assert job.returncode == 0, err
    compiled = ["tricycle: compiled" in err for _, err in outputs]
    assert compiled.count(True) == 1, [err for _, err in outputs]
    # the same bits from the same machine code: the whole output, not its rows' sums (each 1)
    assert outputs[0][0] == outputs[1][0]
    y = np.load(tmp_path / "out0.npy")
    assert y.shape == (4, 33) and y.dtype == np.float32
    assert outputs[0][0].strip() == hashlib.sha256(y.tobytes()).hexdigest()
    np.testing.assert_allclose(y, functions.softmax_forward(np, inputs()), rtol=1e-6, atol=1e-8)
