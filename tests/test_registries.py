"""The method and part registries, and the direction of imports between index, retrieve and
defaults (issue 39): one module lists the built-in methods, one the built-in parts; the base
modules import none of them; no import circle joins modules of different jobs."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import networkx as nx

import hopgraph
import hopgraph.index
import hopgraph.retrieve
from hopgraph.index.part import IndexPart
from hopgraph.index.registry import BUILTIN_PARTS, available_parts, part_class
from hopgraph.retrieve.base import Retriever
from hopgraph.retrieve.registry import BUILTIN_METHODS, list_methods, method_class

SRC = Path(hopgraph.__file__).parent


def _classes_defined_in(package: ModuleType, base: type) -> set[type]:
    """The classes of ``package``'s modules that subclass ``base`` and set their own ``name``."""
    found = set()
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, base) and obj.__module__ == module.__name__ and "name" in vars(obj):
                found.add(obj)
    return found


def test_the_registry_lists_every_method_class_and_finds_it_by_name():
    assert _classes_defined_in(hopgraph.retrieve, Retriever) == set(BUILTIN_METHODS)
    names = [cls.name for cls in BUILTIN_METHODS]
    assert len(set(names)) == len(names) and set(names) <= set(list_methods())
    assert all(method_class(cls.name) is cls for cls in BUILTIN_METHODS)


def test_the_registry_lists_every_part_class_and_finds_it_by_name():
    assert _classes_defined_in(hopgraph.index, IndexPart) == set(BUILTIN_PARTS)
    names = [cls.name for cls in BUILTIN_PARTS]
    assert len(set(names)) == len(names) and set(names) <= set(available_parts())
    assert all(part_class(cls.name) is cls for cls in BUILTIN_PARTS)


def _imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Every ``hopgraph`` module ``path`` imports, at the top or inside functions (not the ones
    under ``if TYPE_CHECKING``, which never run)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                out.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*up, base] if base else up)
                out.update(f"{base}.{a.name}" for a in child.names)
                out.add(base)
            walk(child)

    walk(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in out if name.split(".")[0] == "hopgraph"}


def import_graph() -> nx.DiGraph:
    """Module → the modules it imports, over src/hopgraph. An import of a module's own package
    (a submodule reading its package's ``__init__``) is no edge: a package re-exporting its own
    submodules is not a circle between jobs."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, (path, is_package) in modules.items():
        for name in _imports(path, module, is_package):
            while name and name not in modules:  # an imported name: its module
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(f"{name}."):
                graph.add_edge(module, name)
    return graph


def test_no_import_circle_anywhere_in_hopgraph():
    """No two modules of hopgraph import each other, directly or through others, at the top or
    inside functions: a loader that imports its implementation on demand while the
    implementation imports a helper back is a circle too (a shared helper goes to a leaf
    module). The only circles allowed are a package ``__init__`` and its own submodules, which
    :func:`import_graph` leaves out."""
    graph = import_graph()
    circles = [
        " -> ".join([*cycle, cycle[0]])
        for c in nx.strongly_connected_components(graph)
        if len(c) > 1
        for cycle in [next(nx.simple_cycles(graph.subgraph(c)))]
    ]
    assert circles == [], "import circles (one cycle of each):\n" + "\n".join(circles)


def test_index_imports_nothing_above_it_and_no_base_module_imports_a_plugin():
    """The base modules import no method or part; index imports nothing above it (retrieve,
    defaults)."""
    graph = import_graph()
    assert not any(m.startswith("hopgraph.retrieve") for m in graph.successors("hopgraph.index"))
    for module in [m for m in graph if m.startswith("hopgraph.index.")]:
        above = [m for m in graph.successors(module) if m.startswith("hopgraph.retrieve")]
        assert above == [] and "hopgraph.defaults" not in graph.successors(module), module
    for base, plugins in (
        ("hopgraph.retrieve.base", BUILTIN_METHODS),
        ("hopgraph.index.part", BUILTIN_PARTS),
    ):
        assert not nx.descendants(graph, base) & {cls.__module__ for cls in plugins}, base


def test_any_module_imported_first_finds_every_method_and_part():
    """In a fresh interpreter, each module of index and retrieve imported first (the packages'
    ``__init__`` import the registries) leaves both tables full."""
    modules = [
        info.name
        for package in (hopgraph.index, hopgraph.retrieve)
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")
    ]
    script = f"""
import importlib, sys
for name in {modules!r}:
    for loaded in [m for m in sys.modules if m == "hopgraph" or m.startswith("hopgraph.")]:
        del sys.modules[loaded]
    importlib.import_module(name)
    from hopgraph.index.registry import available_parts
    from hopgraph.retrieve.base import list_methods
    assert len(available_parts()) == {len(BUILTIN_PARTS)}, (name, available_parts())
    assert len(list_methods()) == {len(BUILTIN_METHODS)}, (name, list_methods())
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
