"""PDF files: one section per page (pypdf), without the typesetting around the text.

Pages are read whole first, then cleaned as a document: running headers, footers and page
numbers come off every page (:mod:`~hopgraph.corpus.documents.pdf_running`, counted as
``running_lines``); pages of a table of contents or an index are left out
(:mod:`~hopgraph.corpus.documents.pdf_contents`, counted as ``contents_pages``), and dot-leader
lines off the pages kept. Each page left with text is a section with metadata ``{"page": n}``
(1-based, as in the file). The title is the Title metadata unless it is empty or a file name,
then page 1's most prominent line (:mod:`~hopgraph.corpus.documents.pdf_title`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hopgraph.corpus.documents.base import Document, Section, import_parser, quiet
from hopgraph.corpus.documents.pdf_contents import is_contents_page, strip_leader_lines
from hopgraph.corpus.documents.pdf_running import RunningLines
from hopgraph.corpus.documents.pdf_title import TypeSizes, first_line, metadata_title
from hopgraph.errors import CorpusError


def read_pdf(path: Path) -> Document:
    pypdf = import_parser("pypdf", "pdf", path)
    texts: list[str] = []
    with quiet("pypdf"):
        try:
            reader = pypdf.PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                raise CorpusError("the PDF is encrypted (it needs a password)", path)
            try:
                title = metadata_title(reader.metadata.title if reader.metadata else None)
            except Exception:  # a broken info dictionary: no title, the text may still be fine
                title = None
            sizes = TypeSizes() if title is None else None
            for number, page in enumerate(reader.pages, 1):
                if number == 1 and sizes is not None:
                    texts.append(page.extract_text(visitor_text=sizes.visit) or "")
                else:
                    texts.append(page.extract_text() or "")
        except CorpusError:
            raise
        except pypdf.errors.FileNotDecryptedError:
            raise CorpusError("the PDF is encrypted (it needs a password)", path) from None
        except Exception as e:  # pypdf raises many kinds on a damaged file
            raise CorpusError(f"cannot read this PDF ({type(e).__name__}: {e})", path) from None
    return clean_pages(texts, title, sizes)


def page_lines(text: str) -> list[str]:
    """A page's non-empty lines, trailing spaces off (indentation kept)."""
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def clean_pages(texts: Sequence[str], title: str | None, sizes: TypeSizes | None) -> Document:
    """The document of these page texts: running lines off, contents pages out, the title
    found on page 1 when ``title`` is None (``sizes``: page 1's type sizes, if collected)."""
    pages = [page_lines(text) for text in texts]
    running = RunningLines.of([[line.strip() for line in lines] for lines in pages])
    sections: list[Section] = []
    dropped = {"contents_pages": 0, "running_lines": 0, "contents_lines": 0}
    page_one: list[str] = []
    contents = False  # the page before was contents: the next may go on with plain entries
    for number, lines in enumerate(pages, 1):
        body, removed = running.strip(lines, number)
        contents = is_contents_page([line.strip() for line in body], continued=contents)
        if contents:
            dropped["contents_pages"] += 1
            continue
        dropped["running_lines"] += removed
        kept = strip_leader_lines(body)
        dropped["contents_lines"] += len(body) - len(kept)
        body = kept
        if number == 1:
            page_one = body
        if body:
            sections.append(Section("\n".join(body), {"page": number}))
    if title is None:
        title = (sizes.title() if sizes is not None else None) or first_line(page_one)
    return Document(title, sections, {k: n for k, n in dropped.items() if n})
