"""The shape of the package, pinned (docs/architecture.md): the facade is one class over plain
modules, modules stay small, imports form no cycle and point down the layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chronomem

SRC = Path(chronomem.__file__).resolve().parent

# The layers of docs/architecture.md, bottom first. A module may import its own layer and the
# layers below it, with one exception: the backends (stores, embedders, llm) import only the
# vocabulary, so that every layer above can program against their protocols.
LAYERS: dict[str, int] = {
    "errors": 0, "clock": 0, "config": 0, "policies": 0, "checks": 0, "arrays": 0, "text": 0,
    "timeref": 0, "model": 0, "retry": 0, "analysis": 0, "verbs": 0, "telemetry": 0,
    "webhooks": 0,
    "stores": 1, "embedders": 1, "llm": 1,
    "scoring": 2, "graph": 2, "lifecycle": 2,
    "retrieval": 3, "context": 3, "reflection": 3, "writing": 3, "transfer": 3, "extraction": 3,
    "engine": 4,
    "cli": 5, "server": 5, "client": 5, "adapters": 5,
}  # fmt: skip
BACKENDS = {"stores", "embedders", "llm"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("chronomem", *parts)).removesuffix(".__init__")
        out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The chronomem modules ``name`` imports at run time (function-level imports included,
    ``if TYPE_CHECKING:`` blocks excluded)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit(stmt)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("chronomem"))
            elif isinstance(child, ast.ImportFrom) and child.module:
                base = child.module
                if child.level:
                    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                    for _ in range(child.level - 1):
                        package = package.rsplit(".", 1)[0]
                    base = f"{package}.{base}"
                if base.startswith("chronomem"):
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        found.add(sub if sub in known else base)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) & known for name, path in modules.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "chronomem"


def test_memory_is_one_class_over_plain_modules() -> None:
    """One facade, written in a few modules by concept (the read-only view, the writes, the
    causal graph's verbs, the changes by filter, the rest), over plain function modules: no
    other base classes, no deep tree (every part of the facade stands directly on the view)."""
    facade = chronomem.Memory.__mro__[:-1]
    assert chronomem.Memory.__mro__[-1] is object
    assert all(c.__module__.startswith("chronomem.engine.") for c in facade), facade
    view = chronomem.engine.view.MemoryView
    assert all(part.__bases__ == (view,) for part in chronomem.Memory.__bases__)
    assert len(facade) <= 5


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 500


def test_imports_form_no_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if _is_package_of(nxt, node):
                continue  # a module's own package __init__ runs first; not a dependency cycle
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def _is_package_of(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_dependencies_point_down_the_layers() -> None:
    wrong = []
    for module, imported in sorted(_graph().items()):
        top = _top(module)
        if top == "chronomem":
            continue  # the package root re-exports the public API
        for other in sorted(imported):
            other_top = _top(other)
            if other_top in {"chronomem", top}:
                continue
            too_high = LAYERS[other_top] > LAYERS[top]
            backend_reaching_up = top in BACKENDS and LAYERS[other_top] > 0
            if too_high or backend_reaching_up:
                wrong.append(f"{module} -> {other}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_every_package_is_in_a_layer() -> None:
    assert {_top(m) for m in _graph()} - {"chronomem"} <= set(LAYERS)


def test_the_recall_walk_through_names_functions_that_exist() -> None:
    """docs/architecture.md follows a recall in at most ten steps, each naming a function."""
    import importlib
    import re

    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    walk = doc[doc.index("## One recall") : doc.index("## Stores")]
    steps = re.findall(r"^(\d+)\. ", walk, re.M)
    assert 1 <= len(steps) <= 10
    names = set(re.findall(r"`(chronomem\.[\w.]+)`", walk))
    assert len(names) >= 10
    for name in sorted(names):
        module, _, attr = name.rpartition(".")
        assert callable(getattr(importlib.import_module(module), attr)), name
