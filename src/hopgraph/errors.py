"""Exceptions with messages meant for the user: each names what was wrong and where."""

from __future__ import annotations


class HopgraphError(Exception):
    """Base class of every error hopgraph raises on purpose."""


class CorpusError(HopgraphError):
    """Bad input data. Names the file and, where there is one, the line."""

    def __init__(self, message: str, path: object | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class IndexError_(HopgraphError):
    """A missing, corrupt, partial or incompatible index."""


class OutputExistsError(HopgraphError):
    """A build's output folder already holds an index, or other files: nothing was changed
    (``hopgraph index --force``, ``build_index(..., overwrite=True)`` replaces it)."""


class PartialBuildError(HopgraphError):
    """A partial build is in the way, or does not match the build asked for."""


class StorageError(HopgraphError):
    """An index could not be written (no space left, quota, a read-only file system); the
    folder still holds the generation it had."""


class ConfigError(HopgraphError):
    """An unknown method, parameter or value."""


class UpdateError(HopgraphError):
    """An add or delete that cannot be applied; the index is left as it was."""


class DuplicateIdError(UpdateError):
    """Passages added with an id the index (or the same request) already has."""

    def __init__(self, ids: list[str]):
        shown = ", ".join(repr(i) for i in ids[:5]) + (" ..." if len(ids) > 5 else "")
        super().__init__(f"{len(ids)} passage id(s) already in the index or given twice: {shown}")
        self.ids = ids


class UnknownIdError(UpdateError):
    """Passage ids the index does not have."""

    def __init__(self, ids: list[str]):
        shown = ", ".join(repr(i) for i in ids[:5]) + (" ..." if len(ids) > 5 else "")
        super().__init__(f"{len(ids)} passage id(s) not in the index: {shown}")
        self.ids = ids


class NotUpdatableError(UpdateError):
    """A part that cannot be updated in place (an OpenIE triples file, an index written before
    live updates, a part without ``update``): rebuild the index instead."""


class NotWriterError(UpdateError):
    """This server reads the index; another process holds the writer role of its folder."""


class WriterBusyError(UpdateError):
    """Another process holds the index folder's writer lock (a server, or another update)."""


class BuildPendingError(UpdateError):
    """The index is in the searchable stage of a staged build (its passage vectors are still
    being encoded): writes wait for the build to commit the complete index."""
