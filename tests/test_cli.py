"""The command line, in process (CliRunner) and once as the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.eval import method_specs

REQUIRED_JSON_KEYS = {
    "method", "n_questions", "recall@2", "recall@5", "recall@10", "hit@10", "mrr", "ndcg@10",
    "pr@5", "pr@10", "latency_ms_p50", "latency_ms_p95", "index_seconds", "peak_rss_mb",
}  # fmt: skip


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def test_index_then_search(tmp_path):
    out = tmp_path / "ix"
    r = run("index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse", "-q")
    assert r.exit_code == 0, r.output
    r = run("search", str(out), "director of The Lantern Keeper", "-k", "3", "--method", "bm25")
    assert r.exit_code == 0, r.output
    assert "1. [" in r.output and "why: bm25=" in r.output and "matched_terms=" in r.output
    r = run("search", str(out), "lantern keeper", "-k", "2", "--json", "--method", "bm25")
    hits = json.loads(r.output)["hits"]
    assert len(hits) == 2 and hits[0]["why"]["bm25"] == hits[0]["score"]


def _tree(folder) -> dict[str, str]:
    import hashlib

    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


def test_index_refuses_an_existing_index_unless_forced(tmp_path):
    from hopgraph.errors import OutputExistsError
    from hopgraph.index import Index

    out = tmp_path / "ix"
    assert (
        run("index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse", "-q").exit_code
        == 0
    )
    before = _tree(out)
    again = ["index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse,entities", "-q"]
    r = run(*again)
    assert r.exit_code != 0 and isinstance(r.exception, OutputExistsError)
    assert "already holds an index" in str(r.exception) and "--force" in str(r.exception)
    r = run(*again, "--resume")
    assert r.exit_code != 0 and "nothing to resume" in str(r.exception)
    assert _tree(out) == before  # byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]  # no partial build left
    r = run(*again, "--force")
    assert r.exit_code == 0, r.output
    assert sorted(Index.load(out).parts) == ["entities", "sparse"] and _tree(out) != before


def test_help_shows_the_defaults(tmp_path):
    """Every option with a default shows it; --chunk-words says what happens without it, and
    the loaders do what it says."""
    import click

    from hopgraph.corpus import load_corpus

    for name in ("index", "add"):
        text = " ".join(run(name, "--help").output.split())
        assert "cut at 200 words; passage files and datasets are not split" in text, text

    def options(group: click.Group, path: str = ""):
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                yield from options(cmd, f"{path}{name} ")
            else:
                yield from ((f"{path}{name}", p) for p in cmd.params if isinstance(p, click.Option))

    hidden = [
        (cmd, p.name)
        for cmd, p in options(cli)
        if p.to_info_dict()["default"] is not None  # an option with no default says None
        and not (p.is_flag or p.multiple or p.required or p.show_default)
    ]
    assert hidden == []

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.txt").write_text(" ".join(f"word{i}" for i in range(500)) + "\n")
    assert max(len(p.text.split()) for p in load_corpus(docs)) == 200
    rows = tmp_path / "p.jsonl"
    rows.write_text(json.dumps({"id": "a", "title": "A", "text": "w " * 500}) + "\n")
    assert len(load_corpus(rows)) == 1


def test_search_with_params(demo_index_dir):
    r = run(
        "search", str(demo_index_dir), "river", "--method", "rrf", "--set", "k_rrf=10", "--json"
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["method"] == "rrf"


def test_search_reports_its_start_up_only_when_asked(demo_index_dir):
    """`hopgraph search` prints nothing about its start-up on stderr unless -v (issue 62)."""
    quiet = CliRunner().invoke(cli, ["search", str(demo_index_dir), "river", "--method", "bm25"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and "1. [" in quiet.stdout
    loud = CliRunner().invoke(cli, ["search", str(demo_index_dir), "river", "-v", "--method",
                                    "bm25"])  # fmt: skip
    assert loud.exit_code == 0 and loud.stdout == quiet.stdout
    assert loud.stderr.startswith("start-up: index loaded in ") and "bm25 set up in" in loud.stderr


def test_eval_json_has_required_keys(demo_index_dir, tmp_path):
    out = tmp_path / "r.json"
    r = run(
        "eval", str(demo_dataset_path()), "--method", "bm25,dense", "--json", str(out),
        "--index-dir", str(tmp_path / "cache"), "-q", "--per-query", "--set", "dense.mode=exact",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "| `bm25` | 12 |" in r.output and "ΔRecall@10 against `bm25`" in r.output
    data = json.loads(out.read_text())
    assert isinstance(data, list) and [d["method"] for d in data] == ["bm25", "dense[mode=exact]"]
    for d in data:
        assert REQUIRED_JSON_KEYS <= set(d)
        assert len(d["per_query"]) == 12
    # a second run reuses the cached index (no "index saved" message)
    r2 = run(
        "eval", str(demo_dataset_path()), "--method", "bm25", "--index-dir",
        str(tmp_path / "cache"), "-q",
    )  # fmt: skip
    assert r2.exit_code == 0 and "index saved" not in r2.output


def test_eval_single_method_json_is_an_object(tmp_path):
    out = tmp_path / "r.json"
    r = run(
        "eval", str(demo_dataset_path()), "--limit", "3", "--k", "1,3", "--json", str(out),
        "--index-dir", str(tmp_path / "cache"), "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["n_questions"] == 3 and "recall@3" in data and REQUIRED_JSON_KEYS <= set(data)
    assert "R@3" in r.output


def test_eval_resolves_names_under_data_dir(tmp_path):
    shutil.copytree(demo_dataset_path(), tmp_path / "data" / "demo")
    r = run(
        "eval", "demo", "--data-dir", str(tmp_path / "data"), "--limit", "2",
        "--index-dir", str(tmp_path / "cache"), "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output


def test_eval_preset_builds_the_presets_entity_part(tmp_path):
    from hopgraph.index import Index

    cache = tmp_path / "cache"
    r = run(
        "eval", str(demo_dataset_path()), "--method", "graph", "--preset", "sprig-plus",
        "--limit", "2", "--index-dir", str(cache), "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (folder,) = [p for p in cache.iterdir() if (p / "manifest.json").exists()]
    assert Index.load(folder).part("entities").options.title_aliases is True


def test_method_specs_routes_parameters():
    specs = method_specs(["rrf", "dense"], {"ef_search": "32", "rrf.k_rrf": "10"})
    assert specs[0].params == {"ef_search": "32", "k_rrf": "10"}
    assert specs[1].params == {"ef_search": "32"}
    with pytest.raises(ConfigError, match="no method"):
        method_specs(["bm25"], {"k_rrf": "1"})


def test_methods_and_info(demo_index_dir):
    r = run("methods")
    assert r.exit_code == 0 and "composed" in r.output and "k_rrf" in r.output
    marked = [line for line in r.output.splitlines() if "[default]" in line]
    assert len(marked) == 1 and marked[0].startswith("multihop  [default]  (needs: ")
    r = run("info", str(demo_index_dir))
    assert json.loads(r.output)["passages"] == 44


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (["search", "/no/such/index", "q"], HopgraphError, "does not exist"),
        (["eval", "/no/such/dataset"], HopgraphError, "no dataset"),
        (
            ["index", str(demo_dataset_path()), "-o", "/tmp/x", "--set", "hnsw"],
            ConfigError,
            "key=value",
        ),
    ],
)
def test_errors(args, error, match):
    r = run(*args)
    assert isinstance(r.exception, error) and match in str(r.exception)


def test_console_script_reports_errors_cleanly():
    exe = shutil.which("hopgraph") or f"{sys.prefix}/bin/hopgraph"
    p = subprocess.run([exe, "search", "/no/such/index", "q"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.startswith("error: no index at") and "Traceback" not in p.stderr


def test_train_gat_then_eval_with_the_model(tmp_path):
    model = tmp_path / "gat"
    cache = str(tmp_path / "cache")
    r = run(
        "train-gat", str(demo_dataset_path()), "-o", str(model), "--set", "n=20",
        "--epochs", "3", "--hidden", "8", "--heads", "2", "--layers", "2",
        "--max-questions", "10", "--residual", "2", "--index-dir", cache, "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    saved = json.loads((model / "config.json").read_text())
    assert saved["model"]["residual"] == 2.0
    card = saved["extra"]
    assert card["training_data"][0]["graphs"] + card["training_data"][0]["skipped"] == 10
    assert card["training_data"][0]["dataset"] == "demo"
    assert card["grapher_params"]["n"] == 20 and 1 <= card["best_epoch"] <= 3
    out = tmp_path / "r.json"
    r = run(
        "eval", str(demo_dataset_path()), "--method", "grapher_gcs,grapher_gat",
        "--set", f"grapher_gat.model={model}", "--set", "n=20", "--json", str(out),
        "--index-dir", cache, "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    gat = json.loads(out.read_text())[1]
    assert gat["n_questions"] == 12 and gat["rerank_ms_p50"] > 0
    r = run("train-gat", str(demo_dataset_path()), "-o", str(model), "--epochs", "1", "-q")
    assert r.exit_code != 0 and "not empty" in r.output.lower() + str(r.exception).lower()


def test_eval_pool_by_searches_each_pool_alone(tmp_path):
    from hopgraph.corpus import Corpus, Dataset, Passage, Question, write_unified

    ps = [
        Passage(f"{db}.{t}", t, f"table {t} of {db} with column {t}_id", {"db_id": db})
        for db in ("shop", "zoo")
        for t in ("alpha", "beta", "gamma")
    ]
    qs = [
        Question("q1", "which alpha rows", ("shop.alpha",), metadata={"db_id": "shop"}),
        Question("q2", "count the gamma", ("zoo.gamma",), metadata={"db_id": "zoo"}),
    ]
    folder = tmp_path / "tables"
    write_unified(Dataset("tables", Corpus(ps), qs), folder)
    out = tmp_path / "r.json"
    r = run(
        "eval", str(folder), "--method", "bm25", "--pool-by", "db_id", "--k", "1,3",
        "--json", str(out), "--per-query", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["n_questions"] == 2 and data["recall@1"] == 1.0
    for row in data["per_query"]:  # only the question's own database is searched
        db = {"q1": "shop", "q2": "zoo"}[row["id"]]
        assert row["top10"] and all(pid.startswith(db + ".") for pid in row["top10"])


def test_add_then_delete_update_the_index_on_disk(tmp_path, demo_dataset):
    from hopgraph.index import Index

    out = tmp_path / "ix"
    first, rest = demo_dataset.corpus[:20], demo_dataset.corpus[20:]
    src = tmp_path / "first.jsonl"
    src.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in first))
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in rest))
    r = run("index", str(src), "-o", str(out), "--parts", "sparse,entities,links", "-q")
    assert r.exit_code == 0, r.output
    r = run("add", str(out), str(new), "-q")
    assert r.exit_code == 0, r.output
    assert f"+{len(rest)} -0 passages, now {len(demo_dataset.corpus)}" in r.output
    r = run("delete", str(out), first[0].id, first[1].id, "-q")
    assert r.exit_code == 0, r.output
    index = Index.load(out)
    assert index.corpus.ids == [p.id for p in demo_dataset.corpus[2:]]
    r = run("delete", str(out), "no-such-id")
    assert r.exit_code != 0 and "not in the index" in str(r.exception)
    r = run("add", str(out), str(new))
    assert r.exit_code != 0 and "already in the index" in str(r.exception)
    r = run("delete", str(out))
    assert r.exit_code != 0 and "give the ids" in r.output


# -- the default pipeline -----------------------------------------------------------------------
def test_index_without_parts_builds_the_default_and_search_uses_it(tmp_path):
    from hopgraph.defaults import DEFAULT_PARTS
    from hopgraph.index import Index

    out = tmp_path / "ix"
    r = run("index", str(demo_dataset_path()), "-o", str(out), "-q")
    assert r.exit_code == 0, r.output
    assert "detected: titles look like entity names" in r.output
    sets = "[entities.title_aliases=true, entities.alias_mentions=true, sparse.language=en]"
    assert sets in r.output
    index = Index.load(out)
    assert set(index.parts) == set(DEFAULT_PARTS)
    assert index.part("entities").options.title_aliases is True
    info = json.loads(run("info", str(out)).output)
    assert info["detected"]["entities"] == {"title_aliases": True, "alias_mentions": True}
    assert "reason" in info["detected"]["why"]
    query = "Who founded the shipyard that built SS Orrendale?"
    r = run("search", str(out), query, "-k", "3", "--json")
    assert r.exit_code == 0, r.output
    default = json.loads(r.output)
    assert default["method"] == "multihop" and len(default["hits"]) == 3
    r = run("search", str(out), query, "-k", "3", "--json", "--method", "default")
    assert json.loads(r.output)["method"] == "multihop"
    assert [h["id"] for h in json.loads(r.output)["hits"]] == [h["id"] for h in default["hits"]]
    r = run("search", str(out), query, "-k", "2")  # the text view explains the hits too
    assert r.exit_code == 0 and "1. [" in r.output and "why: " in r.output


def test_index_set_wins_over_detection_and_no_detect(tmp_path):
    from hopgraph.index import Index

    out = tmp_path / "ix"
    r = run(
        "index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse,entities",
        "--set", "entities.title_aliases=false", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "overridden by --set: entities.title_aliases" in r.output
    assert Index.load(out).part("entities").options.title_aliases is False
    r = run(
        "index", str(demo_dataset_path()), "-o", str(out), "--parts", "dense", "-q", "--force"
    )  # fmt: skip
    assert r.exit_code == 0 and "detected" not in r.output  # no part detection covers
    assert Index.load(out).detected is None
    r = run(
        "index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse", "-q", "--force"
    )  # fmt: skip
    assert r.exit_code == 0 and "sparse.language=en" in r.output  # its language is detected
    assert Index.load(out).part("sparse").options.language == "en"
    r = run(
        "index", str(demo_dataset_path()), "-o", str(out), "--parts", "entities", "--no-detect",
        "-q", "--force",
    )  # fmt: skip
    assert r.exit_code == 0 and "detected" not in r.output
    index = Index.load(out)
    assert index.detected is None and index.part("entities").options.title_aliases is False


def test_add_parts_makes_an_index_usable_by_the_default(tmp_path):
    from hopgraph.defaults import DEFAULT_PARTS
    from hopgraph.index import Index

    out = tmp_path / "ix"
    r = run("index", str(demo_dataset_path()), "-o", str(out), "--parts", "sparse,dense", "-q")
    assert r.exit_code == 0, r.output
    files_before = json.loads((out / "manifest.json").read_text())["files"]
    query = "Who founded the shipyard that built SS Orrendale?"
    # without a method: the best the parts allow (rrf), said in one line on stderr
    r = run("search", str(out), query, "-k", "3", "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("note: searched with 'rrf'")
    assert f"`hopgraph add-parts {out} --parts entities`" in r.stderr
    fell_back = json.loads(r.stdout)
    assert fell_back["method"] == "rrf" and fell_back["info"]["method"] == "rrf"
    assert fell_back["info"]["default_fallback"]["missing_parts"] == ["entities"]
    r = run("search", str(out), query, "--method", "multihop")  # named: no fallback
    assert isinstance(r.exception, ConfigError)
    message = str(r.exception)
    assert "method 'multihop' needs more index parts" in message
    assert "no 'entities' part (it has: dense, sparse)" in message
    assert f"`hopgraph add-parts {out} --parts entities`" in message
    # the console script prints it as one line, no traceback
    exe = shutil.which("hopgraph") or f"{sys.prefix}/bin/hopgraph"
    argv = [exe, "search", str(out), query, "--method", "multihop"]
    p = subprocess.run(argv, capture_output=True, text=True)
    assert p.returncode == 2 and "hopgraph add-parts" in p.stderr and "Traceback" not in p.stderr

    r = run("add-parts", str(out), "-q")
    assert r.exit_code == 0, r.output
    assert "detected: titles look like entity names" in r.output and "added entities" in r.output
    after = Index.load(out)
    assert set(after.parts) == set(DEFAULT_PARTS)
    assert after.part("entities").options.title_aliases is True
    assert after.detected["entities"] == {"title_aliases": True, "alias_mentions": True}
    # the parts it had are kept as they were (same files, same checksums)
    files_after = json.loads((out / "manifest.json").read_text())["files"]
    kept = {k: v for k, v in files_before.items() if k.startswith("parts/")}
    assert kept and {k: files_after[k] for k in kept} == kept
    r = run("search", str(out), query, "-k", "3", "--json")
    assert r.exit_code == 0 and not r.stderr, r.output
    assert json.loads(r.output)["method"] == "multihop"
    assert "default_fallback" not in json.loads(r.output)["info"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ix.lock", "ix"]  # no debris

    r = run("add-parts", str(out))
    assert r.exit_code == 0 and "nothing to add" in r.output
    r = run("add-parts", str(out), "--parts", "links", "-q")
    assert r.exit_code == 0 and "added links" in r.output
    assert "detected" not in r.output  # links take no detected option
    assert set(Index.load(out).parts) == {*DEFAULT_PARTS, "links"}
    r = run("add-parts", str(out), "--parts", "nope")
    assert isinstance(r.exception, ConfigError) and "nope" in str(r.exception)


def test_eval_default_method_is_reported_by_name(tmp_path):
    from hopgraph.index import Index

    out = tmp_path / "r.json"
    cache = tmp_path / "cache"
    r = run(
        "eval", str(demo_dataset_path()), "--method", "bm25,default", "--limit", "4",
        "--set", "default.depth=20", "--json", str(out), "--index-dir", str(cache), "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "detected: titles look like entity names" in r.output
    data = json.loads(out.read_text())
    assert [d["method"] for d in data] == ["bm25", "multihop[depth=20]"]
    assert data[1]["base_method"] == "multihop" and data[1]["n_questions"] == 4
    # which signals the default trusted on this corpus, beside the table and in the JSON
    assert "multihop[depth=20] on this corpus: titles are entity names" in r.output
    assert "final order: the ranker's order alone" in r.output
    assert data[1]["trusted"].startswith("titles are entity names") and "trusted" not in data[0]
    (folder,) = [p for p in cache.iterdir() if (p / "manifest.json").exists()]
    cached = Index.load(folder)
    assert cached.part("entities").options.title_aliases is True
    assert cached.detected["entities"] == {"title_aliases": True, "alias_mentions": True}
    # without --method: the default alone
    r = run("eval", str(demo_dataset_path()), "--limit", "2", "--index-dir", str(cache), "-q")
    assert r.exit_code == 0 and "| `multihop` | 2 |" in r.output


def test_updates_are_kept_as_deltas_until_compact(tmp_path, demo_dataset):
    from hopgraph.index import Index

    out = tmp_path / "ix"
    corpus = demo_dataset.corpus
    src = tmp_path / "first.jsonl"
    src.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in corpus[:40]))
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in corpus[40:]))
    assert run("index", str(src), "-o", str(out), "--parts", "sparse,entities", "-q").exit_code == 0
    r = run("add", str(out), str(new), "-q")
    assert r.exit_code == 0 and "1 delta(s) on the base" in r.output, r.output
    r = run("delete", str(out), corpus[0].id, "-q")
    assert r.exit_code == 0 and "2 delta(s) on the base" in r.output, r.output
    assert len(list((out / "deltas").iterdir())) == 2
    r = run("compact", str(out))
    assert r.exit_code == 0 and "2 delta(s) merged into a new base, generation 2" in r.output
    assert not list((out / "deltas").iterdir()) if (out / "deltas").exists() else True
    index = Index.load(out)
    assert index.corpus.ids == [p.id for p in corpus[1:]] and index.generation == 2


@pytest.mark.parametrize(
    "case,lines,message",
    [
        ("duplicate", ['{"id": "p1", "title": "x", "text": "again"}'], "duplicate id p1"),
        ("empty_text", ['{"id": "e", "title": "x", "text": "   "}'], "empty text"),
        (
            "invalid_utf8",
            [b'{"id": "u", "title": "x", "text": "bad \xff bytes"}'],
            "not valid UTF-8",
        ),
        ("zero_bytes", None, "the file is empty (0 bytes)"),
    ],
)
def test_bad_corpora_give_a_clear_error_and_leave_nothing(tmp_path, case, lines, message):
    """Bad input stops the build before anything is written: the message names the file (and
    line), and neither an index nor a partial build is left behind."""
    src = tmp_path / f"{case}.jsonl"
    good = [json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"Velmora {i}"}) for i in range(5)]
    if lines is None:
        src.write_bytes(b"")
    else:
        body = [g.encode() for g in good] + [
            ln if isinstance(ln, bytes) else ln.encode() for ln in lines
        ]
        src.write_bytes(b"\n".join(body) + b"\n")
    out = tmp_path / "ix"
    r = run("index", str(src), "-o", str(out), "--parts", "sparse,entities", "-q")
    said = f"{r.output}{r.exception}"
    assert r.exit_code != 0
    assert message in said and str(src) in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]  # no ix, no ix.partial
    r = run("index", str(src), "-o", str(out), "--parts", "sparse,entities", "-q")
    assert message in f"{r.output}{r.exception}"  # again the error, not "a partial build ..."


def test_index_skip_bad_skips_and_counts_the_bad_passages(tmp_path):
    """--skip-bad: the empty and not-UTF-8 passages of a dump are left out, the build goes on,
    and the output and `hopgraph info` say how many and where (file:line)."""
    src = tmp_path / "dump.jsonl"
    good = [json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"Velmora {i}"}).encode()
            for i in range(5)]  # fmt: skip
    bad = [b'{"id": "e", "text": "  "}', b'{"id": "u", "text": "bad \xff bytes"}']
    src.write_bytes(b"\n".join([good[0], bad[0], *good[1:3], bad[1], *good[3:]]) + b"\n")
    out = tmp_path / "ix"
    from hopgraph.index import Index

    r = run("index", str(src), "-o", str(out), "--parts", "sparse", "-q", "--skip-bad")
    assert r.exit_code == 0, r.output
    assert f"skipped 1 passages whose text is empty or whitespace: {src}:2" in r.output
    assert f"skipped 1 lines that are not valid UTF-8: {src}:5" in r.output
    index = Index.load(out)
    assert index.corpus.ids == [f"p{i}" for i in range(5)]
    skipped = index.reading["skipped"]
    assert skipped["empty_text"]["count"] == 1 and skipped["not_utf8"]["first"] == [f"{src}:5"]
    info = run("info", str(out))
    assert info.exit_code == 0 and "not_utf8" in info.output
    stopped = run("index", str(src), "-o", str(tmp_path / "ix2"), "--parts", "sparse", "-q")
    assert stopped.exit_code != 0 and not (tmp_path / "ix2").exists()


def test_huge_passages_and_control_characters_are_indexed_as_they_are(tmp_path):
    """Documented handling: a 1 MB passage is indexed whole by BM25 (the encoder reads its
    first max_seq_length tokens); control characters are kept and escaped in the JSON lines."""
    from hopgraph.index import Index

    src = tmp_path / "odd.jsonl"
    rows = [{"id": f"p{i}", "title": f"T{i}", "text": f"Velmora {i}"} for i in range(5)]
    rows.append({"id": "big", "title": "Big", "text": "harbour " * 130_000 + "zanzibar"})
    rows.append({"id": "ctl", "title": "Bell\u0007", "text": "bell \u0000 nul \u001b esc Quokka"})
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "ix"
    assert run("index", str(src), "-o", str(out), "--parts", "sparse,entities", "-q").exit_code == 0
    index = Index.load(out)
    assert (
        index.corpus.get("ctl").text == rows[-1]["text"]
        and len(index.corpus.get("big").text) > 10**6
    )
    from hopgraph.retrieve import get_retriever

    assert get_retriever(index, "bm25").search("zanzibar", 1).ids == ["big"]
    assert get_retriever(index, "bm25").search("quokka", 1).ids == ["ctl"]
