"""The demo runs end to end on the built-in corpus (what `make demo` shows)."""

from __future__ import annotations

from hopgraph.demo import BASE_METHODS, GRAPH_METHODS, run_demo


def test_demo_runs_and_reports_every_method(tmp_path):
    lines: list[str] = []
    run_demo(tmp_path, "graph_rrf", echo=lines.append)
    text = "\n".join(lines)
    assert (tmp_path / "demo-index" / "manifest.json").exists()
    assert text.count("Q: ") == 3 and "gold:" in text and "ppr=" in text
    for m in [*BASE_METHODS, *GRAPH_METHODS, "griever"]:
        assert f"| `{m}` | 12 |" in text
