"""Documents in any format (PDF, HTML, DOCX, Markdown, text) read into passages, on real files
made here: PDFs by fpdf2, DOCX by python-docx."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import docx
import fpdf
import pytest
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.corpus import detect_format, iter_corpus, load_corpus, load_dataset
from hopgraph.corpus.documents import document_kind, read_document, sniff
from hopgraph.errors import CorpusError

PAGE_1 = "The orchard report covers apples, pears and the spring harvest of the valley."
PAGE_2 = "The zephyr turbine needs its maintenance schedule checked every quarter by the crew."


def make_pdf(path: Path, pages: list[str], title: str | None = None) -> Path:
    pdf = fpdf.FPDF()
    if title is not None:
        pdf.set_title(title)
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def make_docx(path: Path, title: str | None = "Field Guide") -> Path:
    d = docx.Document()
    if title is not None:
        d.core_properties.title = title
    d.add_paragraph("A guide to the animals of the marsh.")
    d.add_heading("Birds", level=1)
    d.add_paragraph("Birds have feathers and most of them fly.")
    d.add_heading("Owls", level=2)
    d.add_paragraph("Owls hunt voles at night.")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "species", "call"
    table.cell(1, 0).text, table.cell(1, 1).text = "barn owl", "screech"
    d.add_heading("Fish", level=1)
    d.add_heading("Pike", level=2)
    d.add_paragraph("Pike wait among the reeds.")
    path.parent.mkdir(parents=True, exist_ok=True)
    d.save(str(path))
    return path


HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Widget Handbook</title></head>
<body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/login">Log in</a></nav>
<article>
<h1>Installing widgets</h1>
<p>Widgets are installed with the package manager on every platform we support today.</p>
<h2>Linux</h2>
<p>On Linux run the apt command to install the widget package and restart the daemon.</p>
<h3>Debian</h3>
<p>Debian users need the backports repository enabled before the install works.</p>
<h2>Windows</h2>
<p>On Windows download the installer from the website and run it as administrator.</p>
</article>
<footer>Copyright 2024 Widget Corporation, all rights reserved.</footer>
</body></html>
"""

MARKDOWN = """---
layout: page
---
Intro before any heading.

# Guide

Welcome to the guide.

## Install

### Linux

Run `apt install widget`.

```sh
# a comment, not a heading
make install
```

### Windows

Run the installer.

## Use

Start it with `widget run`.
"""


def by_id(corpus) -> dict:
    return {p.id: p for p in corpus}


# --------------------------------------------------------------------------- PDF


def test_pdf_pages_keep_page_title_and_source(tmp_path):
    root = tmp_path / "docs"
    make_pdf(root / "sub" / "report.pdf", [PAGE_1, PAGE_2, ""], title="Annual Report")
    assert detect_format(root) == "text"
    c = load_corpus(root)
    assert c.ids == ["sub/report.pdf#0", "sub/report.pdf#1"]  # the blank page 3 gives none
    first, second = c
    assert first.title == second.title == "Annual Report"
    assert PAGE_1 in " ".join(first.text.split()) and PAGE_2 in " ".join(second.text.split())
    assert second.metadata == {
        "doc_id": "sub/report.pdf", "chunk": 1, "source": "sub/report.pdf", "page": 2
    }  # fmt: skip
    assert first.metadata["page"] == 1 and first.metadata["chunk"] == 0


def test_pdf_chunks_are_numbered_across_pages(tmp_path):
    long_page = " ".join(f"word{i}." if i % 9 == 8 else f"word{i}" for i in range(120))
    path = make_pdf(tmp_path / "long.pdf", [PAGE_1, long_page])
    c = load_corpus(path, chunk_words=50)  # one PDF file on its own
    assert [p.id for p in c] == [f"long.pdf#{n}" for n in range(len(c))]
    assert [p.metadata["chunk"] for p in c] == list(range(len(c)))
    assert [p.metadata["page"] for p in c][:2] == [1, 2] and len(c) >= 4
    assert all(p.metadata["page"] == 2 for p in c[1:])
    assert all(len(p.text.split()) <= 50 for p in c)
    assert {p.title for p in c} == {"long"}  # no title in the metadata: the file stem
    # deterministic: the same ids and texts on every read
    again = load_corpus(path, chunk_words=50)
    assert [(p.id, p.text) for p in again] == [(p.id, p.text) for p in c]


def test_one_page_pdf_is_one_passage_named_by_its_path(tmp_path):
    make_pdf(tmp_path / "d" / "memo.pdf", ["Short memo about the picnic."])
    (p,) = load_corpus(tmp_path / "d")
    assert p.id == "memo.pdf" and p.metadata == {
        "doc_id": "memo.pdf", "chunk": 0, "source": "memo.pdf", "page": 1
    }  # fmt: skip


def test_corrupt_pdf_names_the_file(tmp_path):
    root = tmp_path / "docs"
    make_pdf(root / "good.pdf", [PAGE_1])
    bad = root / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4\nthis is no pdf at all\n")
    with pytest.raises(CorpusError, match=r"broken\.pdf: cannot read this PDF"):
        load_corpus(root)
    bad.write_bytes(make_pdf(tmp_path / "x.pdf", [PAGE_1]).read_bytes()[:300])  # truncated
    with pytest.raises(CorpusError, match=r"broken\.pdf: cannot read this PDF"):
        list(iter_corpus(root))
    bad.write_bytes(b"not even the header")
    with pytest.raises(CorpusError, match=r"broken\.pdf: cannot read this PDF"):
        load_corpus(root)


def test_encrypted_pdf_names_the_file(tmp_path):
    from pypdf import PdfWriter

    plain = make_pdf(tmp_path / "plain.pdf", [PAGE_1, PAGE_2])
    root = tmp_path / "docs"
    root.mkdir()
    writer = PdfWriter(clone_from=str(plain))
    writer.encrypt("s3cret", algorithm="RC4-128")
    writer.write(str(root / "locked.pdf"))
    with pytest.raises(CorpusError, match=r"locked\.pdf: the PDF is encrypted"):
        load_corpus(root)
    # encrypted with an empty user password (only an owner password): readable
    writer = PdfWriter(clone_from=str(plain))
    writer.encrypt("", "owner", algorithm="RC4-128")
    writer.write(str(root / "locked.pdf"))
    assert [p.metadata["page"] for p in load_corpus(root)] == [1, 2]


# --------------------------------------------------------------------------- DOCX


def test_docx_headings_paragraphs_and_tables(tmp_path):
    path = make_docx(tmp_path / "guide.docx")
    c = load_corpus(path)
    assert c.ids == ["guide.docx#0", "guide.docx#1", "guide.docx#2", "guide.docx#3"]
    assert {p.title for p in c} == {"Field Guide"}
    heads = [p.metadata.get("heading") for p in c]
    assert heads == [None, "Birds", "Birds > Owls", "Fish > Pike"]  # "Fish" alone is no section
    assert c[0].text == "A guide to the animals of the marsh."
    assert c[1].text == "Birds\n\nBirds have feathers and most of them fly."
    assert "Owls hunt voles at night." in c[2].text and "barn owl | screech" in c[2].text
    assert c[3].metadata == {
        "doc_id": "guide.docx", "chunk": 3, "source": "guide.docx", "heading": "Fish > Pike"
    }  # fmt: skip


def test_docx_title_falls_back_to_the_stem(tmp_path):
    path = make_docx(tmp_path / "notes.docx", title=None)
    assert {p.title for p in load_corpus(path)} == {"notes"}


def test_corrupt_docx_names_the_file(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ok.md").write_text("fine", encoding="utf-8")
    (root / "bad.docx").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CorpusError, match=r"bad\.docx: cannot read this DOCX"):
        load_corpus(root)


# --------------------------------------------------------------------------- HTML


def test_html_main_text_title_and_headings(tmp_path):
    path = tmp_path / "handbook.html"
    path.write_text(HTML, encoding="utf-8")
    c = load_corpus(path)
    assert {p.title for p in c} == {"Widget Handbook"}  # <title>, not the H1
    assert [p.metadata.get("heading") for p in c] == [
        "Installing widgets",
        "Installing widgets > Linux",
        "Installing widgets > Linux > Debian",
        "Installing widgets > Windows",
    ]
    text = " ".join(p.text for p in c)
    assert "backports repository" in c[2].text and "apt command" in c[1].text
    assert "Log in" not in text and "Copyright" not in text  # navigation and footer left out
    assert all(p.metadata["source"] == "handbook.html" for p in c)


def test_html_fragment_and_htm_without_title(tmp_path):
    root = tmp_path / "web"
    root.mkdir()
    (root / "frag.htm").write_text("<p>A short fragment about herons.</p>", encoding="utf-8")
    (p,) = load_corpus(root)
    assert p.id == "frag.htm" and p.title == "frag" and "herons" in p.text


# --------------------------------------------------------------------------- Markdown


def test_markdown_nested_headings(tmp_path):
    root = tmp_path / "md"
    root.mkdir()
    (root / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    c = load_corpus(root)
    assert [(p.id, p.metadata.get("heading")) for p in c] == [
        ("guide#0", None),
        ("guide#1", "Guide"),
        ("guide#2", "Guide > Install > Linux"),
        ("guide#3", "Guide > Install > Windows"),
        ("guide#4", "Guide > Use"),
    ]
    assert {p.title for p in c} == {"Guide"}  # the first H1
    assert c[0].text == "Intro before any heading."  # the front matter is left out
    assert c[2].text.startswith("Linux\n") and "\n# a comment, not a heading\n" in c[2].text
    assert c[4].metadata == {
        "doc_id": "guide", "chunk": 4, "source": "guide.md", "path": "guide.md",
        "heading": "Guide > Use",
    }  # fmt: skip


def test_markdown_title_from_front_matter_and_setext(tmp_path):
    path = tmp_path / "page.markdown"
    path.write_text(
        '---\ntitle: "Front Title"\n---\nTop\n===\n\nBody one.\n\nSub\n---\n\nBody two.\n',
        encoding="utf-8",
    )
    doc = read_document(path)
    assert doc.title == "Front Title"
    assert [(s.metadata.get("heading"), s.text) for s in doc.sections] == [
        ("Top", "Top\nBody one."),
        ("Top > Sub", "Sub\nBody two."),
    ]


# --------------------------------------------------------------------------- mixed folders


def test_mixed_folder_recognised_by_content(tmp_path):
    root = tmp_path / "mixed"
    make_pdf(root / "report.pdf", [PAGE_1, PAGE_2], title="Annual Report")
    make_pdf(root / "scan.txt", ["A PDF saved with the wrong suffix."])  # content wins
    make_docx(root / "guide.bin")
    (root / "page").write_text(HTML, encoding="utf-8")  # no suffix at all
    (root / "notes.md").write_text("# Notes\n\nPlain notes.", encoding="utf-8")
    (root / "todo.txt").write_text("Water the plants.", encoding="utf-8")
    (root / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")  # not a document
    (root / ".cache").mkdir()
    make_pdf(root / ".cache" / "hidden.pdf", ["hidden"])
    assert detect_format(root) == "text"
    assert [document_kind(root / n) for n in ("scan.txt", "guide.bin", "page", "data.csv")] == [
        "pdf", "docx", "html", None,
    ]  # fmt: skip
    c = load_corpus(root)
    docs = {p.metadata["doc_id"] for p in c}
    assert docs == {"report.pdf", "scan", "guide.bin", "page", "notes", "todo"}
    assert by_id(c)["scan"].metadata["page"] == 1
    assert by_id(c)["todo"].metadata == {
        "doc_id": "todo", "chunk": 0, "source": "todo.txt", "path": "todo.txt"
    }  # fmt: skip
    # the stream gives the same passages
    streamed = list(iter_corpus(root))
    assert [p.to_dict() for p in streamed] == [p.to_dict() for p in c]
    with pytest.raises(CorpusError, match="holds no questions"):
        load_dataset(root)


def test_folder_of_one_sniffed_file(tmp_path):
    root = tmp_path / "only"
    make_pdf(root / "download", [PAGE_1])
    assert sniff(root / "download") == "pdf"
    assert detect_format(root) == "text"
    assert load_corpus(root).ids == ["download"]


def test_empty_documents_are_skipped_with_a_warning(tmp_path, caplog):
    root = tmp_path / "docs"
    make_pdf(root / "scan.pdf", [""])  # a page with no text, like a scan
    (root / "blank.md").write_text("\n  \n", encoding="utf-8")
    (root / "real.txt").write_text("Some real text.", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hopgraph.corpus"):
        c = load_corpus(root)
    assert c.ids == ["real"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "scan.pdf: skipped" in warned and "OCR" in warned and "blank.md: skipped" in warned
    (root / "real.txt").write_text(" ", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"blank\.md: empty text, as have the other 2"):
        load_corpus(root)


def test_missing_package_names_the_extra(tmp_path, monkeypatch):
    path = make_pdf(tmp_path / "a.pdf", [PAGE_1])
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf raises ImportError
    with pytest.raises(CorpusError, match=r"a\.pdf: reading PDF files needs pypdf") as e:
        load_corpus(path)
    assert "pip install 'hopgraph[docs]'" in str(e.value)


# --------------------------------------------------------------------------- corpus.jsonl


def test_corpus_jsonl_of_passages(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    records = [
        {"id": "a", "title": "A", "text": "Alpha text.", "metadata": {"page": 3}},
        {"id": "b", "title": "B", "text": "Beta text.", "metadata": {}},
    ]
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for given in (path, folder):
        assert detect_format(given) == "passages"
        c = load_corpus(given)
        assert c.ids == ["a", "b"] and c[0].metadata == {"page": 3} and c[1].title == "B"
        assert [p.id for p in iter_corpus(given)] == ["a", "b"]
        assert load_corpus(given, fmt="passages").ids == ["a", "b"]
    with pytest.raises(CorpusError, match="holds no questions"):
        load_dataset(folder)
    # beside documents, corpus.jsonl still decides
    (folder / "x.md").write_text("# X\n\nignored", encoding="utf-8")
    assert load_corpus(folder).ids == ["a", "b"]
    # the first line's keys: idx is unified, _id is BEIR
    path.write_text('{"idx": 0, "title": "T", "text": "x"}\n', encoding="utf-8")
    assert detect_format(folder) == "unified"
    path.write_text('{"_id": "d0", "title": "T", "text": "x"}\n', encoding="utf-8")
    assert detect_format(path) == "beir"


# --------------------------------------------------------------------------- end to end


def test_index_a_folder_of_pdfs_and_find_page_two(tmp_path):
    from hopgraph.index import Index

    root = tmp_path / "pdfs"
    make_pdf(root / "manual.pdf", [PAGE_1, PAGE_2], title="Turbine Manual")
    make_pdf(root / "other.pdf", ["A letter about the village fair and its cakes."])
    out = tmp_path / "ix"
    runner = CliRunner()
    r = runner.invoke(cli, ["index", str(root), "-o", str(out), "--parts", "sparse", "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        cli, ["search", str(out), "zephyr turbine maintenance", "--method", "bm25", "--json"]
    )
    assert r.exit_code == 0, r.output
    top = json.loads(r.output)["hits"][0]["id"]
    assert top == "manual.pdf#1"
    passage = Index.load(out).corpus.get(top)
    assert passage.metadata["page"] == 2 and passage.metadata["source"] == "manual.pdf"
    assert passage.title == "Turbine Manual"
