"""Building, saving and loading indexes and their parts."""

from hopgraph.index.part import IndexPart, available_parts, register_part
from hopgraph.index.store import Index, split_part_options

__all__ = ["Index", "IndexPart", "available_parts", "register_part", "split_part_options"]
