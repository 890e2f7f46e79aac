"""Graph algorithms on sparse matrices: Personalized PageRank (power iteration, its local
variant, and push)."""

from hopgraph.graph.ppr import ppr_exact, ppr_power, ppr_power_local, ppr_push, row_normalize

__all__ = ["ppr_exact", "ppr_power", "ppr_power_local", "ppr_push", "row_normalize"]
