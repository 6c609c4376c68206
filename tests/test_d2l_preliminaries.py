"""Dive into Deep Learning (d2l-ai/d2l-en), its chapter_preliminaries in PyTorch, run cell by
cell on tricycle with ``torch`` replaced by ``tricycle`` in its text, beside the book's own
library ``d2l/torch.py`` built the same way (tests/d2l_port.py; docs/pytorch.md's promise):

- ndarray: ``arange``, ``numel``, ``reshape`` (a view: the writes through ``X[1, 2] = 17`` and
  ``X[:2, :] = 12`` reach ``x``, as ``torch.exp(x)`` then shows), ``zeros``/``ones``/``randn``,
  indexing and slicing, elementwise operators, ``cat``, ``==``, broadcasting, ``id`` kept by
  ``Z[:] =`` and ``X += Y``, the numpy bridge and ``item``/``float``/``int``;
- linear-algebra: scalars, vectors, ``.T``, the reductions (``sum`` over ``axis=[0, 1]``,
  ``keepdims=True``, ``mean``, ``cumsum``), ``dot``, ``mv``, ``mm``, ``@`` and ``norm``;
- calculus: the numerical limit and the book's plotting helpers (``plot`` of numpy arrays);
- autograd: ``requires_grad_``, ``backward`` of a scalar, ``grad.zero_()``,
  ``y.backward(gradient=torch.ones(len(y)))`` (torch's keyword), ``detach`` and a function
  with Python control flow;
- probability: coin tosses by ``torch.distributions.multinomial.Multinomial`` (its
  ``sample()`` and ``sample((10000,))``), the running estimates and their plot;
- pandas: the tiny house table written to ``../data``, read, one-hot encoded with
  ``get_dummies(dummy_na=True)``, filled with the column means and made a float64 tensor.
  pandas is not installed here: a stand-in ``pd`` of only what the section calls (``PANDAS``,
  the same under both libraries).

lookup-api is left out: it prints ``dir(torch.distributions)`` and ``help(torch.ones)``, the
two libraries' own listings and docstrings.

The code is the book's PyTorch tab (``%%tab pytorch`` cells and those shared by several
frameworks); each changed line ends in ``# port:`` and says why (a notebook's magic). Each
section runs under torch (skipped without it), then under tricycle, seeded, on the CPU; both
print the same lines (numbers and reprs aside), every printed tensor and number is torch's
(but for the random draws), the book's own checks hold (``x.grad == 4 * x``, ``a.grad == d /
a``, ``id(Z)`` kept), the coins' estimates near one half, the plotted lines torch's. The fixes
the chapter needed: ``Tensor.backward``'s seed is named ``gradient`` as torch's
(tricycle/graph.py) and ``Multinomial`` (tricycle/distributions/multinomial.py, tested in
tests/test_distributions_multinomial.py).
"""

# ruff: noqa: E501, W291, W293

import csv
import re

import numpy as np
import pytest

from tests import d2l_port
from tests.d2l_port import both
from tests.helpers import module
from tests.test_torch_first_hour import TENSOR, kinds, values

pytestmark = [pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive")]

NDARRAY = r"""
import torch
# %%
x = torch.arange(12, dtype=torch.float32)
x
# %%
x.numel()
# %%
x.shape
# %%
X = x.reshape(3, 4)
X
# %%
torch.zeros((2, 3, 4))
# %%
torch.ones((2, 3, 4))
# %%
torch.randn(3, 4)
# %%
torch.tensor([[2, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
# %%
X[-1], X[1:3]
# %%
X[1, 2] = 17
X
# %%
X[:2, :] = 12
X
# %%
torch.exp(x)
# %%
x = torch.tensor([1.0, 2, 4, 8])
y = torch.tensor([2, 2, 2, 2])
x + y, x - y, x * y, x / y, x ** y
# %%
X = torch.arange(12, dtype=torch.float32).reshape((3,4))
Y = torch.tensor([[2.0, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
torch.cat((X, Y), dim=0), torch.cat((X, Y), dim=1)
# %%
X == Y
# %%
X.sum()
# %%
a = torch.arange(3).reshape((3, 1))
b = torch.arange(2).reshape((1, 2))
a, b
# %%
a + b
# %%
before = id(Y)
Y = Y + X
id(Y) == before
# %%
Z = torch.zeros_like(Y)
print('id(Z):', id(Z))
Z[:] = X + Y
print('id(Z):', id(Z))
# %%
before = id(X)
X += Y
id(X) == before
# %%
A = X.numpy()
B = torch.from_numpy(A)
type(A), type(B)
# %%
a = torch.tensor([3.5])
a, a.item(), float(a), int(a)
"""

LINEAR_ALGEBRA = r"""
import torch
# %%
x = torch.tensor(3.0)
y = torch.tensor(2.0)

x + y, x * y, x / y, x**y
# %%
x = torch.arange(3)
x
# %%
x[2]
# %%
len(x)
# %%
x.shape
# %%
A = torch.arange(6).reshape(3, 2)
A
# %%
A.T
# %%
A = torch.tensor([[1, 2, 3], [2, 0, 4], [3, 4, 5]])
A == A.T
# %%
torch.arange(24).reshape(2, 3, 4)
# %%
A = torch.arange(6, dtype=torch.float32).reshape(2, 3)
B = A.clone()  # Assign a copy of A to B by allocating new memory
A, A + B
# %%
A * B
# %%
a = 2
X = torch.arange(24).reshape(2, 3, 4)
a + X, (a * X).shape
# %%
x = torch.arange(3, dtype=torch.float32)
x, x.sum()
# %%
A.shape, A.sum()
# %%
A.shape, A.sum(axis=0).shape
# %%
A.shape, A.sum(axis=1).shape
# %%
A.sum(axis=[0, 1]) == A.sum()  # Same as A.sum()
# %%
A.mean(), A.sum() / A.numel()
# %%
A.mean(axis=0), A.sum(axis=0) / A.shape[0]
# %%
sum_A = A.sum(axis=1, keepdims=True)
sum_A, sum_A.shape
# %%
A / sum_A
# %%
A.cumsum(axis=0)
# %%
y = torch.ones(3, dtype = torch.float32)
x, y, torch.dot(x, y)
# %%
torch.sum(x * y)
# %%
A.shape, x.shape, torch.mv(A, x), A@x
# %%
B = torch.ones(3, 4)
torch.mm(A, B), A@B
# %%
u = torch.tensor([3.0, -4.0])
torch.norm(u)
# %%
torch.abs(u).sum()
# %%
torch.norm(torch.ones((4, 9)))
"""

CALCULUS = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
from matplotlib_inline import backend_inline
import numpy as np
# %%
def f(x):
    return 3 * x ** 2 - 4 * x
# %%
for h in 10.0**np.arange(-1, -6, -1):
    print(f'h={h:.5f}, numerical limit={(f(1+h)-f(1))/h:.5f}')
# %%
def use_svg_display():  #@save
    """Use the svg format to display a plot in Jupyter."""
    backend_inline.set_matplotlib_formats('svg')
# %%
def set_figsize(figsize=(3.5, 2.5)):  #@save
    """Set the figure size for matplotlib."""
    use_svg_display()
    d2l.plt.rcParams['figure.figsize'] = figsize
# %%
#@save
def set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend):
    """Set the axes for matplotlib."""
    axes.set_xlabel(xlabel), axes.set_ylabel(ylabel)
    axes.set_xscale(xscale), axes.set_yscale(yscale)
    axes.set_xlim(xlim),     axes.set_ylim(ylim)
    if legend:
        axes.legend(legend)
    axes.grid()
# %%
#@save
def plot(X, Y=None, xlabel=None, ylabel=None, legend=[], xlim=None,
         ylim=None, xscale='linear', yscale='linear',
         fmts=('-', 'm--', 'g-.', 'r:'), figsize=(3.5, 2.5), axes=None):
    """Plot data points."""

    def has_one_axis(X):  # True if X (tensor or list) has 1 axis
        return (hasattr(X, "ndim") and X.ndim == 1 or isinstance(X, list)
                and not hasattr(X[0], "__len__"))
    
    if has_one_axis(X): X = [X]
    if Y is None:
        X, Y = [[]] * len(X), X
    elif has_one_axis(Y):
        Y = [Y]
    if len(X) != len(Y):
        X = X * len(Y)
        
    set_figsize(figsize)
    if axes is None:
        axes = d2l.plt.gca()
    axes.cla()
    for x, y, fmt in zip(X, Y, fmts):
        axes.plot(x,y,fmt) if len(x) else axes.plot(y,fmt)
    set_axes(axes, xlabel, ylabel, xlim, ylim, xscale, yscale, legend)
# %%
x = np.arange(0, 3, 0.1)
plot(x, [f(x), 2 * x - 3], 'x', 'f(x)', legend=['f(x)', 'Tangent line (x=1)'])
'''

AUTOGRAD = r"""
import torch
# %%
x = torch.arange(4.0)
x
# %%
# Can also create x = torch.arange(4.0, requires_grad=True)
x.requires_grad_(True)
x.grad  # The gradient is None by default
# %%
y = 2 * torch.dot(x, x)
y
# %%
y.backward()
x.grad
# %%
x.grad == 4 * x
# %%
x.grad.zero_()  # Reset the gradient
y = x.sum()
y.backward()
x.grad
# %%
x.grad.zero_()
y = x * x
y.backward(gradient=torch.ones(len(y)))  # Faster: y.sum().backward()
x.grad
# %%
x.grad.zero_()
y = x * x
u = y.detach()
z = u * x

z.sum().backward()
x.grad == u
# %%
x.grad.zero_()
y.sum().backward()
x.grad == 2 * x
# %%
def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c
# %%
a = torch.randn(size=(), requires_grad=True)
d = f(a)
d.backward()
# %%
a.grad == d / a
"""

PROBABILITY = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import random
import torch
from torch.distributions.multinomial import Multinomial
# %%
num_tosses = 100
heads = sum([random.random() > 0.5 for _ in range(num_tosses)])
tails = num_tosses - heads
print("heads, tails: ", [heads, tails])
# %%
fair_probs = torch.tensor([0.5, 0.5])
Multinomial(100, fair_probs).sample()
# %%
Multinomial(100, fair_probs).sample() / 100
# %%
counts = Multinomial(10000, fair_probs).sample()
counts / 10000
# %%
counts = Multinomial(1, fair_probs).sample((10000,))
cum_counts = counts.cumsum(dim=0)
estimates = cum_counts / cum_counts.sum(dim=1, keepdims=True)
estimates = estimates.numpy()

d2l.set_figsize((4.5, 3.5))
d2l.plt.plot(estimates[:, 0], label=("P(coin=heads)"))
d2l.plt.plot(estimates[:, 1], label=("P(coin=tails)"))
d2l.plt.axhline(y=0.5, color='black', linestyle='dashed')
d2l.plt.gca().set_xlabel('Samples')
d2l.plt.gca().set_ylabel('Estimated probability')
d2l.plt.legend();
"""

PANDAS_SECTION = r"""
import os

os.makedirs(os.path.join('..', 'data'), exist_ok=True)
data_file = os.path.join('..', 'data', 'house_tiny.csv')
with open(data_file, 'w') as f:
    f.write('''NumRooms,RoofType,Price
NA,NA,127500
2,NA,106000
4,Slate,178100
NA,NA,140000''')
# %%
import pandas as pd

data = pd.read_csv(data_file)
print(data)
# %%
inputs, targets = data.iloc[:, 0:2], data.iloc[:, 2]
inputs = pd.get_dummies(inputs, dummy_na=True)
print(inputs)
# %%
inputs = inputs.fillna(inputs.mean())
print(inputs)
# %%
import torch

X = torch.tensor(inputs.to_numpy(dtype=float))
y = torch.tensor(targets.to_numpy(dtype=float))
X, y
"""

SECTIONS = {
    "chapter_preliminaries/ndarray.md": NDARRAY,
    "chapter_preliminaries/linear-algebra.md": LINEAR_ALGEBRA,
    "chapter_preliminaries/calculus.md": CALCULUS,
    "chapter_preliminaries/autograd.md": AUTOGRAD,
    "chapter_preliminaries/probability.md": PROBABILITY,
    "chapter_preliminaries/pandas.md": PANDAS_SECTION,
}


# ----------------------------------------------------------- pandas, as the section calls it


class Series:
    """A pandas column (or a row of column means): its values and its labels."""

    def __init__(self, values, index):
        self.values, self.index = np.asarray(values), list(index)

    def to_numpy(self, dtype=None):
        return self.values.astype(dtype) if dtype is not None else self.values


class DataFrame:
    """A pandas table of named columns (numpy arrays: float64, int64, bool or object with
    NaN for a missing string), printed as pandas aligns it."""

    def __init__(self, columns: dict):
        self.columns = dict(columns)

    @property
    def iloc(self):
        return _Rows(self)

    def mean(self) -> Series:
        """Each numeric column's mean over its present values."""
        numeric = {k: v for k, v in self.columns.items() if v.dtype != object}
        return Series([np.nanmean(v.astype(float)) for v in numeric.values()], numeric)

    def fillna(self, value: Series) -> "DataFrame":
        """Each missing number of a column given its value in ``value``."""
        filled = dict(self.columns)
        for name, fill in zip(value.index, value.values, strict=True):
            column = filled[name]
            if column.dtype.kind == "f":
                filled[name] = np.where(np.isnan(column), fill, column)
        return DataFrame(filled)

    def to_numpy(self, dtype=None) -> np.ndarray:
        return np.stack([v.astype(dtype) for v in self.columns.values()], axis=1)

    def __str__(self) -> str:
        cells = [[str(i) for i in range(len(next(iter(self.columns.values()))))]]
        cells[0].insert(0, "")
        for name, column in self.columns.items():
            cells.append([name] + [_cell(v, column.dtype) for v in column])
        widths = [max(map(len, column)) for column in cells]
        rows = zip(*cells, strict=True)
        return "\n".join(
            "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        )


class _Rows:
    """``DataFrame.iloc[:, columns]``: a slice of columns (a table) or one (a Series)."""

    def __init__(self, frame: DataFrame):
        self.frame = frame

    def __getitem__(self, key):
        rows, which = key
        assert rows == slice(None), "the section takes every row"
        names = list(self.frame.columns)
        if isinstance(which, int):
            return Series(self.frame.columns[names[which]], range(len(names)))
        return DataFrame({name: self.frame.columns[name] for name in names[which]})


def _cell(value, dtype) -> str:
    if dtype.kind == "f":
        return "NaN" if np.isnan(value) else f"{value:.1f}"
    return "NaN" if value is None or value != value else str(value)


def read_csv(path) -> DataFrame:
    """A CSV with a header line; "NA" is missing; a column of numbers is int64, float64
    where one is missing, else of strings (object, NaN where missing)."""
    with open(path, newline="") as file:
        header, *rows = list(csv.reader(file))
    columns = {}
    for j, name in enumerate(header):
        cells = [None if row[j] == "NA" else row[j] for row in rows]
        try:
            numbers = [float("nan") if c is None else float(c) for c in cells]
        except ValueError:
            columns[name] = np.array([np.nan if c is None else c for c in cells], dtype=object)
            continue
        whole = None not in cells and all(n.is_integer() for n in numbers)
        columns[name] = np.array(numbers, dtype=np.int64 if whole else np.float64)
    return DataFrame(columns)


def get_dummies(frame: DataFrame, dummy_na: bool = False) -> DataFrame:
    """The string columns one-hot encoded (a bool column per sorted value, and one for the
    missing value with ``dummy_na``) after the numeric ones, as pandas orders them."""
    columns = {k: v for k, v in frame.columns.items() if v.dtype != object}
    for name, column in frame.columns.items():
        if column.dtype == object:
            missing = np.array([v != v for v in column])
            for value in sorted({v for v in column if v == v}):
                columns[f"{name}_{value}"] = column == value
            if dummy_na:
                columns[f"{name}_nan"] = missing
    return DataFrame(columns)


def with_pandas(monkeypatch) -> None:
    """``d2l_port.both``'s stand-ins, with this pandas in place of their empty one."""
    stand_ins = d2l_port.stand_ins

    def stand_ins_and_pandas(lib, monkeypatch):
        stand_ins(lib, monkeypatch)
        parts = {"read_csv": read_csv, "get_dummies": get_dummies, "DataFrame": DataFrame}
        module("pandas", monkeypatch, **parts)

    monkeypatch.setattr(d2l_port, "stand_ins", stand_ins_and_pandas)


# ------------------------------------------------------------------------- what was printed


def shown(printed: str) -> list[list[float]]:
    """Every tensor the cells printed, as its values (``True``/``False`` as 1/0), then the
    numbers printed outside tensors (the objects' addresses aside)."""
    number = lambda v: float({"True": 1, "False": 0}.get(v, v))  # noqa: E731
    tensors = [[number(v) for v in values(inside)] for inside in TENSOR.findall(printed)]
    rest = re.sub(r"0x[0-9a-f]+|id\(Z\): \d+", "", TENSOR.sub("", printed))
    rest = re.sub(r"\b(torch|tricycle)\.\w+", "", rest)  # a dtype's name, as torch.float64
    return tensors + [[number(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?|True|False", rest)]]  # fmt: skip


def same_shown(ours: str, theirs: str, skip=()) -> None:
    """The tensors and numbers tricycle printed are torch's (torch prints four decimals),
    but for the tensors at the indices ``skip`` (random draws): those of the same size."""
    mine, torchs = shown(ours), shown(theirs)
    assert len(mine) == len(torchs)
    for i, (got, want) in enumerate(zip(mine, torchs, strict=True)):
        assert len(got) == len(want), (i, got, want)
        if i not in skip:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(i))


def same_kinds(ours: str, theirs: str) -> None:
    """The same lines, numbers, reprs and addresses aside."""
    strip = lambda text: re.sub(r"0x[0-9a-f]+", "0x", text)  # noqa: E731
    assert kinds(strip(ours)) == kinds(strip(theirs))


def host(tensor) -> np.ndarray:
    return np.asarray(tensor.detach().numpy(), dtype=float)


def plotted(space: dict) -> list[np.ndarray]:
    """The lines (their y values) of the figure that the section drew last."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return [np.asarray(line.get_ydata(), dtype=float) for line in plt.gca().get_lines()]


# ------------------------------------------------------------------------------- the tests


def test_ndarray(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NDARRAY, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    same_shown(ours, theirs, skip={4})  # torch.randn(3, 4): each library's own draw
    for printed in ours, theirs:
        first, second = re.findall(r"id\(Z\): (\d+)", printed)
        assert first == second  # Z[:] = X + Y writes into Z
        assert "False\n" in printed and printed.count("True\n") >= 1, printed
    for name in "X", "Y", "Z", "B":
        np.testing.assert_array_equal(host(our[name]), host(their[name]))
    our["A"][0, 0] = -1.0  # the bridge shares memory both ways
    assert float(our["B"][0, 0]) == -1.0


def test_linear_algebra(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LINEAR_ALGEBRA, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    same_shown(ours, theirs)
    for name in "A", "B", "X", "x", "y", "u", "sum_A":
        np.testing.assert_array_equal(host(our[name]), host(their[name]))
        assert str(our[name].dtype) == str(their[name].dtype).removeprefix("torch.")
    assert ours.splitlines()[-1].startswith("Tensor(6.0")  # the Frobenius norm of 36 ones


def test_calculus(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CALCULUS, tmp_path, monkeypatch, keep=plotted)
    assert ours == theirs  # numpy's numbers: the same text
    limits = [float(v) for v in re.findall(r"numerical limit=([\d.]+)", ours)]
    np.testing.assert_allclose(limits, [2.3, 2.03, 2.003, 2.0003, 2.00003], atol=1e-5)
    x = np.arange(0, 3, 0.1)
    for space in our, their:  # f and its tangent at x = 1, as plotted
        f, tangent = space["kept"]
        np.testing.assert_allclose(f, 3 * x**2 - 4 * x)
        np.testing.assert_allclose(tangent, 2 * x - 3)


def test_autograd(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(AUTOGRAD, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    same_shown(ours, theirs, skip=())
    printed = shown(ours)
    assert printed[:3] == [[0, 1, 2, 3], [28], [0, 4, 8, 12]]  # x, y = 2 x.x and its gradient
    assert printed[3] == printed[6] == printed[7] == [1, 1, 1, 1]  # the book's checks hold
    assert printed[4] == [1, 1, 1, 1] and printed[5] == [0, 2, 4, 6]  # sum's, then x * x's
    assert printed[8] == [1]  # a.grad == d / a: f is linear in a
    np.testing.assert_allclose(host(our["x"].grad), [0, 2, 4, 6])
    np.testing.assert_allclose(float(our["a"].grad), float(our["d"]) / float(our["a"]), rtol=1e-6)


def test_probability(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(PROBABILITY, tmp_path, monkeypatch, keep=plotted)
    same_kinds(ours, theirs)
    assert ours.splitlines()[0] == theirs.splitlines()[0]  # Python's random, seeded alike
    hundred, fractions, large = shown(ours)[:3]
    assert sum(hundred) == 100 and all(v == int(v) for v in hundred)
    assert abs(sum(fractions) - 1) < 1e-6 and abs(large[0] - 0.5) < 0.02
    for space in our, their:
        counts = host(space["counts"])
        assert counts.shape == (10000, 2) and (counts.sum(1) == 1).all()  # one toss each
        np.testing.assert_allclose(space["estimates"][-1], [0.5, 0.5], atol=0.02)
        heads, tails, half = space["kept"]  # the running estimates, then the dashed line
        np.testing.assert_allclose(heads + tails, 1, rtol=1e-6)
        np.testing.assert_array_equal(heads, space["estimates"][:, 0])
        assert (half == 0.5).all()


def test_pandas(tmp_path, monkeypatch):
    with_pandas(monkeypatch)
    (theirs, their), (ours, our) = both(PANDAS_SECTION, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    same_shown(ours, theirs)
    tables = ours.split("   NumRooms")  # the three tables printed: read, encoded, filled
    assert "RoofType_Slate  RoofType_nan" in tables[2] and "NaN" not in tables[3]
    for space in our, their:  # NumRooms' missing values are its mean, 3
        np.testing.assert_array_equal(host(space["X"]), [[3, 0, 1], [2, 0, 1], [4, 1, 0], [3, 0, 1]])  # fmt: skip
        np.testing.assert_array_equal(host(space["y"]), [127500, 106000, 178100, 140000])
    assert str(our["X"].dtype) == "float64" and str(their["X"].dtype) == "torch.float64"


def pytorch_cells(markdown: str) -> str:
    """A chapter's PyTorch code as the book runs it: its ``%%tab`` cells naming pytorch or
    all, in order, parted by ``# %%`` lines."""
    cells = []
    for body in re.findall(r"```\{\.python \.input[^}]*\}\n(.*?)```", markdown, flags=re.S):
        first, _, rest = body.partition("\n")
        tabs = set(first.replace(",", " ").split()[1:])
        if first.startswith("%%tab") and {"pytorch", "all"} & tabs:
            cells.append(rest)
    return "# %%\n".join(cells)


def test_the_held_texts_are_the_books():
    """Each section is its chapter's PyTorch cells, in order, but for the lines marked
    ``# port:`` (where the book's repository is mirrored)."""
    for path, text in SECTIONS.items():
        held, matched, others = d2l_port.against_book(text, pytorch_cells(d2l_port.book(path)))
        assert len(matched) >= len(held) - len(others) - 2, path  # the held text's ends
