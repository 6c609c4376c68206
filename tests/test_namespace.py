"""The top-level namespace (``import tricycle as tc``), and importing: cheap and silent (no
threads, no cupy), and operators bound wherever ``Tensor`` comes from, even when the package's
``__init__`` does not run (``tricycle`` resolved as a namespace package)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tricycle as tc

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tricycle"


def run(code: str, pythonpath: Path = ROOT, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_namespace_reads_like_the_readme():
    for name in tc.__all__:
        assert hasattr(tc, name), name
    assert tc.__version__ == "0.1.0"
    tc.manual_seed(0)
    x = tc.randn(4, 3, requires_grad=True)
    with tc.no_grad():
        assert tc.exp(x).args is None
    y = tc.softmax(tc.einsum("ij,jk->ik", x, tc.ones(3, 5))).sum()
    y.backward()
    assert x.grad.shape == (4, 3)
    assert tc.gradcheck(
        lambda a: tc.gelu(tc.log_softmax(a)), np.random.default_rng(0).normal(size=(2, 3))
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("tc.exp(tc.zeros(2))", [1.0, 1.0]),
        ("tc.log(tc.ones(2))", [0.0, 0.0]),
        ("tc.sqrt(tc.full((2,), 4.0))", [2.0, 2.0]),
        ("tc.relu(tc.arange(-1.0, 2.0))", [0.0, 0.0, 1.0]),
        ("tc.leaky_relu(tc.arange(-1.0, 1.0), 0.5)", [-0.5, 0.0]),
        ("tc.silu(tc.zeros(1))", [0.0]),
        ("tc.sigmoid(tc.zeros(1))", [0.5]),
        ("tc.tanh(tc.zeros(1))", [0.0]),
        ("tc.abs(tc.arange(-1.0, 1.0))", [1.0, 0.0]),
        ("tc.clip(tc.arange(-2.0, 3.0), -1, 1)", [-1.0, -1.0, 0.0, 1.0, 1.0]),
        ("tc.maximum(tc.zeros(2), tc.ones(2))", [1.0, 1.0]),
        ("tc.minimum(tc.zeros(2), tc.ones(2))", [0.0, 0.0]),
        ("tc.sum(tc.ones(2, 3), axis=1)", [3.0, 3.0]),
        ("tc.mean(tc.arange(4.0))", 1.5),
        ("tc.max(tc.arange(4.0))", 3.0),
        ("tc.min(tc.arange(4.0))", 0.0),
        ("tc.var(tc.arange(4.0))", 1.25),
        ("tc.cat([tc.zeros(1), tc.ones(2)])", [0.0, 1.0, 1.0]),
        ("tc.concatenate([tc.zeros(1), tc.ones(1)], axis=0)", [0.0, 1.0]),
        ("tc.stack([tc.zeros(2), tc.ones(2)], axis=1)", [[0.0, 1.0], [0.0, 1.0]]),
        ("tc.where(np.array([True, False]), tc.zeros(2), tc.ones(2))", [0.0, 1.0]),
        ("tc.reshape(tc.arange(4.0), (2, 2))", [[0.0, 1.0], [2.0, 3.0]]),
        ("tc.transpose(tc.eye(2, 3))", [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
        ("tc.softmax(tc.zeros(2))", [0.5, 0.5]),
        ("tc.log_softmax(tc.zeros(2))", [-np.log(2), -np.log(2)]),
        ("tc.gelu(tc.zeros(1), approximate='tanh')", [0.0]),
        ("tc.einsum('ii->', tc.eye(3))", 3.0),
        ("tc.Einsum('i,i->')(tc.ones(3), tc.ones(3))", 3.0),
        ("tc.to_tensor([1, 2])", [1.0, 2.0]),
    ],
)
def test_common_ops_as_functions(expression, expected):
    out = eval(expression, {"tc": tc, "np": np})
    assert isinstance(out, tc.Tensor)
    np.testing.assert_allclose(out.array, expected, rtol=1e-6)


def test_einsum_function_reuses_one_einsum_per_subscript():
    from tricycle.einsum import _einsum_for

    assert _einsum_for("ij->ji") is _einsum_for("ij->ji")
    with pytest.raises(TypeError, match="einsum: the subscript must be a string"):
        tc.einsum(["ij"], tc.ones(2, 2))


def test_importing_starts_no_threads_loads_no_cupy_and_prints_nothing():
    result = run(
        "import sys, threading\n"
        "import tricycle, tricycle.models, tricycle.optimisers, tricycle.precision\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert 'cupy' not in sys.modules\n"
        "assert tricycle.random._generator is None  # nothing drawn either\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n" and result.stderr == ""


def namespace_copy(tmp_path: Path) -> Path:
    """The package's files without ``__init__.py``: Python imports it as a namespace package."""
    package = tmp_path / "tricycle"
    package.mkdir()
    for path in PACKAGE.iterdir():
        if path.name not in ("__init__.py", "__pycache__"):
            (package / path.name).symlink_to(path)
    return tmp_path


@pytest.mark.parametrize(
    "first_import",
    ["tricycle.tensor", "tricycle.einsum", "tricycle.binary", "tricycle.ops", "tricycle.layers",
     "tricycle.models", "tricycle.activation", "tricycle.factories"],
)  # fmt: skip
def test_operators_work_without_the_package_init(tmp_path, first_import):
    """Whichever module comes first, ``Tensor`` has its operators and methods."""
    root = namespace_copy(tmp_path)
    result = run(
        f"import {first_import}\n"
        "import tricycle\n"
        "assert not hasattr(tricycle, '__file__') or tricycle.__file__ is None  # namespace\n"
        "from tricycle.tensor import Tensor\n"
        "a = Tensor([1.0, 2.0])\n"
        "print((a + a * 2 - 1).sum().item(), (a @ a).item(), a[[1]].item(), a.T.shape)",
        pythonpath=root,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["7.0", "5.0", "2.0", "(2,)"]


def test_operator_methods_are_the_ops_themselves():
    from tricycle import binary, reduce, unary

    assert tc.Tensor.sum.__wrapped__ is reduce.sum and tc.Tensor.exp is unary.exp
    assert tc.Tensor.sum.__name__ == "sum" and tc.Tensor.__neg__ is unary.neg
    a = tc.Tensor([1.0, 2.0], requires_grad=True)
    assert (a * a).name == binary.mul(a, a).name


def test_torchs_dtype_names_are_numpys_and_load_nothing_at_import():
    result = run(
        "import sys, tricycle\n"
        "assert 'numpy' not in sys.modules, 'import tricycle loaded numpy'\n"
        "assert [m for m in sys.modules if m.startswith('tricycle')] == ['tricycle']\n"
        "import numpy as np\n"
        "assert tricycle.long is np.int64 and tricycle.bool is np.bool_\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    names = dict(long=np.int64, int64=np.int64, int32=np.int32, int=np.int32, float64=np.float64,
                 double=np.float64, float32=np.float32, float=np.float32, float16=np.float16,
                 half=np.float16, bool=np.bool_)  # fmt: skip
    for name, dtype in names.items():  # as torch's: torch.long is torch.int64, ...
        assert getattr(tc, name) is dtype and name in dir(tc), name
        assert name not in tc.__all__  # a star import must not shadow Python's bool, int ...
    torch = pytest.importorskip("torch")
    for name, dtype in names.items():
        assert torch.empty(0, dtype=getattr(torch, name)).numpy().dtype == dtype, name


def test_cat_and_stack_take_torchs_dim_and_topk_is_a_function():
    a, b = tc.arange(6.0).reshape(2, 3), tc.ones(2, 1)
    np.testing.assert_array_equal(tc.cat((a, b), dim=1).numpy(), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(tc.cat((a, b), -1).numpy(), np.concatenate([a, b], -1))
    assert tc.concatenate([a, a], axis=0).shape == (4, 3) and tc.cat([a, a]).shape == (4, 3)
    assert tc.stack([a, a], dim=2).shape == (2, 3, 2) and tc.stack([a, a]).shape == (2, 2, 3)
    for call in (lambda: tc.cat((a, a), 0, dim=1), lambda: tc.stack([a], axis=0, dim=0)):
        with pytest.raises(TypeError, match="got axis=0 and dim=.*not both"):
            call()
    x = tc.to_tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
    values, indices = tc.topk(x, 2)
    np.testing.assert_array_equal(values.numpy(), [[3.0, 2.0], [5.0, 4.0]])
    np.testing.assert_array_equal(indices.numpy(), [[0, 2], [1, 2]])
    values.sum().backward()  # the gradient goes to the values kept
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    np.testing.assert_array_equal(tc.topk(x, 1, dim=0, largest=False).indices.numpy(), [[1, 0, 0]])
    with pytest.raises(TypeError, match="topk: input must be a Tensor"):
        tc.topk([1.0, 2.0], 1)


def test_torchs_top_level_names_are_thin_calls_and_tensor_is_the_function():
    from tricycle import backend, grad_modes, serialization, torch_functions

    names = (
        "tensor from_numpy as_tensor is_tensor empty randperm matmul bmm flatten unsqueeze "
        "squeeze argmax argmin clamp pow allclose isclose equal numel gather outer norm max min"
    )
    for name in names.split():  # or complex_functions' route of complex tensors around it
        function = getattr(tc, name)
        assert getattr(function, "__wrapped__", function) is getattr(torch_functions, name), name
        assert name in tc.__all__ and name in dir(tc), name
    for name in "set_grad_enabled enable_grad inference_mode is_grad_enabled".split():
        assert getattr(tc, name) is getattr(grad_modes, name), name
        assert name in tc.__all__ and name in dir(tc), name
    assert tc.save is serialization.save and tc.load is serialization.load
    assert tc.device is backend.device and "device" in dir(tc)  # not in a star import
    # as torch.tensor: the name is the function, though tricycle.tensor is also a module
    import tricycle.tensor  # noqa: F401 - the import must not rebind the name

    assert tc.tensor is torch_functions.tensor and tc.tensor([1, 2]).dtype == np.int64
    from tricycle.tensor import Tensor

    assert Tensor is tc.Tensor


def test_the_sub_packages_are_attributes_imported_on_first_use():
    result = run(
        "import sys, tricycle\n"
        "assert not [m for m in sys.modules if m.startswith(('tricycle.cuda', 'tricycle.utils'))]\n"
        "assert 'cuda' in dir(tricycle) and 'utils' in dir(tricycle)\n"
        "assert tricycle.cuda.device_count() >= 0 and 'tricycle.cuda' in sys.modules\n"
        "assert tricycle.cuda is sys.modules['tricycle.cuda']\n"
        "import tricycle.utils.data as data\n"
        "assert data is sys.modules['tricycle.utils.data'] and tricycle.utils.data is data\n"
        "assert data.DataLoader is sys.modules['tricycle.data'].DataLoader\n"
        "assert 'tricycle.optim' not in sys.modules and 'tricycle.nn' not in sys.modules\n"
        "assert tricycle.optim.SGD is sys.modules['tricycle.optim'].SGD\n"
        "assert tricycle.nn.Linear is sys.modules['tricycle.nn'].Linear\n"
        "import tricycle.nn as nn\n"
        "assert tricycle.nn is nn and 'optim' in dir(tricycle) and 'nn' in dir(tricycle)\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_version_answers_as_torch_version():
    """``torch.version.__version__`` and ``torch.version.cuda`` (None on a CPU-only build)."""
    assert tc.version.__version__ == tc.__version__
    assert tc.version.hip is None and tc.version.debug is False
    if tc.cuda.is_available():
        assert re.fullmatch(r"\d+\.\d+", tc.version.cuda)
    else:
        assert tc.version.cuda is None
    with pytest.raises(AttributeError, match="tricycle.version"):
        tc.version.missing  # noqa: B018
