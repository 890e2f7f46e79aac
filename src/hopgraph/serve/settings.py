"""The server's limits and fixed method parameters (``hopgraph serve`` options)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hopgraph.errors import ConfigError
from hopgraph.filters import MAX_FILTER_TERMS, MAX_IN_VALUES
from hopgraph.priority import WRITER_NICE, check_nice

ROLES = ("auto", "writer", "reader")
MULTI_LIMITS = frozenset({"max_indexes", "max_create"})  # limits of named indexes (--indexes-dir)


@dataclass(frozen=True)
class Settings:
    """Limits of one server. Every request beyond a limit is refused with a 4xx answer."""

    max_query_chars: int = 2000  # characters per query (422 beyond)
    max_body_bytes: int = 10 * 1024 * 1024  # request body (413 beyond)
    max_k: int = 1000  # passages per ranking (422 beyond)
    max_batch: int = 64  # queries per /search/batch request (413 beyond)
    max_add: int = 1000  # passages per add request (413 beyond)
    max_delete: int = 10_000  # ids per delete request (413 beyond)
    max_cached_retrievers: int = 32  # (method, params) retrievers kept per index snapshot
    max_search_seconds: float = 30.0  # a search answers 503 past this (its work is abandoned)
    verify: bool = True  # check every file's checksum when the index is first loaded
    method_params: dict[str, dict[str, Any]] = field(default_factory=dict)  # fixed by the server
    # writer = take the folder's writer role (fail if another process has it); reader = never
    # write; auto = writer when the role is free, else reader
    role: str = "auto"
    reload_interval: float = 1.0  # seconds between checks for a generation committed elsewhere
    # commit every update as a delta and merge the deltas into a new base on a background
    # thread (when hopgraph.index.store.DeltaPolicy says so); False: the commit itself merges
    background_compaction: bool = True
    # CPU niceness (0-19) of the threads that write (updates, compaction) and of the thread
    # that replays generations committed elsewhere; searches keep theirs (hopgraph.priority)
    writer_nice: int = WRITER_NICE
    address: str = ""  # how clients reach this server (written in the writer role's file)
    # bearer token every write needs (and every read but /health with protect_reads); "" = none
    token: str = field(default="", repr=False)
    protect_reads: bool = False
    # named indexes (``--indexes-dir``): their folder ("" = none), how many, passages per create
    indexes_dir: str = ""
    max_indexes: int = 16  # named indexes served at once (POST /indexes answers 409 beyond)
    max_create: int = 10_000  # passages per POST /indexes (413 beyond)

    def __post_init__(self) -> None:
        for name in (
            "max_query_chars",
            "max_body_bytes",
            "max_k",
            "max_batch",
            "max_add",
            "max_delete",
            "max_cached_retrievers",
            "max_indexes",
            "max_create",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"server setting {name!r} must be a positive integer, got {value!r}"
                )

        t = self.max_search_seconds
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 86400:
            raise ConfigError(f"max_search_seconds must be in (0, 86400], got {t!r}")
        if self.protect_reads and not self.token:
            raise ConfigError("protect_reads needs a token (--token or HOPGRAPH_TOKEN)")
        if self.token and (len(self.token) < 16 or self.token != self.token.strip()):
            raise ConfigError(
                "the token must be at least 16 characters without surrounding spaces; make one "
                "with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        try:
            check_nice(self.writer_nice)
        except ValueError as exc:
            raise ConfigError(f"writer_nice: {exc}") from None
        if self.role not in ROLES:
            raise ConfigError(f"server role must be one of {list(ROLES)}, got {self.role!r}")
        if not 0 <= self.reload_interval <= 3600:
            raise ConfigError(
                f"reload_interval must be 0 (never) to 3600 seconds, got {self.reload_interval!r}"
            )

    def limits(self) -> dict[str, float]:
        """The request limits, as /info reports them (those of named indexes only when the
        server has an indexes folder)."""
        d = asdict(self)
        if not self.indexes_dir:
            d = {k: v for k, v in d.items() if k not in MULTI_LIMITS}
        out = {k: v for k, v in d.items() if k.startswith("max_")}
        # fixed by the filter language itself (hopgraph.filters), the same on every server
        out["max_filter_conditions"] = MAX_FILTER_TERMS
        out["max_filter_in_values"] = MAX_IN_VALUES
        return out
