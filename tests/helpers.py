"""Test helpers: a gradient check for any Tensor function, on the library's ``gradcheck``.

``check_grads(f, *arrays)`` runs ``tricycle.gradcheck.gradcheck`` on float64 copies of the
arrays (every output element gets a distinct upstream gradient; each input's ``.grad`` is
compared with central finite differences) and returns ``f``'s output for further checks.
``same_on_host_and(xp, layer, run)`` runs a layer on the host, then on ``xp``'s device.
``made_once(tmp_path_factory, name, make)`` makes a costly directory (a trained run, a built
emulator) once for the whole session, however many pytest-xdist workers ask for it.
``DATA_DIR`` is where tests find tiny-shakespeare. ``one_thread(torch)`` runs a ported script
on one thread (torch's and the BLAS's), as the ports' small products need on a shared machine;
``run_main(script, folder, monkeypatch, name)`` runs one as ``__main__`` in its folder, and
``torch_and_tricycle(monkeypatch)`` gives the two libraries for one run under each;
``run_cells(text, space)`` runs a notebook's cells showing each one's last expression.
For the ports' stand-ins of libraries not installed: ``module(name, monkeypatch, **names)``
is a module that ``import`` finds, ``package(...)`` one with submodules, and ``Compose``,
``to_tensor(lib)`` and ``image_folder(lib)`` are torchvision's pipeline of transforms,
``ToTensor`` and ``ImageFolder``.
"""

import ast
import contextlib
import fcntl
import importlib.machinery
import io
import os
import shutil
import sys
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tricycle
from tricycle import backend
from tricycle.gradcheck import gradcheck
from tricycle.tensor import Tensor

# $TRICYCLE_DATA_DIR when set, else ../shared/data beside the checkout
DATA_DIR = Path(
    os.environ.get("TRICYCLE_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


@contextlib.contextmanager
def one_thread(torch):
    """One thread for ``torch`` and for the BLAS (tricycle's, numpy's) while it lasts."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def torch_and_tricycle(monkeypatch, *needs: str, agg: bool = False):
    """torch (the test skipped without it or any module in ``needs``) and tricycle, for a port
    run under each: neither answers that a GPU is there, so both take the same branches on any
    machine, on one thread while it lasts (``one_thread``); with ``agg``, matplotlib draws off
    screen (its Agg backend)."""
    torch = pytest.importorskip("torch")
    for need in needs:
        pytest.importorskip(need)
    if agg:
        pytest.importorskip("matplotlib").use("Agg")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        yield torch, tricycle


def run_main(script: str, folder: Path, monkeypatch, name: str) -> tuple[str, dict]:
    """``script`` run as ``__main__`` (its file called ``name``) in ``folder``, the working
    directory while it runs: what it printed, and its globals at its end."""
    monkeypatch.chdir(folder)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(script, str(folder / name), "exec"), space)
    return out.getvalue(), space


def run_cells(
    text: str,
    space: dict,
    failing: tuple[type[Exception], ...] = (),
    close_figures: bool = False,
    filename: str = "notebook.py",
) -> None:
    """The notebook's cells (split at ``# %%`` lines) run in order in ``space``, each cell's
    last expression printed (its repr), as a notebook shows it. A cell failing with one of
    ``failing`` (the course's own failing cells) prints "ERROR" and whether the error is of
    those kinds by name, and the next cell runs; with ``close_figures`` the figures a cell drew
    are closed after it, as a notebook's inline plots."""
    kinds = {kind.__name__ for kind in failing}
    for cell in text.split("\n# %%\n"):
        tree = ast.parse(cell)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        try:
            exec(compile(tree, filename, "exec"), space)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), space)
                if value is not None:
                    print(repr(value))
        except failing as error:
            print("ERROR", type(error).__name__ in kinds)
        if close_figures and "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


class Compose:
    """torchvision's ``transforms.Compose`` for the ports' stand-in torchvisions: the
    transforms applied in order. It touches no array, so one serves every library."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


def package(name: str, monkeypatch, base, parts: dict, **names) -> types.ModuleType:
    """A stand-in package ``name`` holding ``names``, whose submodules ``parts`` (a part
    ``"transforms.functional"`` is ``transforms``' submodule) hold the objects of module
    ``base`` under the names listed; each in ``sys.modules`` while the test runs (``module``)."""
    top = module(name, monkeypatch, **names)
    for part, keys in parts.items():
        made = module(f"{name}.{part}", monkeypatch, **{key: getattr(base, key) for key in keys})
        parent = top
        *path, child = part.split(".")
        for step in path:
            parent = getattr(parent, step)
        setattr(parent, child, made)
    return top


def to_tensor(lib) -> type:
    """torchvision's ``transforms.ToTensor`` for the ports' stand-in torchvisions, made in
    ``lib`` (torch or tricycle): an (H, W) or (H, W, C) uint8 image (a PIL image or an array)
    as a float32 tensor (C, H, W) in [0, 1]."""

    class ToTensor:
        def __call__(self, pic):
            image = np.asarray(pic)
            image = image[:, :, None] if image.ndim == 2 else image  # (H, W, C)
            chw = np.ascontiguousarray(image.transpose(2, 0, 1), np.float32)  # (C, H, W)
            return lib.from_numpy(chw / 255)

        def __repr__(self):
            return "ToTensor()"

    return ToTensor


def image_folder(lib) -> type:
    """torchvision's ``datasets.ImageFolder`` for the ports' stand-in torchvisions, a
    ``lib.utils.data.Dataset`` (torch's or tricycle's): ``root/<class>/<image>``, the classes
    sorted, each image read with PIL as RGB, then ``transform`` (and ``target_transform``)."""

    class ImageFolder(lib.utils.data.Dataset):
        def __init__(self, root, transform=None, target_transform=None):
            self.root, self.transform, self.target_transform = root, transform, target_transform
            self.classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
            self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
            self.samples = [
                (os.path.join(root, name, file), self.class_to_idx[name])
                for name in self.classes
                for file in sorted(os.listdir(os.path.join(root, name)))
                if file.lower().endswith((".jpg", ".jpeg", ".png"))
            ]
            self.targets = [target for _, target in self.samples]

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            from PIL import Image  # noqa: PLC0415

            path, target = self.samples[index]
            with open(path, "rb") as file:
                image = Image.open(file).convert("RGB")
            if self.transform is not None:
                image = self.transform(image)
            if self.target_transform is not None:
                target = self.target_transform(target)
            return image, target

        def __repr__(self):
            return (
                f"Dataset ImageFolder\n    Number of datapoints: {len(self)}\n"
                f"    Root location: {self.root}\n    StandardTransform\n"
                f"Transform: {self.transform}"
            )

    return ImageFolder


def module(name: str, monkeypatch=None, **names) -> types.ModuleType:
    """A module ``name`` holding ``names`` (with a spec, as torch's ``find_spec`` asks): with
    ``monkeypatch``, in ``sys.modules`` while the test runs, so ``import`` finds it."""
    made = types.ModuleType(name)
    made.__spec__ = importlib.machinery.ModuleSpec(name, None)
    made.__dict__.update(names)
    if monkeypatch is not None:
        monkeypatch.setitem(sys.modules, name, made)
    return made


def check_grads(f, *arrays, wrt=None, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0):
    """Assert that autodiff gradients of ``f`` match finite differences for inputs ``wrt``
    (all by default); every input is made float64. Returns ``f`` of the inputs."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    gradcheck(f, *arrays, wrt=wrt, rtol=rtol, atol=atol, seed=seed)
    return f(*[Tensor(a, requires_grad=False) for a in arrays])


def randn(*shape, seed=0, scale=1.0) -> np.ndarray:
    """Standard normal float64 numbers of ``shape`` (times ``scale``), from ``seed``."""
    return np.random.default_rng(seed).normal(size=shape) * scale


def as_float64(layer):
    """The layer with float64 parameters, for finite differences and exact comparisons."""
    for _, p in layer.named_parameters():
        p.array = p.array.astype(np.float64)
    return layer


def assert_grads_as_torch(ours, theirs, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Every parameter's gradient in layer ``ours`` equals that of the torch layer ``theirs``
    under the same name (after both have run backward)."""
    params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        expected = params[name].grad.detach().cpu().numpy()
        np.testing.assert_allclose(p.grad.array, expected, rtol=rtol, atol=atol, err_msg=name)


def same_on_host_and(xp, layer, run, rtol: float, atol: float) -> None:
    """``run(array_module)`` (a forward and backward through ``layer`` on inputs made with
    ``array_module``, returning the output Tensor) on the host, then with ``layer`` moved to
    ``xp``'s device: the outputs and every parameter gradient agree."""
    results = []
    for array_module in (np, xp):
        if array_module is not np:
            layer.to_gpu()
        out = run(array_module)
        grads = [backend.to_host_array(p.grad.array) for p in layer.parameters()]
        results.append([backend.to_host_array(out.array), *grads])
        layer.zero_grad()
    for ours, expected in zip(*results):
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol)


def on_host_and_gpu(array, requires_grad: bool = False) -> tuple:
    """The same values as a host tensor and as a GPU tensor (for the GPU tests)."""
    host = tricycle.tensor(np.array(array), requires_grad=requires_grad)
    gpu = tricycle.tensor(np.array(array), requires_grad=requires_grad).to_gpu()
    return host, gpu


def assert_same_on_gpu(host, gpu, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """A host result and a GPU result (tensors, arrays, or tuples of them) hold the same
    numbers, the GPU's on the GPU."""
    if isinstance(host, tuple | list):
        for h, g in zip(host, gpu, strict=True):
            assert_same_on_gpu(h, g, rtol, atol)
        return
    g = gpu.array if isinstance(gpu, tricycle.Tensor) else gpu
    h = host.array if isinstance(host, tricycle.Tensor) else host
    assert backend.is_cupy_array(g), type(g)
    np.testing.assert_allclose(backend.to_host_array(g), h, rtol=rtol, atol=atol)


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The directory ``name``, filled by ``make(directory)`` once per session: under
    pytest-xdist, the first worker to ask makes it in the session's shared temporary folder
    while the others wait on a lock, and every later caller reads the same directory. A
    module fixture would otherwise run ``make`` once in each worker that gets one of the
    module's tests (``benchmarks/README.md``, the suite's time). Callers treat it as read-only
    (``shutil.copytree`` it to change it); a ``make`` that fails or skips leaves nothing made,
    so the next caller tries again and fails or skips the same way."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # one process: nothing to share
        directory = tmp_path_factory.mktemp(name)
        make(directory)
        return directory
    root = tmp_path_factory.getbasetemp().parent  # shared by this session's workers
    # named for this run too: a --basetemp given again keeps an earlier session's
    directory = root / f"{name}-{os.environ.get('PYTEST_XDIST_TESTRUNUID', '')}"
    done = directory.with_name(directory.name + ".done")
    with open(directory.with_name(directory.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            make(directory)
            done.touch()
    return directory
