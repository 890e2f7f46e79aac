"""docs/tutorial.md runs as written: every ```sh and ```python block, in order, in one scratch
folder, with the venv's commands on PATH; then what each step should show is checked."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```$", re.S | re.M)

pytest.importorskip("fpdf", reason="the tutorial's first step makes PDFs with fpdf2")
pytest.importorskip("pypdf", reason="hopgraph[docs] reads the PDFs")
pytest.importorskip("langchain_core", reason="the tutorial ends with a LangChain chain")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(TUTORIAL.read_text("utf-8"))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_tutorial_has_every_step():
    kinds = [k for k, _ in blocks()]
    assert kinds == ["python", "sh", "sh", "sh", "sh", "python"]


def test_the_tutorial_runs_as_written(tmp_path):
    if not Path("/usr/bin/curl").exists():
        pytest.skip("the serving step uses curl")
    port = str(free_port())  # the tutorial's 8765 may be taken on this machine
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    outputs = []
    for kind, code in blocks():
        code = code.replace("8765", port)
        cmd = ["bash", "-euo", "pipefail", "-c", code] if kind == "sh" else [sys.executable, "-"]
        run = subprocess.run(
            cmd,
            input=None if kind == "sh" else code,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, f"{kind} block failed:\n{code}\n{run.stdout}\n{run.stderr}"
        outputs.append(run.stdout)
    make, index, search, filtered, serve, chain = outputs
    assert make.strip() == "44 PDFs"
    assert (tmp_path / "ix" / "manifest.json").exists()
    # the two-hop answer is found, and said to be two hops away
    assert "Rookwell Shipyards" in search
    assert "2-hop: question → *SS Orrendale* → this page" in search
    assert "Pennock Dockyard" in filtered
    hits = re.findall(r"^\s+\d+\. \[(.+?)\]", filtered, re.M)
    assert hits and all(h.split("#")[0] in ("article-17.pdf", "article-42.pdf") for h in hits)
    assert "<title>" in serve and "SS Orrendale" in serve
    assert "| article-" in serve
    assert "Context:" in chain and "Rookwell Shipyards" in chain
    assert "Question: Who founded the shipyard that built SS Orrendale?" in chain
