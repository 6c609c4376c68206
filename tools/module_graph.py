"""The package's module graph in numbers: what a reader and the layer contracts see.

    python tools/module_graph.py            # this checkout
    python tools/module_graph.py --root ..  # another checkout's tricycle (an older commit)

Prints the modules and lines of each top-level part (the package's own modules, each
sub-package), the import cycles (strongly connected groups of modules, imports inside
functions included), the longest chain of imports, the largest modules, what
``import tricycle.tensor`` loads, and the lines of the reading guide's files. It reads the
imports statically with grimp (installed with import-linter: ``pip install -e ".[dev]"``).
"""

import argparse
import subprocess
import sys
from pathlib import Path

import grimp
from reading_guide import FILES as READING_GUIDE  # noqa: E402 - tools/ is on sys.path


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def module_path(root: Path, module: str) -> Path:
    base = root / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def cycles(graph, modules: list[str]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & set(modules)) for m in modules}
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return groups


def depth(graph, modules: list[str]) -> int:
    """The number of modules on the longest chain of imports (cycles cut where met)."""
    memo: dict[str, int] = {}
    members = set(modules)

    def longest(module: str, seen: frozenset) -> int:
        if module in memo:
            return memo[module]
        below = graph.find_modules_directly_imported_by(module) & members
        result = 1 + max((longest(m, seen | {module}) for m in below if m not in seen), default=0)
        memo[module] = result
        return result

    return max((longest(m, frozenset()) for m in modules), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the checkout whose tricycle/ to read (default: this one)",
    )
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    graph = grimp.build_graph("tricycle", include_external_packages=False, cache_dir=None)
    modules = sorted(graph.modules)
    total = sum(lines(module_path(root, m)) for m in modules)
    print(f"{len(modules)} modules, {total} lines in {root.name}/tricycle")

    parts: dict[str, list[str]] = {}
    for m in modules:
        pieces = m.split(".")
        is_package = module_path(root, m).name == "__init__.py"
        top = len(pieces) == 2 and not is_package
        key = "tricycle (top level)" if top else ".".join(pieces[:2])
        parts.setdefault(key, []).append(m)
    print("\nparts:")
    for key, members in sorted(parts.items()):
        n = sum(lines(module_path(root, m)) for m in members)
        print(f"  {key:32} {len(members):3} modules {n:6} lines")

    groups = cycles(graph, modules)
    print(f"\nimport cycles: {len(groups)}")
    for group in groups:
        print(f"  {len(group)} modules: {', '.join(group)}")
    print(f"longest chain of imports: {depth(graph, modules)} modules")

    print("\nlargest modules:")
    sizes = sorted(((lines(module_path(root, m)), m) for m in modules), reverse=True)
    for n, m in sizes[:8]:
        print(f"  {n:5}  {m}")

    code = (
        "import sys, tricycle.tensor; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tricycle'))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                            text=True, env={"PYTHONPATH": str(root), "PATH": ""})  # fmt: skip
    names = eval(loaded.stdout) if loaded.returncode == 0 else []  # noqa: S307 - our own print
    print(f"\nimport tricycle.tensor loads {len(names)} tricycle modules; backends among them:",
          [n for n in names if "kernels" in n or "backends" in n])  # fmt: skip

    guide = [(path, lines(root / path)) for path in READING_GUIDE]
    print(f"\nreading guide, the reference path of a GPT training step: "
          f"{sum(n for _, n in guide)} lines in {sum(1 for _, n in guide if n)} files")  # fmt: skip
    for path, n in guide:
        print(f"  {n:5}  {path}")


if __name__ == "__main__":
    main()
