"""The demo runs end to end on the built-in corpus (what `make demo` shows)."""

from __future__ import annotations

from hopgraph.demo import BASE_METHODS, GRAPH_METHODS, run_demo
from hopgraph.index import Index


def test_demo_runs_and_reports_every_method(tmp_path):
    lines: list[str] = []
    run_demo(tmp_path, echo=lines.append)  # the default method answers the questions
    text = "\n".join(lines)
    assert (tmp_path / "demo-index" / "manifest.json").exists()
    assert "detected: titles look like entity names" in text
    assert Index.load(tmp_path / "demo-index").detected["entities"] == {
        "title_aliases": True,
        "alias_mentions": True,
    }
    assert "Top 3 passages of `multihop`" in text
    assert text.count("Q: ") == 3 and "gold:" in text and text.count(" multihop=") == 9
    # each hit's explanation is the sentence `hopgraph search` prints, not the raw dict
    hits = [line for line in lines if " multihop=" in line]
    assert all("-hop: " in h or "lifted by: " in h or "RRF order" in h for h in hits), hits
    assert "signals={" not in text and "route={" not in text
    for m in [*BASE_METHODS, *GRAPH_METHODS, "griever", "multihop"]:
        assert f"| `{m}` | 12 |" in text
