"""The built-in index parts, listed in one place; the lookups that find a part by name; the order
parts are built in; options given per part.

The dependencies run one way: :mod:`hopgraph.index.part` defines :class:`IndexPart`; each part
module imports it and defines its part; this module imports the part modules and registers
every class of :data:`BUILTIN_PARTS`. No part looks another up by name (a part names the parts
it is built from, and the index hands them over), so the table lives here. The index
(:mod:`hopgraph.index.store`), streaming builds and the CLI find parts through this module; a
part of one's own is added with :func:`register_part` (``hopgraph.index.register_part``).
"""

from __future__ import annotations

from typing import Any

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index.corpus_graph import CorpusGraphPart
from hopgraph.index.dense import DensePart
from hopgraph.index.entities import EntityPart
from hopgraph.index.links import LinksPart
from hopgraph.index.part import IndexPart
from hopgraph.index.partial_triples import PartialTriplesPart
from hopgraph.index.same_as import SameAsPart
from hopgraph.index.sparse import SparsePart
from hopgraph.index.triples import TriplesPart

PartOptions = dict[str, dict[str, Any]]
"""Build options of several parts: ``{part: {option: value}}``."""

_PARTS: dict[str, type[IndexPart]] = {}


def register_part(cls: type[IndexPart]) -> type[IndexPart]:
    """Make a part buildable by name; usable as a class decorator."""
    _PARTS[cls.name] = cls
    return cls


BUILTIN_PARTS: tuple[type[IndexPart], ...] = (
    SparsePart,
    DensePart,
    EntityPart,
    LinksPart,
    CorpusGraphPart,
    TriplesPart,
    PartialTriplesPart,
    SameAsPart,
)
"""Every built-in part, each registered under its ``name``."""

for _cls in BUILTIN_PARTS:
    register_part(_cls)
del _cls


def part_class(name: str) -> type[IndexPart]:
    """The class of part ``name``."""
    try:
        return _PARTS[name]
    except KeyError:
        raise ConfigError(
            f"unknown index part {name!r}; available: {', '.join(sorted(_PARTS))}"
        ) from None


def available_parts() -> list[str]:
    """Names of every registered part."""
    return sorted(_PARTS)


def dependency_order(names: list[str], options: PartOptions) -> list[str]:
    """``names`` and the parts they are built from, each after its dependencies."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ConfigError(f"index parts depend on each other in a cycle: {[*path, name]}")
        cls = part_class(name)
        opts = make_options(cls.Options, options.get(name), what=f"part {name!r}")
        for dep in cls.requires_for(opts):
            visit(dep, (*path, name))
        order.append(name)

    for name in names:
        visit(name, ())
    return order


INDEX_WIDE: dict[str, str] = {"language": "sparse"}
"""Options written without their part (``--set language=fr``), and the part that holds them."""


def split_part_options(flat: dict[str, Any]) -> PartOptions:
    """``{"dense.hnsw": "true"}`` → ``{"dense": {"hnsw": "true"}}`` (CLI ``--set`` values); an
    option of :data:`INDEX_WIDE` may be written alone (``language=fr``)."""
    out: PartOptions = {}
    for key, value in flat.items():
        if key in INDEX_WIDE:
            key = f"{INDEX_WIDE[key]}.{key}"
        part, dot, opt = key.partition(".")
        if not dot or not opt:
            raise ConfigError(f"index options are written part.option=value, got {key!r}")
        out.setdefault(part, {})[opt] = value
    return out
