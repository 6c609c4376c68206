"""The autodiff graph, drawn: the tensors ``backward`` walks, and how they connect.

    y = x * x + 3 * x
    y.backward()
    tc.draw(y, "square", labels={"x": x})  # square.svg, square.png, square.dot

Each op's output is a box with the op's name, its output's shape and dtype; each leaf (a
tensor no op made: an input, a parameter) a box with its shape and dtype. Every box shows
its value (``data 3`` for one element, else the norm ``|data| 12.4``) and, once backward has
run, its gradient the same way, as micrograd's ``draw_dot`` does. Backward frees the graph's
arrays but leaves a small record per tensor (``tricycle.traces``): drawing after it shows every
op with the gradient that flowed through it (summarised during backward for tensors of up to
``SUMMARY_LIMIT`` elements on the CPU; larger ones show theirs if still alive, as parameters
are). ``backward(retain_graph=True)`` keeps the graph itself. Arrows go from an op's inputs
to its output, as the data flows forward; ``backward`` walks them the other way. Inputs that
need no gradient (data, labels, constants) are grey with dashed arrows: backward does not go
there.

The picture is laid out here, without dependencies: every tensor on the row of its longest
distance from the output (the output at the bottom, each tensor above everything that uses
it), each row ordered by where its users sit. It is written as SVG (always), as graphviz's
DOT text (render it with ``dot -Tpdf``), and as PNG where possible: by graphviz's ``dot``
when it is installed, else by matplotlib drawing the same layout.

Nothing here imports the rest of tricycle but ``tricycle.traces`` (which imports none of it): a
tensor is read through ``.args``, ``.name``, ``.array``, ``.grad`` and ``.backward_trace``, so
``Tensor.draw`` can call this module without an import cycle.
"""

import html
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tricycle.traces import Trace, summarise

__all__ = ["Graph", "Node", "draw", "graph"]

FORMATS = ("svg", "png", "dot")
CHAR_WIDTH, LINE_HEIGHT, PAD = 7.2, 15, 8  # monospace at 12 px: a box's size from its text
ROW_GAP, COLUMN_GAP, MARGIN = 44, 18, 12
COLOURS = {"output": "#ffe08a", "op": "#dbeafe", "leaf": "#d1fae5", "constant": "#eeeeee"}


@dataclass
class Node:
    """One tensor of the graph: ``kind`` "output", "op", "leaf" (needs a gradient) or
    "constant" (needs none); its label's ``lines``; ``grad_norm`` of a leaf after backward;
    ``args``, the indices of its inputs' nodes (in order, repeated when an input is used
    twice); and its box (``x``, ``y``: top-left corner, ``width``, ``height``) once laid out."""

    kind: str
    lines: list[str]
    grad_norm: float | None = None
    args: list[int] = field(default_factory=list)
    rank: int = 0
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0


@dataclass
class Graph:
    """The nodes (the output first) and the edges (input index, output index) of a graph,
    laid out in a ``width`` x ``height`` picture."""

    nodes: list[Node]
    width: float = 0.0
    height: float = 0.0

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(arg, i) for i, node in enumerate(self.nodes) for arg in node.args]


def graph(tensor, labels: dict | None = None) -> Graph:
    """The graph ``backward`` walks from ``tensor``, laid out. ``labels`` ({name: tensor})
    names tensors (leaves above all: ``dict(model.named_parameters())``); an unnamed
    leaf is called "leaf" (or "constant", when it needs no gradient). After a ``backward()``
    that freed the graph, it is drawn from the records backward left (``tricycle.traces``),
    each with the gradient that flowed through it."""
    names = {id(t): name for name, t in (labels or {}).items()}
    if tensor.args is not None and len(tensor.args) == 0 and tensor.backward_trace is not None:
        tensor = tensor.backward_trace  # freed by backward: its trace reads alike
        names = _trace_names(tensor, names)
    order, index = _walk(tensor)
    nodes = []
    for t in order:
        args = t.args
        if args is not None and len(args) == 0:  # freed, by a backward older than traces
            raise ValueError(
                f"draw: the graph through {t.name or 'a tensor'} (shape {tuple(t.shape)}) was "
                "freed by backward(); call backward(retain_graph=True), or draw before backward "
                "(then without gradient norms)"
            )
        node = _node(t, names.get(id(t)), is_output=t is tensor)
        node.args = [index[id(arg)] for arg in args or ()]
        nodes.append(node)
    return _layout(Graph(nodes))


def draw(tensor, path, labels: dict | None = None, formats=FORMATS) -> dict:
    """Draw the graph ``backward`` walks from ``tensor`` (``graph``) into ``path`` with each
    suffix of ``formats``: .svg, .dot and .png (where graphviz or matplotlib can render it).
    A suffix on ``path`` is replaced. Returns {format: path written}."""
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"draw: formats must be among {FORMATS}, got {sorted(unknown)}")
    laid_out = graph(tensor, labels)
    path = Path(path)
    path = path.with_suffix("") if path.suffix[1:] in FORMATS else path
    path.parent.mkdir(parents=True, exist_ok=True)
    written = {}
    if "svg" in formats:
        written["svg"] = _write(path.with_suffix(".svg"), to_svg(laid_out))
    if "dot" in formats:
        written["dot"] = _write(path.with_suffix(".dot"), to_dot(laid_out))
    if "png" in formats and _write_png(laid_out, path.with_suffix(".png")):
        written["png"] = path.with_suffix(".png")
    return written


# ====================================================================== the graph
def _walk(tensor) -> tuple[list, dict]:
    """Every tensor reachable through ``args``, each after all of its users (a reversed
    depth-first post-order: the output first), and {id: position}."""
    post, seen, stack = [], set(), [(tensor, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            post.append(t)
        elif id(t) not in seen:
            seen.add(id(t))
            stack.append((t, True))
            stack.extend((arg, False) for arg in reversed(t.args or ()) if id(arg) not in seen)
    order = post[::-1]
    return order, {id(t): i for i, t in enumerate(order)}


def _node(t, name: str | None, is_output: bool) -> Node:
    """A tensor's (or a trace's) box: its name, shape and dtype, the summary of its value,
    and of its gradient once backward has run (micrograd's data and grad)."""
    lines = [f"{tuple(t.shape)} {t.dtype}"]
    value, grad = _summaries(t)
    if value is not None:
        lines.append(_summary_line("data", value, t.shape))
    if t.args is not None:  # an op's output
        kind, title = ("output" if is_output else "op"), name or t.name or "op"
    elif not t.requires_grad:
        kind, title = "constant", name or t.name or "constant"
    else:
        kind, title = "leaf", name or t.name or "leaf"
    node = Node(kind, [title, *lines])
    if grad is not None:
        node.grad_norm = abs(grad)
        node.lines.append(_summary_line("grad", grad, t.shape))
    return node


def _summaries(t) -> tuple[float | None, float | None]:
    """(value, gradient) of a tensor or a trace: a one-element array's number, else a norm."""
    if isinstance(t, Trace):
        return t.value, t.grad
    grad = None if t.grad is None else summarise(t.grad.array, None)
    return summarise(t.array, None), grad


def _summary_line(what: str, summary: float, shape) -> str:
    """"data 3" for one element, "|grad| 12.45" (the norm) for more."""
    one = all(n == 1 for n in shape)
    return f"{what} {summary:.4g}" if one else f"|{what}| {summary:.4g}"


def _trace_names(trace: Trace, names: dict) -> dict:
    """{id(trace): name} for the traces (reachable from ``trace``) of the tensors ``names``
    names ({id(tensor): name}) that are still alive."""
    named, seen, stack = {}, set(), [trace]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        alive = t.tensor
        if alive is not None and id(alive) in names:
            named[id(t)] = names[id(alive)]
        stack.extend(t.args or ())
    return named


# ====================================================================== the layout
def _layout(g: Graph) -> Graph:
    """Rows by the longest distance from the output; each row's boxes in the order of the
    mean position of their users, pushed apart where they would overlap."""
    for node in g.nodes:  # users come first: a node's rank is final when it is reached
        for arg in node.args:
            g.nodes[arg].rank = max(g.nodes[arg].rank, node.rank + 1)
        node.width = max(map(len, node.lines)) * CHAR_WIDTH + 2 * PAD
        node.height = len(node.lines) * LINE_HEIGHT + 2 * PAD
    ports = {i: [] for i in range(len(g.nodes))}  # where each node's arrows end: (user, k)
    for j, node in enumerate(g.nodes):
        for k, arg in enumerate(node.args):
            ports[arg].append((j, k))
    rows: dict[int, list[int]] = {}
    for i, node in enumerate(g.nodes):
        rows.setdefault(node.rank, []).append(i)
    row_height = max(node.height for node in g.nodes) + ROW_GAP
    top = max(rows)
    for rank in sorted(rows):  # the output's row first: each row's users are placed

        def wanted(i: int) -> float:  # the mean of the points its arrows end at
            ends = [_port(g.nodes[j], k) for j, k in ports[i]]
            return sum(ends) / len(ends) if ends else 0.0

        row = sorted(rows[rank], key=lambda i: (wanted(i), i))
        right = -float("inf")
        for i in row:  # left to right, each as near its place as the one before allows
            node = g.nodes[i]
            node.x = max(wanted(i) - node.width / 2, right + COLUMN_GAP)
            node.y = MARGIN + (top - rank) * row_height
            right = node.x + node.width
        shift = sum(wanted(i) - g.nodes[i].x - g.nodes[i].width / 2 for i in row) / len(row)
        for i in row:  # the pushes to the right, shared out: the row centred on its places
            g.nodes[i].x += shift
    left = min(node.x for node in g.nodes)
    for node in g.nodes:
        node.x += MARGIN - left
    g.width = max(node.x + node.width for node in g.nodes) + MARGIN
    g.height = max(node.y + node.height for node in g.nodes) + MARGIN
    return g


def _ports(g: Graph):
    """Each edge as (start, end, dashed): from the input's bottom centre to a point on the
    top of the op's box, one point per argument (so x * x shows both of its arrows)."""
    for node in g.nodes:
        for k, arg in enumerate(node.args):
            source = g.nodes[arg]
            start = (source.x + source.width / 2, source.y + source.height)
            end = (_port(node, k), node.y)
            yield start, end, source.kind == "constant"


def _port(node: Node, k: int) -> float:
    """Where on the top of ``node``'s box the arrow of its argument ``k`` ends."""
    return node.x + node.width * (k + 1) / (len(node.args) + 1)


# ====================================================================== the formats
def to_svg(g: Graph) -> str:
    """The laid-out graph as a standalone SVG document."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{g.width:.0f}" '
        f'height="{g.height:.0f}" viewBox="0 0 {g.width:.0f} {g.height:.0f}" '
        'font-family="monospace" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
        "</defs>",
        f'<rect width="{g.width:.0f}" height="{g.height:.0f}" fill="white"/>',
    ]
    for (x1, y1), (x2, y2), dashed in _ports(g):
        bend = (y2 - y1) / 2
        dash = ' stroke-dasharray="4,3"' if dashed else ""
        out.append(
            f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} '
            f'{x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}" fill="none" stroke="#555"{dash} '
            'marker-end="url(#arrow)"/>'
        )
    for node in g.nodes:
        dash = ' stroke-dasharray="4,3"' if node.kind == "constant" else ""
        out.append(
            f'<g class="node {node.kind}"><rect x="{node.x:.1f}" y="{node.y:.1f}" '
            f'width="{node.width:.1f}" height="{node.height:.1f}" rx="6" '
            f'fill="{COLOURS[node.kind]}" stroke="#333"{dash}/>'
        )
        for k, line in enumerate(node.lines):
            weight = ' font-weight="bold"' if k == 0 else ""
            y = node.y + PAD + (k + 0.8) * LINE_HEIGHT
            out.append(
                f'<text x="{node.x + node.width / 2:.1f}" y="{y:.1f}" '
                f'text-anchor="middle"{weight}>{html.escape(line)}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def to_dot(g: Graph) -> str:
    """The graph as graphviz's DOT text (inputs above the ops that use them)."""
    out = [
        "digraph tricycle {",
        '  node [shape=box, style="rounded,filled", fontname="monospace"];',
    ]
    for i, node in enumerate(g.nodes):
        label = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in node.lines)
        style = ', style="rounded,filled,dashed"' if node.kind == "constant" else ""
        out.append(f'  n{i} [label="{label}", fillcolor="{COLOURS[node.kind]}"{style}];')
    for arg, i in g.edges:
        dashed = " [style=dashed]" if g.nodes[arg].kind == "constant" else ""
        out.append(f"  n{arg} -> n{i}{dashed};")
    out.append("}")
    return "\n".join(out) + "\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _write_png(g: Graph, path: Path) -> bool:
    """PNG by graphviz's dot where installed, else by matplotlib; False where neither is."""
    dot = shutil.which("dot")
    if dot is not None:
        done = subprocess.run([dot, "-Tpng", "-o", str(path)], input=to_dot(g), text=True,
                              capture_output=True, check=False)  # fmt: skip
        if done.returncode == 0:
            return True
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
        from matplotlib.figure import Figure  # noqa: PLC0415
        from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: PLC0415
        from matplotlib.path import Path as Curve  # noqa: PLC0415
    except ImportError:
        return False
    figure = Figure(figsize=(g.width / 100, g.height / 100), dpi=150)  # a pixel is 1/100 inch
    FigureCanvasAgg(figure)  # no pyplot: the program's matplotlib state stays as it was
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, g.width), ylim=(g.height, 0))
    ax.axis("off")
    points = 72 / 100  # the SVG's pixels in points
    for (x1, y1), (x2, y2), dashed in _ports(g):
        bend = (y2 - y1) / 2
        curve = Curve([(x1, y1), (x1, y1 + bend), (x2, y2 - bend), (x2, y2)],
                      [Curve.MOVETO, Curve.CURVE4, Curve.CURVE4, Curve.CURVE4])  # fmt: skip
        ax.add_patch(FancyArrowPatch(path=curve, arrowstyle="-|>", mutation_scale=10,
                                     color="#555", linestyle="--" if dashed else "-"))  # fmt: skip
    for node in g.nodes:
        ax.add_patch(FancyBboxPatch(
            (node.x, node.y), node.width, node.height, boxstyle="round,pad=0,rounding_size=6",
            facecolor=COLOURS[node.kind], edgecolor="#333",
            linestyle="--" if node.kind == "constant" else "-",
        ))  # fmt: skip
        for k, line in enumerate(node.lines):
            ax.text(node.x + node.width / 2, node.y + PAD + (k + 0.5) * LINE_HEIGHT, line,
                    ha="center", va="center", family="monospace", fontsize=12 * points,
                    fontweight="bold" if k == 0 else "normal")  # fmt: skip
    figure.savefig(path, format="png")
    return True
