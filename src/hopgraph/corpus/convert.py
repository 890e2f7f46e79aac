"""Convert other benchmarks into hopgraph datasets, and write datasets in the unified layout.

``tables_dataset``
    Spider / BIRD text-to-SQL folders as a table-retrieval task: one passage per table
    (its name and columns as text), gold = the tables the question's gold SQL reads,
    ``links`` = foreign keys.
``chunked_dataset``
    A BEIR folder with every document split into word windows; gold = all chunks of each
    relevant document.
``write_unified``
    Any :class:`Dataset` as ``corpus.jsonl`` + ``questions.jsonl`` (or
    ``questions_{split}.jsonl``), the layout :func:`load_dataset` reads back.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.loaders import (
    _id_value,
    _load_json_list,
    _require,
    _require_dict,
    _str_value,
    _Where,
    detect_format,
    load_dataset,
    unified_questions_file,
)
from hopgraph.corpus.passage import Corpus, Dataset, Passage, Question
from hopgraph.errors import CorpusError

__all__ = ["chunked_dataset", "sql_tables", "tables_dataset", "write_unified"]


# --------------------------------------------------------------------------- SQL tables

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    | (?P<str>'(?:[^']|'')*')
    | (?P<dq>"(?:[^"]|"")*")
    | (?P<bq>`(?:[^`]|``)*`)
    | (?P<br>\[(?:[^\]]|\]\])*\])
    | (?P<word>[^\W\d]\w*)
    | (?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

# Words that end a FROM item: they cannot be a bare alias.
_RESERVED = frozenset(
    """
    AS ON USING WHERE GROUP ORDER HAVING LIMIT OFFSET FETCH WINDOW QUALIFY UNION INTERSECT
    EXCEPT MINUS JOIN INNER LEFT RIGHT FULL OUTER CROSS NATURAL STRAIGHT_JOIN SELECT FROM
    WITH VALUES FOR INDEXED NOT RETURNING SET LATERAL ONLY WHEN THEN ELSE END AND OR
    """.split()
)
_QUERY_START = frozenset({"SELECT", "WITH", "VALUES"})

# (kind, value): kind is "word", "id" (quoted identifier), "str", "num" or "op".
_Token = tuple[str, str]


def _tokens(sql: str) -> list[_Token]:
    out: list[_Token] = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup
        text = m.group()
        if kind in ("space", "comment"):
            continue
        if kind in ("dq", "bq", "br"):
            close = "]" if kind == "br" else text[0]
            out.append(("id", text[1:-1].replace(close * 2, close)))
        elif kind in ("word", "str", "num"):
            out.append((str(kind), text))
        else:
            out.append(("op", text))
    return out


def _matches(toks: list[_Token]) -> list[int]:
    """For each "(" the index of its ")" (len(toks) when unbalanced)."""
    match = [-1] * len(toks)
    stack: list[int] = []
    for i, (kind, val) in enumerate(toks):
        if kind == "op" and val == "(":
            stack.append(i)
        elif kind == "op" and val == ")" and stack:
            match[stack.pop()] = i
    for i in stack:
        match[i] = len(toks)
    return match


def _is_word(tok: _Token, *words: str) -> bool:
    return tok[0] == "word" and tok[1].upper() in words


def _is_op(tok: _Token, op: str) -> bool:
    return tok[0] == "op" and tok[1] == op


def _is_name(tok: _Token) -> bool:
    return tok[0] == "id" or (tok[0] == "word" and tok[1].upper() not in _RESERVED)


class _SqlScan:
    """One pass over the tokens collecting FROM / JOIN table references and CTE names."""

    def __init__(self, sql: str):
        self.toks = _tokens(sql)
        self.match = _matches(self.toks)
        self.query_parens: set[int] = set()  # parens that hold a query or a FROM item
        self.names: list[tuple[int, str]] = []  # (token position, name)
        self.ctes: set[str] = set()

    def _tok(self, j: int) -> _Token:
        return self.toks[j] if j < len(self.toks) else ("op", "")

    def run(self) -> None:
        stack: list[int] = []
        for i, tok in enumerate(self.toks):
            if _is_op(tok, "("):
                stack.append(i)
            elif _is_op(tok, ")"):
                if stack:
                    stack.pop()
            elif _is_word(tok, "FROM", "JOIN"):
                if self._query_context(stack) and not _is_word(self._tok(i - 1), "DISTINCT"):
                    self._from_items(i + 1)
            elif _is_word(tok, "WITH"):
                self._ctes(i + 1)

    def _query_context(self, stack: list[int]) -> bool:
        """True outside parentheses or inside a subquery; False inside a function call
        such as ``EXTRACT(YEAR FROM d)``."""
        if not stack:
            return True
        top = stack[-1]
        return top in self.query_parens or _is_word(self._tok(top + 1), *_QUERY_START)

    def _from_items(self, j: int) -> None:
        """Read ``item [AS alias] [, item ...]`` from token ``j``."""
        n = len(self.toks)
        while j < n:
            while _is_word(self._tok(j), "LATERAL", "ONLY"):
                j += 1
            tok = self._tok(j)
            if _is_op(tok, "("):
                self.query_parens.add(j)
                if not _is_word(self._tok(j + 1), *_QUERY_START):
                    self._from_items(j + 1)  # a parenthesised join or table list
                j = self.match[j] + 1
            elif _is_name(tok):
                name, pos = tok[1], j
                j += 1
                while _is_op(self._tok(j), ".") and self._tok(j + 1)[0] in ("word", "id"):
                    name = self._tok(j + 1)[1]  # schema.table: keep the table
                    j += 2
                if _is_op(self._tok(j), "("):  # a table-valued function, not a table
                    j = self.match[j] + 1
                else:
                    self.names.append((pos, name))
            else:
                return
            if _is_word(self._tok(j), "AS"):
                j += 2
            elif _is_name(self._tok(j)):
                j += 1
            if _is_op(self._tok(j), "("):  # column aliases: AS t(a, b)
                j = self.match[j] + 1
            if not _is_op(self._tok(j), ","):
                return
            j += 1

    def _ctes(self, j: int) -> None:
        """Record the names ``WITH [RECURSIVE] name [(cols)] AS (...) [, ...]`` defines."""
        if _is_word(self._tok(j), "RECURSIVE"):
            j += 1
        while _is_name(self._tok(j)):
            name = self._tok(j)[1]
            j += 1
            if _is_op(self._tok(j), "("):
                j = self.match[j] + 1
            if not _is_word(self._tok(j), "AS"):
                return
            j += 1
            while _is_word(self._tok(j), "NOT", "MATERIALIZED"):
                j += 1
            if not _is_op(self._tok(j), "("):
                return
            self.ctes.add(name.lower())
            j = self.match[j] + 1
            if not _is_op(self._tok(j), ","):
                return
            j += 1


def sql_tables(sql: str, tables: Sequence[str]) -> list[str]:
    """The names in ``tables`` that ``sql`` reads, in order of first use.

    Table references are taken after ``FROM`` and ``JOIN`` (comma lists, aliases,
    parenthesised joins, subqueries at any depth, set operations), case-insensitively,
    with identifiers quoted by backticks, double quotes or brackets; string literals and
    comments are skipped, as are ``FROM`` inside function calls (``EXTRACT(x FROM d)``)
    and CTE names. Names come back spelled as in ``tables``.
    """
    by_lower: dict[str, str] = {}
    for t in tables:
        by_lower.setdefault(t.lower(), t)
    scan = _SqlScan(sql)
    scan.run()
    out: dict[str, None] = {}
    for _, name in sorted(scan.names):
        low = name.lower()
        if low in by_lower and low not in scan.ctes:
            out[by_lower[low]] = None
    return list(out)


# --------------------------------------------------------------------------- Spider / BIRD


TABLE_KIND = "table"
"""The ``kind`` in a serialised table's metadata: a table's name is a schema's word, not an
entity's (``index.detect`` turns title aliases off for a corpus of tables)."""


def _norm_name(s: str) -> str:
    return " ".join(s.lower().replace("_", " ").split())


def _named(original: str, natural: str) -> str:
    if natural and _norm_name(natural) != _norm_name(original):
        return f"{original} ({natural})"
    return original


def _schema_passages(schema: dict[str, Any], where: _Where) -> list[Passage]:
    db_id = _id_value(_require(schema, "db_id", where), "db_id", where)
    tables = _require(schema, "table_names_original", where)
    natural = schema.get("table_names") or tables
    cols = _require(schema, "column_names_original", where)
    cols_nl = schema.get("column_names") or cols
    fks = schema.get("foreign_keys") or []
    ok = (
        isinstance(tables, list)
        and all(isinstance(t, str) and t.strip() for t in tables)
        and isinstance(natural, list)
        and len(natural) == len(tables)
        and isinstance(cols, list)
        and isinstance(cols_nl, list)
        and len(cols_nl) == len(cols)
        and all(
            isinstance(c, list)
            and len(c) == 2
            and isinstance(c[0], int)
            and -1 <= c[0] < len(tables)
            and isinstance(c[1], str)
            for c in (*cols, *cols_nl)
        )
    )
    if not ok:
        raise where.error(f"database {db_id!r}: malformed table or column names")
    if not isinstance(fks, list) or not all(
        isinstance(fk, list)
        and len(fk) == 2
        and all(isinstance(c, int) and 0 <= c < len(cols) for c in fk)
        for fk in fks
    ):
        raise where.error(f"database {db_id!r}: 'foreign_keys' must be [column, column] pairs")

    columns: list[list[str]] = [[] for _ in tables]
    for (t, name), (_, nl) in zip(cols, cols_nl, strict=True):
        if t >= 0:
            columns[t].append(_named(name, nl))
    links: list[set[int]] = [set() for _ in tables]
    for a, b in fks:
        ta, tb = cols[a][0], cols[b][0]
        if ta >= 0 and tb >= 0 and ta != tb:
            links[ta].add(tb)
            links[tb].add(ta)
    ids = [f"{db_id}.{t}" for t in tables]
    passages = []
    for i, table in enumerate(tables):
        text = f"Table {_named(table, natural[i])}."
        if columns[i]:
            text += " Columns: " + ", ".join(columns[i]) + "."
        meta = {"db_id": db_id, "kind": TABLE_KIND, "links": sorted({ids[k] for k in links[i]})}
        passages.append(Passage(ids[i], table, text, meta))
    return passages


def tables_dataset(folder: str | os.PathLike[str], *, name: str | None = None) -> Dataset:
    """A table-retrieval dataset from a Spider or BIRD folder (``tables.json`` + ``dev.json``).

    One passage per table of every database (id ``"{db_id}.{table}"``, metadata ``db_id``
    and ``links``: the tables joined to it by a foreign key); one question per dev record
    whose gold SQL reads at least one table (gold = those tables, see :func:`sql_tables`),
    the others counted in ``skipped["no_gold_table"]``.
    """
    root = Path(folder).expanduser()
    if root.is_file() and root.name in ("tables.json", "dev.json"):
        root = root.parent
    if not root.is_dir():
        raise CorpusError("no such folder", root)
    tables_path, dev_path = root / "tables.json", root / "dev.json"
    for p in (tables_path, dev_path):
        if not p.is_file():
            raise CorpusError("no such file (a Spider/BIRD folder has tables.json and dev.json)", p)

    passages: list[Passage] = []
    db_tables: dict[str, list[str]] = {}
    for i, schema in enumerate(_load_json_list(tables_path)):
        where = _Where(tables_path, record=i)
        schema = _require_dict(schema, where)
        db_passages = _schema_passages(schema, where)
        db_id = str(schema["db_id"])
        if db_id in db_tables:
            raise where.error(f"duplicate db_id {db_id!r}")
        db_tables[db_id] = [p.title for p in db_passages]
        passages.extend(db_passages)
    if not passages:
        raise CorpusError("no tables", tables_path)

    questions: list[Question] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    for i, rec in enumerate(_load_json_list(dev_path)):
        where = _Where(dev_path, record=i)
        rec = _require_dict(rec, where)
        db_id = _id_value(_require(rec, "db_id", where), "db_id", where)
        if db_id not in db_tables:
            raise where.error(f"database {db_id!r} is not in {tables_path.name}")
        text = _str_value(_require(rec, "question", where), "question", where, nonempty=True)
        key = "query" if "query" in rec else "SQL"
        sql = _str_value(_require(rec, key, where), key, where)
        if "question_id" in rec:
            qid = _id_value(rec["question_id"], "question_id", where)
        else:
            qid = f"{db_id}-{i}"
        if qid in seen:
            raise where.error(f"duplicate question id {qid!r} (first in record {seen[qid]})")
        seen[qid] = i
        gold = sql_tables(sql, db_tables[db_id])
        if not gold:
            skipped["no_gold_table"] = skipped.get("no_gold_table", 0) + 1
            continue
        meta: dict[str, Any] = {"db_id": db_id, "sql": sql}
        for extra in ("evidence", "difficulty"):
            if extra in rec:
                meta[extra] = rec[extra]
        questions.append(Question(qid, text, tuple(f"{db_id}.{t}" for t in gold), (), meta))
    corpus = Corpus(passages, source=tables_path)
    return Dataset(name or root.name, corpus, questions, skipped)


# --------------------------------------------------------------------------- chunked BEIR


def chunked_dataset(
    folder: str | os.PathLike[str],
    *,
    split: str = "test",
    max_words: int = 64,
    overlap: int = 0,
    name: str | None = None,
) -> Dataset:
    """A BEIR dataset with every document cut by :func:`chunk_document`.

    Every passage has metadata ``doc_id`` (the document's id) and ``chunk`` (0-based), also
    when its document is a single chunk (whose id stays the document id). The gold of a
    question is every chunk of each of its relevant documents.
    """
    path = Path(folder).expanduser()
    if not path.exists():
        raise CorpusError("no such folder", path)
    try:
        kind = detect_format(path) if path.is_dir() else None
    except CorpusError:
        kind = None
    if kind != "beir":
        raise CorpusError(
            "not a BEIR folder (corpus.jsonl with '_id', queries.jsonl, qrels/{split}.tsv)", path
        )
    ds = load_dataset(path, split=split, fmt="beir")
    passages: list[Passage] = []
    chunks: dict[str, list[str]] = {}
    for doc in ds.corpus:
        parts = chunk_document(
            doc.id, doc.title, doc.text, max_words=max_words, overlap=overlap,
            metadata=doc.metadata,
        )  # fmt: skip
        ids = chunks[doc.id] = []
        for n, part in enumerate(parts):
            part = replace(part, metadata={**part.metadata, "doc_id": doc.id, "chunk": n})
            passages.append(part)
            ids.append(part.id)
    questions = [replace(q, gold=tuple(c for d in q.gold for c in chunks[d])) for q in ds.questions]
    corpus = Corpus(passages, source=ds.corpus.source)
    return Dataset(name or ds.name, corpus, questions, dict(ds.skipped))


# --------------------------------------------------------------------------- unified writer

_PASSAGE_KEYS = ("idx", "title", "text")
_QUESTION_KEYS = ("id", "question", "answers", "gold_corpus_idx")


def _dumps(rec: dict[str, Any], what: str) -> str:
    try:
        return json.dumps(rec, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise CorpusError(f"{what} cannot be written as JSON: {e}") from None


def _corpus_bytes(corpus: Corpus) -> bytes:
    lines = []
    for p in corpus:
        clash = [k for k in _PASSAGE_KEYS if k in p.metadata]
        if clash:
            raise CorpusError(f"passage {p.id!r}: metadata key {clash[0]!r} is a reserved field")
        rec = {"idx": p.id, "title": p.title, "text": p.text, **p.metadata}
        lines.append(_dumps(rec, f"passage {p.id!r}") + "\n")
    return "".join(lines).encode("utf-8")


def _questions_bytes(questions: Sequence[Question], corpus: Corpus) -> bytes:
    lines = []
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise CorpusError(f"duplicate question id {q.id!r}")
        seen.add(q.id)
        if not q.text.strip():
            raise CorpusError(f"question {q.id!r} has empty text")
        if not q.gold:
            raise CorpusError(f"question {q.id!r} has no gold passage")
        missing = [g for g in q.gold if g not in corpus]
        if missing:
            raise CorpusError(f"question {q.id!r}: gold passage {missing[0]!r} is not in corpus")
        clash = [k for k in _QUESTION_KEYS if k in q.metadata]
        if clash:
            raise CorpusError(f"question {q.id!r}: metadata key {clash[0]!r} is a reserved field")
        rec = {
            "id": q.id,
            "question": q.text,
            "answers": list(q.answers),
            "gold_corpus_idx": list(q.gold),
            **q.metadata,
        }
        lines.append(_dumps(rec, f"question {q.id!r}") + "\n")
    return "".join(lines).encode("utf-8")


def _write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write every file to a temporary name first, then rename them all into place."""
    temps: dict[str, Path] = {}
    try:
        for fname, data in files.items():
            tmp = folder / f".{fname}.{secrets.token_hex(6)}.tmp"
            with tmp.open("xb") as f:  # unlike mkstemp, keeps the umask's permissions
                temps[fname] = tmp
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        # Questions first, the corpus last: a folder is only complete once it has both.
        for fname in sorted(files, key=lambda n: n == "corpus.jsonl"):
            os.replace(temps.pop(fname), folder / fname)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)


def write_unified(
    dataset: Dataset,
    folder: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    questions_file: str = "questions.jsonl",
) -> None:
    """Write ``dataset`` as a unified folder: ``corpus.jsonl`` and ``questions.jsonl``.

    A non-empty ``folder`` is refused unless ``overwrite``. With another ``questions_file``
    (``questions_{split}.jsonl``) only that file is written, next to a ``corpus.jsonl``
    that must already hold exactly this corpus. Files are written to temporary names
    and renamed into place. Overwriting with a different corpus deletes the folder's
    ``questions_*.jsonl`` (they point into the old one). ``Dataset.skipped`` is not written.
    """
    out = Path(folder).expanduser()
    if questions_file != "questions.jsonl":
        split = questions_file.removeprefix("questions_").removesuffix(".jsonl")
        if (
            not questions_file.startswith("questions_")
            or not questions_file.endswith(".jsonl")
            or unified_questions_file(split) != questions_file
        ):
            raise CorpusError(
                f"questions_file must be 'questions.jsonl' or 'questions_{{split}}.jsonl' "
                f"(split not 'test'), got {questions_file!r}"
            )
    corpus_data = _corpus_bytes(dataset.corpus)
    questions_data = _questions_bytes(dataset.questions, dataset.corpus)
    if out.exists() and not out.is_dir():
        raise CorpusError("not a folder", out)

    if questions_file == "questions.jsonl":
        if out.is_dir() and any(out.iterdir()) and not overwrite:
            raise CorpusError(
                "folder is not empty (overwrite=True / --overwrite replaces its dataset)", out
            )
        out.mkdir(parents=True, exist_ok=True)
        corpus_path = out / "corpus.jsonl"
        same_corpus = corpus_path.is_file() and corpus_path.read_bytes() == corpus_data
        _write_files(out, {"questions.jsonl": questions_data, "corpus.jsonl": corpus_data})
        if not same_corpus:  # other splits' questions point into the old corpus
            for stale in out.glob("questions_*.jsonl"):
                stale.unlink()
        return

    corpus_path = out / "corpus.jsonl"
    if not corpus_path.is_file():
        raise CorpusError(f"no such file (write the corpus before {questions_file})", corpus_path)
    if corpus_path.read_bytes() != corpus_data:
        raise CorpusError(f"holds a different corpus than the one {questions_file} needs", out)
    if (out / questions_file).exists() and not overwrite:
        raise CorpusError(
            "already exists (overwrite=True / --overwrite replaces it)", out / questions_file
        )
    _write_files(out, {questions_file: questions_data})
