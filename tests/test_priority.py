"""Write work runs at a lower CPU priority than searches (hopgraph.priority): per thread on
Linux, in `hopgraph add/delete/compact` and in a serving writer's update, compaction and
reload threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index
from hopgraph.priority import current_nice, lower_priority
from hopgraph.serve import ServedIndex, Settings

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness")


def _in_thread(fn):
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _target() -> int:
    now = current_nice()
    if now is None or now > 15:
        pytest.skip(f"this process already runs at niceness {now}")
    return now + 3


@linux
def test_lowers_the_calling_thread_only_and_its_new_threads():
    before = current_nice()
    target = _target()

    def work() -> tuple[int | None, int | None, int | None]:
        got = lower_priority(target)
        child = _in_thread(current_nice)  # started after: inherits
        return got, current_nice(), child

    got, mine, child = _in_thread(work)
    assert got == target and mine == target and child == target
    assert current_nice() == before  # this thread is untouched


@linux
def test_never_raises_priority():
    target = _target()

    def work() -> tuple[int | None, int | None]:
        lower_priority(target)
        return lower_priority(target - 2), current_nice()

    assert _in_thread(work) == (target, target)


@pytest.mark.parametrize("bad", [-1, 20, 2.5, True, "5"])
def test_bad_values(bad):
    with pytest.raises(ValueError, match="0..19"):
        lower_priority(bad)


def test_zero_changes_nothing():
    assert _in_thread(lambda: (lower_priority(0), current_nice())) == (
        current_nice(),
        current_nice(),
    )


@pytest.fixture
def index_dir(tmp_path) -> Path:
    folder = tmp_path / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(folder)
    return folder


@linux
def test_cli_update_runs_niced(index_dir, tmp_path):
    """`hopgraph add --nice N`: the update itself runs at N (recorded from inside it)."""
    target = _target()
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "z1", "title": "Zebra", "text": "Zebras graze."}) + "\n")
    seen = tmp_path / "seen.txt"
    script = f"""
import sys
from hopgraph.cli import cli
from hopgraph.index.store import Index
from hopgraph.priority import current_nice
updated = Index.updated
def spy(self, *a, **kw):
    open({str(seen)!r}, "w").write(str(current_nice()))
    return updated(self, *a, **kw)
Index.updated = spy
sys.exit(cli.main(sys.argv[1:], standalone_mode=True))
"""
    for nice, want in ((target, target), (0, current_nice())):
        r = subprocess.run(
            [sys.executable, "-c", script, "add", str(index_dir), str(new), "-q",
             "--nice", str(nice)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert int(seen.read_text()) == want
        subprocess.run(
            [sys.executable, "-m", "hopgraph.cli", "delete", str(index_dir), "z1", "-q"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip


@linux
def test_serving_writer_threads_are_niced_and_searches_are_not(index_dir):
    target = _target()
    served = ServedIndex(index_dir, Settings(reload_interval=0.05, writer_nice=target))
    try:
        from hopgraph.corpus import Passage

        r = served.update(add=[Passage("z1", "Zebra", "Plains zebras graze in Kenya.")])
        assert r.passages == len(load_corpus(demo_dataset_path())) + 1
        (writer,) = served._writer._threads  # the one writing thread, kept for later updates
        assert os.getpriority(os.PRIO_PROCESS, writer.native_id) == target
        deadline = time.monotonic() + 10  # the reload thread lowers itself as it starts
        while (
            os.getpriority(os.PRIO_PROCESS, served._watcher.native_id) != target
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        assert os.getpriority(os.PRIO_PROCESS, served._watcher.native_id) == target
        assert current_nice() == target - 3  # the caller (a request thread) is untouched
        served.update(delete=["z1"])
        assert served._writer._threads == {writer}
    finally:
        served.close()


def test_writer_nice_is_checked():
    from hopgraph.errors import ConfigError

    with pytest.raises(ConfigError, match="writer_nice"):
        Settings(writer_nice=25)


@linux
def test_named_index_creates_build_niced(index_dir, tmp_path, monkeypatch):
    """POST /indexes builds on a builder thread at writer_nice (recorded inside the build)."""
    import hopgraph.serve.multi as multi
    from hopgraph.corpus import Passage

    target = _target()
    seen: list[int | None] = []
    real = multi.build_index

    def spy(passages, parts=None):
        seen.append(current_nice())
        return real(passages, parts)

    monkeypatch.setattr(multi, "build_index", spy)
    registry = multi.IndexRegistry(
        tmp_path / "named", Settings(reload_interval=0, writer_nice=target)
    )
    try:
        out = registry.create("zoo", [Passage("z1", "Zebra", "Zebras graze.")], ["sparse"])
        assert out["passages"] == 1 and seen == [target]
        assert current_nice() == target - 3
    finally:
        registry.close()


@linux
def test_run_niced_runs_on_a_lowered_thread_and_leaves_the_caller():
    from hopgraph.priority import run_niced

    target = _target()
    before = current_nice()
    got = run_niced(
        target, lambda a, b=0: (a + b, current_nice(), threading.get_native_id()), 1, b=2
    )
    assert got[0] == 3 and got[1] == target and got[2] != threading.get_native_id()
    assert current_nice() == before
    with pytest.raises(KeyError, match="gone"):
        run_niced(target, lambda: {}["gone"])
    assert run_niced(0, threading.get_native_id) == threading.get_native_id()  # 0: right here
    with pytest.raises(ValueError):
        run_niced(20, print)
