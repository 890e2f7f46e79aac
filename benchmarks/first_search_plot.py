"""The cost of a staged build against corpus size, log-log, from ``first_search.py``'s records.
Table: docs/results.md, "What to expect at 10k, 100k and 1M passages" (its plot). Run time: seconds
(estimated: one plot from the recorded JSON).

    .venv/bin/python benchmarks/first_search_plot.py \\
        [--results benchmarks/results/first_search.json] [--out docs/img/first_search.png]

Four panels over the sizes recorded (10k, 100k and 1M passages here): minutes from ``hopgraph
index``'s start to the first default search and to the complete index; peak RSS until the first
search, over the whole build, and of a loaded complete index after a default search; disk per
passage beyond the text, searchable and complete; p50 of the default without vectors, of the
complete default, and of BM25. A size whose build was not run to its end has no complete-index
point, except the time panel's hollow marker: the vector stage's measured rate projected over
every passage (stage 1 + N / rate), labelled as a projection.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def series(rows: list[dict[str, Any]], get) -> tuple[list[int], list[float]]:
    """The sizes where ``get(row)`` has a value, and the values."""
    pts = [(r["n"], v) for r in rows if (v := get(r)) is not None]
    return [n for n, _ in pts], [v for _, v in pts]


def projected_minutes(r: dict[str, Any]) -> float | None:
    """Stage 1 plus every passage at the vector stage's measured rate, for a build stopped early."""
    rate = (r.get("vectors") or {}).get("passages_per_second")
    if "complete_seconds" in r or not rate:
        return None
    return (r["searchable_seconds"] + r["n"] / rate) / 60


def plot(results: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(results.values(), key=lambda r: r["n"])
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    panels = [
        ("minutes from `hopgraph index`'s start", [
            ("first default search", lambda r: r["first_search_seconds"] / 60, "o-"),
            ("complete index", lambda r: r.get("complete_seconds", 0) / 60 or None, "s-"),
        ]),
        ("peak RSS, GB", [
            ("build, to the first search", lambda r: r["build_peak_rss_mb_to_first_search"] / 1024,
             "o-"),
            ("build, whole", lambda r: r.get("build_peak_rss_mb", 0) / 1024 or None, "s-"),
            ("complete index loaded, after a default search",
             lambda r: (r.get("load_complete") or {}).get("rss_after_default_mb", 0) / 1024
             or None, "^--"),
        ]),
        ("disk beyond the text, KB per passage", [
            ("searchable (sparse + entities)", lambda r: _beyond(r["disk_searchable"]), "o-"),
            ("complete", lambda r: _beyond(r.get("disk_complete")), "s-"),
        ]),
        ("query p50, ms", [
            ("default without vectors", lambda r: r["eval"]["multihop"]["latency_ms_p50"], "o-"),
            ("default, complete", lambda r: ((r.get("eval_complete") or {}).get("multihop") or {})
             .get("latency_ms_p50"), "s-"),
            ("bm25", lambda r: r["eval"]["bm25"]["latency_ms_p50"], "v--"),
        ]),
    ]  # fmt: skip
    for ax, (title, lines) in zip(axes, panels, strict=True):
        for label, get, style in lines:
            ns, vs = series(rows, get)
            ax.plot(ns, vs, style, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    ns, vs = series(rows, projected_minutes)
    if ns:
        axes[0].plot(ns, vs, "s", mfc="none", color="C1", label="complete, projected (not run)")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def _beyond(disk: dict[str, Any] | None) -> float | None:
    """KB per passage of every file but the text (``scale.disk_usage``'s bytes_per_passage)."""
    return disk["bytes_per_passage"] / 1024 if disk else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/first_search.json"))
    ap.add_argument("--out", default=str(ROOT / "docs/img/first_search.png"))
    args = ap.parse_args()
    plot(json.loads(Path(args.results).read_text()), Path(args.out))


if __name__ == "__main__":
    main()
