"""The autodiff graph, drawn: the nodes and edges backward walks, the leaves' gradient norms,
and the SVG, DOT and PNG that show them."""

import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

import tricycle as tc
from tricycle.activation import ReLU
from tricycle.draw import draw, graph
from tricycle.layers import Dense, Sequential
from tricycle.loss import CrossEntropy

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
    assert leaf.lines[2] == "|grad| 12.45"
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


def test_before_backward_there_are_no_gradient_norms_and_after_a_freeing_one_a_hint():
    x, y = square()
    assert all(node.grad_norm is None for node in graph(y).nodes)
    y.backward()  # frees the graph
    with pytest.raises(ValueError, match=r"freed by backward\(\); call backward\(retain_graph"):
        graph(y)


def test_unknown_formats_are_refused(tmp_path):
    _, y = square()
    with pytest.raises(ValueError, match="formats must be among"):
        draw(y, tmp_path / "g", formats=("pdf",))
