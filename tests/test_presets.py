"""Named presets: built-ins load, user presets save and win, and the CLI applies them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError
from hopgraph.eval import method_specs
from hopgraph.presets import list_presets, load_preset, save_preset


def test_builtin_presets_load_and_are_valid_for_their_methods():
    from hopgraph.config import make_options
    from hopgraph.index.entities import EntityOptions
    from hopgraph.retrieve.graph import GraphParams

    assert {"sprig", "sprig-hotpotqa", "sprig-2wikimultihopqa"} <= set(list_presets())
    for name in ("sprig", "sprig-hotpotqa", "sprig-2wikimultihopqa", "sprig-plus",
                 "sprig-plus-2wikimultihopqa"):  # fmt: skip
        p = load_preset(name)
        make_options(GraphParams, p["graph"])
        make_options(EntityOptions, p["entities"])
    assert load_preset("sprig-2wikimultihopqa")["graph"]["entity_q"] == 1.0  # §4.4


def test_user_preset_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_PRESETS", str(tmp_path))
    save_preset("mine", {"description": "x", "graph": {"alpha": 0.2}})
    assert load_preset("mine")["graph"] == {"alpha": 0.2}
    assert "mine" in list_presets()
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="invalid preset JSON"):
        load_preset("broken")
    with pytest.raises(ConfigError, match="unknown preset"):
        load_preset("nope")


def test_preset_params_reach_the_methods_and_set_overrides():
    preset = {"graph": {"alpha": 0.2, "hub_penalty": 1.0}, "seed_k": {"graph_dense": 3}}
    specs = method_specs(["bm25", "graph_dense", "graph"], {"graph.alpha": "0.3"}, preset)
    assert specs[0].params == {}
    assert specs[1].params == {"alpha": 0.2, "hub_penalty": 1.0, "seed_k": 3}
    assert specs[2].params == {"alpha": "0.3", "hub_penalty": 1.0}


def test_eval_with_preset(tmp_path):
    out = tmp_path / "r.json"
    r = CliRunner().invoke(
        cli,
        ["eval", str(demo_dataset_path()), "--method", "graph_hybrid", "--preset", "sprig",
         "--index-dir", str(tmp_path / "c"), "-q", "--json", str(out), "--limit", "4"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["params"]["seed_k"] == 5 and data["params"]["alpha"] == 0.15
    r = CliRunner().invoke(cli, ["presets"])
    assert "sprig-hotpotqa" in r.output
