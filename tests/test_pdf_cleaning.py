"""PDF pages without their typesetting: running headers and footers, page numbers, tables of
contents and indexes left out, the title found on page 1. On PDFs made here by fpdf2."""

from __future__ import annotations

from pathlib import Path

import fpdf
import pypdf
import pytest

from hopgraph.corpus import load_corpus
from hopgraph.corpus.documents import document_passages, read_document
from hopgraph.corpus.documents.pdf_contents import is_contents_page, strip_leader_lines
from hopgraph.corpus.documents.pdf_running import RunningLines, line_numbers, page_number
from hopgraph.corpus.documents.pdf_title import first_line, metadata_title

BODY = {
    3: "The puffin nests in burrows dug into the turf of the outer islands and raises one chick.",
    4: "Guillemots crowd the narrow ledges of the sea cliffs and lay a single pointed egg there.",
    5: "The snowy owl hunts lemmings over the open tundra by day as well as by night in summer.",
    6: "Red knots gather on the mudflats in spring to feed on small clams before flying north.",
    7: "The arctic tern sees two summers a year, flying from the far north to the Antarctic ice.",
}
CONTENTS = (
    "Contents\n"
    "Introduction . . . . . . . . . . . . . . . . . . 3\n"
    "Seabirds . . . . . . . . . . . . . . . . . . . . 4\n"
    "Owls...........................................5\n"
    "Waders . . . . . . . . . . . . . . . . . . . . . 6\n"
    "Terns . . . . . . . . . . . . . . . . . . . . . 7"
)
INDEX = (
    "Index\n"
    "A\n"
    "arctic tern, 7\n"
    "auk, great, 4\n"
    "G\n"
    "guillemot, 4\n"
    "K\n"
    "knot, red, 6\n"
    "O\n"
    "owl, snowy, 5, 7\n"
    "P\n"
    "puffin, 3-4\n"
    "T\n"
    "tern, 7"
)


class Book(fpdf.FPDF):
    """Pages with a running header carrying the page number (on the left of even pages, the
    right of odd ones) and a footer, from page 2 on; page 1 a title page."""

    def header(self) -> None:
        n = self.page_no()
        if n > 1:
            self.set_font("helvetica", size=9)
            text = f"{n}   Northern Birds" if n % 2 == 0 else f"Northern Birds   {n}"
            self.cell(0, 8, text, align="L" if n % 2 == 0 else "R")
            self.ln(14)

    def footer(self) -> None:
        if self.page_no() > 1:
            self.set_y(-15)
            self.set_font("helvetica", size=9)
            self.cell(0, 8, "Tundra Press, second edition", align="C")


def write(pdf: fpdf.FPDF, text: str, size: float = 11, height: float = 6) -> None:
    pdf.set_font("helvetica", size=size)
    pdf.multi_cell(0, height, text, new_x="LMARGIN", new_y="NEXT")


def make_book(path: Path, meta_title: str | None = None) -> Path:
    pdf = Book()
    if meta_title is not None:
        pdf.set_title(meta_title)
    pdf.add_page()
    write(pdf, "A Field Guide to\nNorthern Birds", size=26, height=12)
    write(pdf, "Written by the ornithology circle of the northern coast")
    pdf.add_page()
    write(pdf, CONTENTS)
    for number in sorted(BODY):
        pdf.add_page()
        write(pdf, BODY[number])
    pdf.add_page()
    write(pdf, INDEX)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


class Numbered(fpdf.FPDF):
    """Pages with a ``- n -`` page number at the bottom."""

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("helvetica", size=9)
        self.cell(0, 8, f"- {self.page_no()} -", align="C")


def make_pages(path: Path, pages: list[str], footer_numbers: bool = False) -> Path:
    """Plain pages of 11pt text; ``footer_numbers``: a ``- n -`` page number at the bottom."""
    pdf = Numbered() if footer_numbers else fpdf.FPDF()
    for text in pages:
        pdf.add_page()
        write(pdf, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def flat(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- a whole book


def test_book_keeps_its_body_pages_only(tmp_path):
    doc = read_document(make_book(tmp_path / "guide.pdf"))
    assert doc.title == "A Field Guide to Northern Birds"  # two lines of the largest type
    assert [s.metadata for s in doc.sections] == [{"page": n} for n in (1, 3, 4, 5, 6, 7)]
    assert doc.dropped == {"contents_pages": 2, "running_lines": 10}  # 5 headers, 5 footers
    for section in doc.sections[1:]:
        assert flat(section.text) == BODY[section.metadata["page"]]
    assert "ornithology circle" in doc.sections[0].text
    for section in doc.sections:
        assert "Tundra Press" not in section.text and "Northern Birds   " not in section.text
        assert not section.text.lstrip()[:1].isdigit()
        assert ". . ." not in section.text and ", 7" not in section.text


def test_book_passages_name_the_title_and_never_start_with_a_header(tmp_path):
    make_book(tmp_path / "docs" / "guide.pdf")
    corpus = load_corpus(tmp_path / "docs")
    assert {p.title for p in corpus} == {"A Field Guide to Northern Birds"}
    assert [p.metadata["page"] for p in corpus] == [1, 3, 4, 5, 6, 7]
    for p in corpus:
        assert not p.text.startswith(("Northern Birds", "Tundra Press")), p.text
        assert not p.text.split()[0].isdigit()


def test_meaningful_metadata_title_wins_and_a_file_name_does_not(tmp_path):
    assert read_document(make_book(tmp_path / "a.pdf", "Birds of the North")).title == (
        "Birds of the North"
    )
    for junk in ("guide.dvi", "Microsoft Word - guide.doc", "untitled", "   "):
        doc = read_document(make_book(tmp_path / "b.pdf", junk))
        assert doc.title == "A Field Guide to Northern Birds", junk


# --------------------------------------------------------------------------- nothing to remove


def test_short_prose_pdf_loses_nothing(tmp_path):
    pages = [
        "The orchard report covers apples, pears and the spring harvest of the valley. " * 4,
        "The zephyr turbine needs its maintenance schedule checked every quarter. " * 4,
        "Winter pruning keeps the old trees open to light and air for the next season. " * 3,
    ]
    path = make_pages(tmp_path / "report.pdf", pages)
    doc = read_document(path)
    raw = [p.extract_text() for p in pypdf.PdfReader(str(path)).pages]
    assert [s.text for s in doc.sections] == [t.strip() for t in raw]
    assert [s.metadata["page"] for s in doc.sections] == [1, 2, 3]
    assert doc.dropped == {}
    assert doc.title is None  # page 1 starts with a paragraph: the loader uses the file name
    passages = document_passages("report.pdf", doc, title="report")
    assert flat(" ".join(p.text for p in passages)).startswith("The orchard report covers")


def test_numeric_table_and_code_pages_are_kept(tmp_path):
    weights = [
        ("thin", 0), ("extralight", 40), ("light", 50), ("book", 75), ("regular", 80),
        ("medium", 100), ("demibold", 180), ("bold", 200), ("extrabold", 205), ("black", 210),
    ]  # fmt: skip
    table = "Weight names\n" + "\n".join(f"{name} weight {value}" for name, value in weights)
    code = "\n".join(f"set cntrparam levels incremental 0, {k}, {10 * k}" for k in range(1, 9))
    doc = read_document(make_pages(tmp_path / "t.pdf", [table, code, "Plain prose to end."]))
    assert doc.dropped == {}
    assert [s.metadata["page"] for s in doc.sections] == [1, 2, 3]
    assert "bold weight 200" in doc.sections[0].text and "0, 8, 80" in doc.sections[1].text


def test_body_lines_repeated_on_two_pages_stay_and_lone_page_numbers_go(tmp_path):
    pages = [
        "Warning\nKeep the hatch closed while the engine turns over.",
        "Warning\nThe fuel line must be bled before the first start.",
        "Checking the oil\nThe dipstick sits behind the left cover of the block.",
        "Cleaning the filter\nRinse the mesh in warm water and let it dry.",
    ]
    doc = read_document(make_pages(tmp_path / "engine.pdf", pages, footer_numbers=True))
    assert [s.text.splitlines()[0] for s in doc.sections] == [
        "Warning", "Warning", "Checking the oil", "Cleaning the filter"
    ]  # fmt: skip
    assert all(not s.text.rstrip().endswith("-") for s in doc.sections)
    assert doc.dropped == {"running_lines": 4}


def test_chapter_headers_over_runs_of_pages_go(tmp_path):
    chapters = ["Seabirds"] * 3 + ["Owls of the taiga"] * 5 + ["Waders"] * 6  # none on 1/4
    birds = "auk tern gull owl hawk kite crane stork snipe knot ruff godwit curlew plover"
    pages = [
        f"{chapter}\nThe {bird} is one of the {chapter.lower()} this guide tells of."
        for chapter, bird in zip(chapters, birds.split(), strict=True)
    ]
    doc = read_document(make_pages(tmp_path / "g.pdf", pages, footer_numbers=True))
    assert [flat(s.text) for s in doc.sections] == [p.split("\n", 1)[1] for p in pages]
    assert doc.dropped == {"running_lines": 28}  # 14 headers, 14 page numbers


# --------------------------------------------------------------------------- the parts


def test_page_numbers():
    assert page_number("(12)") == page_number("12") and page_number("12").value == 12
    assert page_number("iv").value == 4 and page_number("mix") is None
    assert page_number("5.4") is None and page_number("1.") is None
    assert [(i, n.value) for i, n in line_numbers("- 12 -")] == [(0, 12)]
    assert [(i, n.value) for i, n in line_numbers("Page 3 of 12")] == [(1, 3), (3, 12)]
    assert line_numbers("vi is an editor") == [(0, page_number("vi"))]
    assert line_numbers("the vi editor") == []  # roman numerals only at an end


def test_forms_keep_the_page_number_out():
    pages = [[f"{n} gnuplot 5.4" if n % 2 else f"gnuplot 5.4 {n}", f"Text {n * 7}.", f"{n}!"]
             for n in range(1, 9)]  # fmt: skip
    running = RunningLines.of(pages)
    assert running.form("276 gnuplot 5.4", 276, "top") == "# gnuplot 5.4"
    assert running.form("278 gnuplot 5.4", 278, "top") == "# gnuplot 5.4"
    assert running.form("Subtotal 278", 5, "top") == "subtotal 278"  # not page 5's number
    assert running.forms["top"] == {"# gnuplot 5.4", "gnuplot 5.4 #"}
    assert running.strip(pages[2], 3) == (["Text 21.", "3!"], 1)


def test_running_lines_learned_from_pages():
    # texinfo: a chapter's first page has its number alone, the next ones a header with it
    topics = ["Usage", "Options", "Files", "Output", "Errors", "Limits", "Bugs", "Notes", "See"]
    pages = [
        [f"{n}" if n == 1 else f"Chapter 1: Usage {n}", f"1.{n} {topic}", f"About {topic}."]
        for n, topic in enumerate(topics, 1)
    ]
    pages[0][1] = "1 Usage"  # the chapter's heading starts as its first page's number does
    running = RunningLines.of(pages)
    assert running.strip(pages[0], 1) == (["1 Usage", "About Usage."], 1)  # one folio a side
    assert running.strip(pages[4], 5) == (["1.5 Errors", "About Errors."], 1)


@pytest.mark.parametrize(
    "lines",
    [
        ["Contents", "Introduction . . . . . . 1", "Usage . . . . . . 3", "Setup.....5", "Ix 9"],
        ["Index", "A", "abs, 37", "acos, 37", "arrow, 131, 198", "B", "bars, 65, 148", "bind, 53"],
        ["Contents", "I Gnuplot 21", "Copyright 21", "Introduction 21", "Seeking help 22"],
        "Contents|Introduction|1|Installing the tools|3|First steps|7|Use|9".split("|"),
        ["Contents", "Introduction . . . . . . . . . .", "1", "Usage . . . . . . . . . . . .", "3"]
        + ["Files . . . . . . . . . . . . .", "5", "Bugs . . . . . . . . . . . . . .", "6"],
    ],
)
def test_contents_pages(lines):
    assert is_contents_page(lines)


@pytest.mark.parametrize(
    "lines",
    [
        ["thin weight 0", "light weight 50", "book weight 75", "bold weight 200"],
        ["Glossary 47", "Inline data 48", "Arrows 62", "Boxes 70"],  # no heading, no contents
        ["zeta, 9", "alpha, 3", "mu, 4", "beta, 1", "omega, 2", "gamma, 8"],  # not sorted
        ["Name", "12", "Age", "34", "Height", "180", "Weight", "75"],  # no contents heading
        ["Usage", "Run it . . . . . . 3", "Stop it . . . . . . 4", "Tune it . . . . . . 5"]
        + ["The program reads its settings from the file named in the first argument."] * 4,
    ],
)
def test_no_contents_pages(lines):
    assert not is_contents_page(lines)


def test_leader_lines_off_a_kept_page():
    lines = ["2. Usage", "Table of Contents", "2.1. NAME . . . . . . 2", "2.2. SYNOPSIS . . . . 2"]
    assert strip_leader_lines([*lines, "This chapter is the manual page."]) == [
        "2. Usage", "This chapter is the manual page."
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "title"),
    [
        ("Nettle Manual", "Nettle Manual"),
        ("  Annual   Report ", "Annual Report"),
        ("", None),
        ("   ", None),
        (None, None),
        ("manual.dvi", None),
        ("Microsoft Word - report.doc", None),
        ("Untitled", None),
        ("untitled-1", None),
        ("C:\\docs\\report", None),
    ],
)
def test_metadata_title(value, title):
    assert metadata_title(value) == title


def test_first_line_as_title():
    assert first_line(["Quarterly Report", "The quarter closed with sales up on all lines."]) == (
        "Quarterly Report"
    )
    paragraph = [
        "The committee met on Tuesday to discuss the budget for",
        "the coming year and agreed to meet again in the spring when",
        "the accounts are closed.",
    ]
    assert first_line(paragraph) is None  # a paragraph's first line is as long as the next
    assert first_line(["A memo about the picnic."]) is None
    assert first_line([]) is None


class Report(fpdf.FPDF):
    """A word processor's pages: the same header on every page, ``Page n of m`` at the foot."""

    def header(self) -> None:
        self.set_font("helvetica", size=9)
        self.cell(0, 8, "Quarterly Review, March 2024", align="R")
        self.ln(14)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("helvetica", size=9)
        self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="C")


def test_word_style_header_and_page_n_of_m_footer_go(tmp_path):
    regions = ["northern", "southern", "eastern", "western", "central"]
    texts = [f"Sales in the {region} region rose by a tenth." for region in regions]
    pdf = Report()
    pdf.set_title("Microsoft Word - review.docx")
    for text in texts:
        pdf.add_page()
        write(pdf, text)
    pdf.output(str(tmp_path / "review.pdf"))
    doc = read_document(tmp_path / "review.pdf")
    assert [s.text for s in doc.sections] == texts
    assert doc.dropped == {"running_lines": 2 * len(texts)}
    assert doc.title is None  # no larger type, and page 1 starts with a sentence
