"""HTML as real sites write it, read into clean passages: a small Sphinx site built in the test
(Sphinx from PyPI), and pages written the ways other tools write them."""

from __future__ import annotations

import re
from pathlib import Path

import lxml.html
import pytest

from hopgraph.corpus import iter_corpus, load_corpus
from hopgraph.corpus.documents import read_document
from hopgraph.corpus.documents.folder import new_report
from hopgraph.corpus.documents.titles import shared_affix, strip_affix

sphinx_build = pytest.importorskip("sphinx.cmd.build", reason="the site is built with Sphinx")

CONF = """
project = "Widgets"
version = release = "2.1"
extensions = []
html_theme = "classic"
html_copy_source = False
"""

INDEX = """
Widgets
=======

.. toctree::

   guide
   api
"""

GUIDE = """
User guide
==========

Widgets spin when the ``spin_rate`` is set. Use *emphasis* and **strong** words freely.

Installing
----------

Run the installer::

    $ make install
    Output of the build
    -------------------
    done

Then check the result:

.. code-block:: python

    def check_widget(widget):
        return widget.spin_rate > 0

Configuring
-----------

The file ``widget_rc`` holds every setting, one per line [#]_.

.. [#] Blank lines and lines starting with a hash mark are skipped.
"""

API = """
API reference
=============

.. py:function:: total_ordering(cls)

   Fill in the missing comparison methods of *cls* from ``__lt__`` and ``__eq__``.

.. py:function:: spin(widget, *, rate=1)

   Spin the widget at ``rate`` turns per second.

Errors
------

A widget that cannot spin raises ``WidgetError``.
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name, text in {"conf.py": CONF, "index.rst": INDEX, "guide.rst": GUIDE}.items():
        (src / name).write_text(text, encoding="utf-8")
    (src / "api.rst").write_text(API, encoding="utf-8")
    out = tmp_path_factory.mktemp("html")
    assert sphinx_build.build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    return out


def page_headings(path: Path) -> set[str]:
    """The text of every h1-h6 of the page, as a reader sees it (permalink marks left out)."""
    root = lxml.html.parse(str(path)).getroot()
    for a in root.xpath("//a[contains(@class, 'headerlink')]"):
        a.drop_tree()
    return {" ".join(h.text_content().split()) for h in root.xpath("//h1|//h2|//h3|//h4|//h5|//h6")}


def test_sphinx_site_gives_clean_text_real_headings_and_plain_titles(site):
    report = new_report()
    passages = list(iter_corpus(site, report=report))
    by_doc: dict[str, list] = {}
    for p in passages:
        by_doc.setdefault(p.metadata["doc_id"], []).append(p)
    assert "guide.html" in by_doc and "api.html" in by_doc
    for p in passages:
        assert not re.search(r"\\[_*\[\]>#`]", p.text), p.text  # no Markdown escapes
        assert "¶" not in p.text and "```" not in p.text
        assert "documentation" not in p.title  # the site's suffix is off
        assert p.title.strip()
        # every heading label is a heading of its own page
        if "heading" in p.metadata:
            last = p.metadata["heading"].split(" > ")[-1]
            assert last in page_headings(site / p.metadata["source"]), p.metadata
    assert {p.title for p in by_doc["guide.html"]} == {"User guide"}
    assert report["titles"]["."]["suffix"].endswith("Widgets 2.1 documentation")
    guide = "\n".join(p.text for p in by_doc["guide.html"])
    # code keeps its lines, and a dashed line inside it is no heading
    assert "def check_widget(widget):\n    return widget.spin_rate > 0" in guide
    assert "Output of the build\n-------------------" in guide
    heads = {p.metadata.get("heading") for p in by_doc["guide.html"]}
    assert heads <= {"User guide", "User guide > Installing", "User guide > Configuring"}
    assert "spin_rate" in guide and "*emphasis*" not in guide and "**strong**" not in guide
    assert "lines starting with a hash mark are skipped" in guide  # a footnote (an <aside>)
    api = "\n".join(p.text for p in by_doc["api.html"])
    assert "total_ordering(cls)" in api and "spin(widget, *, rate=1)" in api


def test_navigation_pages_are_dropped_and_counted(site):
    report = new_report()
    passages = list(iter_corpus(site, report=report))
    docs = {p.metadata["doc_id"] for p in passages}
    assert "genindex.html" not in docs  # the general index: links only
    assert report["dropped"]["navigation_pages"]["count"] >= 1
    assert report["documents"] == len(docs) + report["dropped"]["navigation_pages"]["count"]
    assert report["passages"] == len(passages)


def test_bm25_finds_a_code_name(site):
    from hopgraph.index import Index
    from hopgraph.retrieve import get_retriever

    index = Index.build(load_corpus(site), parts=["sparse"])
    hits = get_retriever(index, "bm25").search("total_ordering", k=3)
    assert hits.ids and index.corpus.get(hits.ids[0]).metadata["doc_id"] == "api.html"


# --------------------------------------------------------------------------- other writers


def write(path: Path, html: str) -> Path:
    path.write_text(html, encoding="utf-8")
    return path


def test_page_without_main_landmark_is_its_body_without_menus(tmp_path):
    body = " ".join(
        f"Sentence {i} about the spinning widget and its many parts." for i in range(40)
    )
    page = write(
        tmp_path / "plain.html",
        "<html><head><title>Plain page</title></head><body>"
        "<div class='menu'><a href='a'>Home</a> <a href='b'>About</a></div>"
        f"<h1>Widget notes</h1><p>{body}</p><h2>Care</h2><p>Oil the widget_axle weekly.</p>"
        "<pre>oil --axle\n  --weekly</pre></body></html>",
    )
    doc = read_document(page)
    assert doc.title == "Plain page"
    text = "\n".join(s.text for s in doc.sections)
    assert "widget_axle" in text and "\\_" not in text
    assert "Widget notes > Care" in [s.metadata.get("heading") for s in doc.sections]


def test_main_landmark_leaves_out_navigation_and_permalinks(tmp_path):
    page = write(
        tmp_path / "mk.html",
        "<html><head><title>Install - MySite</title></head><body>"
        "<nav><a href='/'>Home</a><a href='/x'>Other page</a></nav>"
        "<main><h1 id='i'>Install<a class='headerlink' href='#i'>¶</a></h1>"
        "<p>Run <code>pip\\_install</code> then <em>restart</em>.</p>"
        "<h2 id='c'>Check<a href='#c'>#</a></h2><p>See the log.</p>"
        "<nav><a href='/prev'>Previous</a></nav></main>"
        "<footer>Copyright</footer></body></html>",
    )
    doc = read_document(page)
    assert [s.metadata.get("heading") for s in doc.sections] == ["Install", "Install > Check"]
    text = "\n".join(s.text for s in doc.sections)
    assert "¶" not in text and "Home" not in text and "Previous" not in text
    assert "Copyright" not in text
    assert "pip\\_install" in text  # inside code the text is kept as written


def test_markdown_reads_as_the_text_a_reader_sees(tmp_path):
    md = write(
        tmp_path / "notes.md",
        "# Notes\n\nUse **bold** and [a link](http://x.org) and `snake_case` and an\\_escape.\n\n"
        "```\n# not a heading\nx = 1\n```\n\nSetext\n------\n\nMore.\n",
    )
    doc = read_document(md)
    assert doc.title == "Notes"
    assert [s.metadata.get("heading") for s in doc.sections] == ["Notes", "Notes > Setext"]
    text = doc.sections[0].text
    assert "bold" in text and "**" not in text and "a link" in text and "](" not in text
    assert "an_escape" in text and "# not a heading\nx = 1" in text


@pytest.mark.parametrize(
    ("titles", "expected"),
    [
        (["a — Site 1 docs", "b — c — Site 1 docs", "Site 1 docs"], (None, " — Site 1 docs")),
        (["Docs | Install", "Docs | Use", "Docs | API", "Other"], ("Docs | ", None)),
        (["Alpha - one", "Beta - two", "Gamma"], (None, None)),  # nothing shared by most
        (["x — S", "y — S"], (None, None)),  # too few pages to tell
    ],
)
def test_shared_affix(titles, expected):
    assert shared_affix(titles) == expected


def test_strip_affix_keeps_a_title_that_is_only_the_affix():
    assert strip_affix("functools — Higher-order — Py docs", None, " — Py docs") == (
        "functools — Higher-order"
    )
    assert strip_affix("Py docs", None, " — Py docs") == "Py docs"


def test_index_records_what_reading_left_out(site, tmp_path):
    from click.testing import CliRunner

    from hopgraph.cli import cli
    from hopgraph.index import Index

    out = tmp_path / "ix"
    result = CliRunner().invoke(
        cli, ["index", str(site), "-o", str(out), "--parts", "sparse", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "navigation pages" in result.output  # the reading's line
    reading = Index.load(out).info()["reading"]
    assert reading["dropped"]["navigation_pages"]["count"] >= 1
    assert reading["titles"]["."]["suffix"].endswith("documentation")
    # the corpus's own folder is never an output, even with --force
    again = CliRunner().invoke(cli, ["index", str(site), "-o", str(site), "--force", "-q"])
    assert again.exit_code != 0 and "would delete it" in str(again.exception or again.output)


def test_each_site_of_a_folder_loses_its_own_title_suffix(tmp_path):
    def page(path: Path, title: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(
            path,
            f"<html><head><title>{title}</title></head>"
            f"<body><main><p>Text of {title}.</p></main></body></html>",
        )

    for i in range(3):
        page(tmp_path / "py" / f"p{i}.html", f"mod{i} — Things — Py 3 docs")
    for i in range(5):
        page(tmp_path / "gp" / f"n{i}.html", f"Node {i}")
    report = new_report()
    titles = {p.metadata["doc_id"]: p.title for p in iter_corpus(tmp_path, report=report)}
    assert titles["py/p0.html"] == "mod0 — Things" and titles["gp/n1.html"] == "Node 1"
    assert report["titles"] == {"py": {"prefix": None, "suffix": " — Py 3 docs"}}
