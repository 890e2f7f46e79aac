"""Building, saving and loading indexes and their parts.

Importing the package imports :mod:`hopgraph.index.registry`, which lists the built-in parts.
"""

from hopgraph.index.part import IndexPart
from hopgraph.index.registry import available_parts, register_part, split_part_options
from hopgraph.index.store import Index

__all__ = ["Index", "IndexPart", "available_parts", "register_part", "split_part_options"]
