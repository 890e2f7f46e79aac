"""PDF files: one section per page (pypdf)."""

from __future__ import annotations

from pathlib import Path

from hopgraph.corpus.documents.base import Document, Section, clean_title, import_parser, quiet
from hopgraph.errors import CorpusError


def read_pdf(path: Path) -> Document:
    pypdf = import_parser("pypdf", "pdf", path)
    sections: list[Section] = []
    with quiet("pypdf"):
        try:
            reader = pypdf.PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                raise CorpusError("the PDF is encrypted (it needs a password)", path)
            try:
                title = clean_title(reader.metadata.title if reader.metadata else None)
            except Exception:  # a broken info dictionary: no title, the text may still be fine
                title = None
            for number, page in enumerate(reader.pages, 1):
                text = page.extract_text() or ""
                if text.strip():
                    sections.append(Section(text, {"page": number}))
        except CorpusError:
            raise
        except pypdf.errors.FileNotDecryptedError:
            raise CorpusError("the PDF is encrypted (it needs a password)", path) from None
        except Exception as e:  # pypdf raises many kinds on a damaged file
            raise CorpusError(f"cannot read this PDF ({type(e).__name__}: {e})", path) from None
    return Document(title, sections)
