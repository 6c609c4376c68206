"""The autodiff graph, drawn: the nodes and edges backward walks, the leaves' gradient norms,
and the SVG, DOT and PNG that show them."""

import gc
import re
import tracemalloc
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

import tricycle as tc
from tricycle.activation import ReLU
from tricycle.configs import DebugConfig
from tricycle.draw import draw, graph
from tricycle.layers import Dense, Sequential
from tricycle.loss import CrossEntropy
from tricycle.models import GPT

SVG = "{http://www.w3.org/2000/svg}"


def square():
    x = tc.to_tensor([1.0, 2.0, 3.0])
    y = x * x + 3 * x
    return x, y


def test_the_graph_of_x_squared_plus_3x():
    x, y = square()
    y.backward(retain_graph=True)
    g = graph(y, labels={"x": x})
    titles = [node.lines[0] for node in g.nodes]
    assert sorted(titles) == ["* 3", "badd", "bmul", "x"]
    kinds = {node.lines[0]: node.kind for node in g.nodes}
    assert kinds == {"badd": "output", "bmul": "op", "* 3": "op", "x": "leaf"}
    named = {node.lines[0]: i for i, node in enumerate(g.nodes)}
    edges = sorted((g.nodes[a].lines[0], g.nodes[b].lines[0]) for a, b in g.edges)
    assert edges == [("* 3", "badd"), ("bmul", "badd"), ("x", "* 3"), ("x", "bmul"), ("x", "bmul")]
    leaf = g.nodes[named["x"]]
    assert leaf.lines[1] == "(3,) float32"
    assert leaf.grad_norm == pytest.approx(np.linalg.norm([5.0, 7.0, 9.0]))  # 2x + 3
    assert leaf.lines[2:] == ["|data| 3.742", "|grad| 12.45"]  # micrograd's data and grad
    # every input sits above the ops that use it, the output at the bottom
    assert all(g.nodes[a].y + g.nodes[a].height < g.nodes[b].y for a, b in g.edges)


def test_the_files_show_the_same_graph(tmp_path):
    x, y = square()
    y.backward(retain_graph=True)
    written = draw(y, tmp_path / "square.svg", labels={"x": x})
    assert set(written) == {"svg", "dot", "png"}  # matplotlib draws the PNG without graphviz
    root = ElementTree.parse(written["svg"]).getroot()
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"badd", "bmul", "* 3", "x", "|grad| 12.45"} <= set(texts)
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]) == 5
    dot = written["dot"].read_text()
    assert len(re.findall(r"n\d+ -> n\d+", dot)) == 5 and "|grad| 12.45" in dot
    assert written["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = pytest.importorskip("matplotlib.image").imread(written["png"])
    assert (image[..., :3] < 0.5).any(axis=-1).mean() > 0.01  # text and arrows on white


def test_a_dense_relu_loss_graph_shows_parameters_and_constants():
    tc.manual_seed(0)
    model = Sequential(Dense(4, 8), ReLU(), Dense(8, 3))
    inputs, labels = tc.randn(5, 4), tc.to_tensor([0, 2, 1, 1, 0], dtype=int)
    loss = CrossEntropy()(labels, model(inputs))
    loss.backward(retain_graph=True)
    parameters = dict(model.named_parameters())
    g = graph(loss, labels={"inputs": inputs, **parameters})
    by_title = {node.lines[0]: node for node in g.nodes}
    assert by_title["cross_entropy"].kind == "output"
    assert by_title["inputs"].kind == "constant" and by_title["inputs"].grad_norm is None
    for name, parameter in parameters.items():
        node = by_title[name]
        assert node.kind == "leaf"
        assert node.grad_norm == pytest.approx(np.linalg.norm(parameter.grad.array), rel=1e-5)
    titles = [node.lines[0] for node in g.nodes]
    assert titles.count("einsum ...i,ij->...j") == 2 and titles.count("dense") == 2
    assert len(g.edges) == 2 + 2 + 1 + 2 + 2 + 1  # (x W + b), relu, (h W + b), the loss


def test_before_backward_there_are_no_gradient_norms():
    x, y = square()
    assert all(node.grad_norm is None for node in graph(y).nodes)
    assert all(node.lines[-1].startswith("|data|") for node in graph(y).nodes)


def test_unknown_formats_are_refused(tmp_path):
    _, y = square()
    with pytest.raises(ValueError, match="formats must be among"):
        draw(y, tmp_path / "g", formats=("pdf",))


# ------------------------------------------------------------------ drawing after backward


def test_after_backward_every_node_shows_its_value_and_gradient_as_micrograd_does():
    # micrograd's README example: L = (a * b + c) * f, then L.backward() and draw_dot(L)
    a, b, c, f = (tc.to_tensor(v) for v in (2.0, -3.0, 10.0, -2.0))
    e = a * b
    L = (e + c) * f
    L.backward()  # frees the graph: no retain_graph
    assert L.args == () and L.back_fns is None  # contract 3: the arrays' closures are gone
    g = graph(L, labels={"a": a, "b": b, "c": c, "f": f, "e": e})
    shown = {node.lines[0]: node.lines[2:] for node in g.nodes}
    # dL/dL = 1, dL/dd = f = -2, dL/df = d = 4, dL/de = dL/dc = -2, dL/da = b f, dL/db = a f
    assert shown == {
        "bmul": ["data -8", "grad 1"], "badd": ["data 4", "grad -2"], "f": ["data -2", "grad 4"],
        "e": ["data -6", "grad -2"], "c": ["data 10", "grad -2"], "a": ["data 2", "grad 6"],
        "b": ["data -3", "grad -4"],
    }  # fmt: skip
    assert sorted((g.nodes[i].lines[0], g.nodes[j].lines[0]) for i, j in g.edges) == [
        ("a", "e"), ("b", "e"), ("badd", "bmul"), ("c", "badd"), ("e", "badd"), ("f", "bmul"),
    ]  # fmt: skip


def test_after_backward_the_gradients_of_freed_tensors_are_their_norms(tmp_path):
    x, y = square()
    y.backward()
    nodes = {node.lines[0]: node for node in graph(y, labels={"x": x}).nodes}
    ones = np.sqrt(3.0)  # y's seed, and what flows into each of badd's inputs
    for name in ("badd", "bmul", "* 3"):
        assert nodes[name].grad_norm == pytest.approx(ones)
    assert nodes["x"].grad_norm == pytest.approx(np.linalg.norm([5.0, 7.0, 9.0]))
    written = draw(y, tmp_path / "square", labels={"x": x}, formats=("svg",))
    texts = [t.text for t in ElementTree.parse(written["svg"]).getroot().iter(f"{SVG}text")]
    assert texts.count("|grad| 1.732") == 3 and "|grad| 12.45" in texts


def test_a_second_backward_through_a_freed_graph_still_fails_clearly():
    x, y = square()
    y.backward()
    with pytest.raises(RuntimeError, match="freed by an earlier backward"):
        y.backward()


def _bytes_held_after_backward(retain_graph: bool) -> int:
    """What the forward and backward of a small GPT allocated (numpy and Python objects) that
    is still held while the loss is kept, its gradients dropped."""
    config = DebugConfig(embedding_dim=32, context_window=32, vocab_size=64, n_heads=2,
                         n_layers=2, dropout=0.0)  # fmt: skip
    np.random.seed(0)
    model = GPT(config)
    tokens = np.random.default_rng(0).integers(0, 64, size=(16, 32))

    def loss_after_backward():
        loss = CrossEntropy()(tokens, model(tokens))
        loss.backward(retain_graph=retain_graph)
        model.zero_grad()
        return loss

    loss_after_backward()  # the first pass fills caches that live on (kernels, registries)
    gc.collect()
    tracemalloc.start()
    try:
        loss = loss_after_backward()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - loss.array.nbytes
    finally:
        tracemalloc.stop()


def test_after_backward_a_gpt_holds_no_more_memory_than_a_few_records_per_op():
    freed, retained = _bytes_held_after_backward(False), _bytes_held_after_backward(True)
    # the traces: a few hundred bytes per tensor of the graph, whatever the batch, against
    # the arrays of the whole forward
    assert freed < 0.01 * retained, (freed, retained)
    assert freed < 64 * 1024, freed
