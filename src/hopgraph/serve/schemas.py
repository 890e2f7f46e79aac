"""Request and response bodies (pydantic); they are also the OpenAPI schema at /openapi.json.

Requests are strict: unknown fields are refused, numbers are not read from strings and
booleans are not numbers; an integer field takes an integral number written as a float (``3.0``,
an integer in JSON Schema 2020-12) and refuses any other (``3.5``). The schema states what the
endpoints enforce: non-blank strings (``minLength`` 1, ``pattern`` ``\\S``), bounds. Limits
that the server settings choose (query length, k, batch size, passages per update) are checked
by the endpoints, listed by ``GET /info`` and written into the OpenAPI document
(:mod:`hopgraph.serve.openapi`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
)

from hopgraph.retrieve.crowding import DEFAULT_MAX_PER_DOC

ParamValue = Annotated[
    str | int | float | bool | None,
    Field(description="a method parameter, a JSON value of its type (Params_METHOD)"),
]


FILTER_REF = "#/components/schemas/MetadataFilter"  # added by hopgraph.serve.openapi
NOT_BLANK = r"\S"  # a character that is not whitespace, somewhere (JSON Schema: unanchored)
_NOT_BLANK = re.compile(NOT_BLANK)


def _not_blank(value: str) -> str:
    if not _NOT_BLANK.search(value):
        raise ValueError("must not be empty or whitespace only")
    return value


def _integral(value: Any) -> Any:
    """An integral float (``3.0``) as the integer it is; anything else unchanged, for the
    strict integer check to take or refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


NonBlank = Annotated[
    str,
    AfterValidator(_not_blank),
    Field(json_schema_extra={"minLength": 1, "pattern": NOT_BLANK}),
]
# (bounds go before the validator: after it, pydantic writes them as "ge" in the schema)
Count = Annotated[int, Field(ge=0), BeforeValidator(_integral)]
Positive = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
PassageId = Annotated[
    NonBlank,
    StringConstraints(max_length=1000),
    Field(description="a passage id (not blank, at most 1000 characters)"),
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchOptions(Strict):
    method: str = Field(
        "default",
        description="retrieval method (GET /info lists them); omitted or 'default': the "
        "recommended method (default_method in GET /info)",
    )
    k: Positive = Field(10, description="passages to return (at most the server's max_k)")
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description='method parameters, e.g. {"k_rrf": 30}'
    )
    filter: Annotated[
        dict[str, Any] | None,
        WithJsonSchema({"anyOf": [{"$ref": FILTER_REF}, {"type": "null"}]}),
    ] = Field(
        None,
        description='only passages whose metadata match, e.g. {"year": {"$gte": 2020}, '
        '"lang": {"$in": ["en", "de"]}}: operators $eq $ne $in $nin $gt $gte $lt $lte on '
        "metadata fields (dotted names reach nested ones), $and $or $not at the top",
    )
    max_per_doc: Count | None = Field(
        None,
        description="at most this many hits from one document (passages with the same "
        "metadata doc_id; a passage without one is its own document); 0: no limit; omitted or "
        f"null: {DEFAULT_MAX_PER_DOC} on an index of documents cut into chunks, no limit on "
        "any other. The search still answers k hits when the index has enough documents; "
        "`info` says the limit and how many hits it skipped (crowded_out)",
    )
    explain: bool = Field(True, description="include each hit's explanation (why)")
    passages: bool = Field(False, description="include each hit's title, text and metadata")


class SearchRequest(SearchOptions):
    query: NonBlank = Field(
        description="the question (not blank; at most max_query_chars characters)"
    )


class BatchSearchRequest(SearchOptions):
    queries: list[NonBlank] = Field(
        min_length=1, description="the questions (at most max_batch; each like `query`)"
    )


class Hit(BaseModel):
    id: str
    score: float | None = Field(description="the method's score (null if not finite)")
    why: dict[str, Any] | None = Field(None, description="how the score came about (explain)")
    title: str | None = Field(None, description="with passages=true")
    text: str | None = Field(None, description="with passages=true")
    metadata: dict[str, Any] | None = Field(None, description="with passages=true")


SearchInfo = Annotated[
    dict[str, Any],
    Field(
        description="what the search did besides ranking: filter_matches (passages the filter "
        "keeps), filled (hits continuing a short ranking), max_per_doc, max_per_doc_from and "
        "crowded_out (hits skipped because their document already had max_per_doc), and the "
        "method's own notes"
    ),
]


class QueryResult(BaseModel):
    query: str
    hits: list[Hit]
    info: SearchInfo = Field(default_factory=dict)


class SearchResponse(BaseModel):
    query: str
    method: str
    params: dict[str, Any] = Field(description="every parameter of the method, as used")
    k: int
    hits: list[Hit]
    info: SearchInfo = Field(default_factory=dict)
    generation: int = Field(description="the index generation that answered")
    latency_ms: float = Field(description="time spent searching, in the server")


class BatchSearchResponse(BaseModel):
    method: str
    params: dict[str, Any]
    k: int
    results: list[QueryResult] = Field(description="one per query, in order")
    generation: int
    latency_ms: float


class PassageIn(Strict):
    id: PassageId
    title: str = ""
    text: NonBlank = Field(description="the passage text (not blank)")
    metadata: dict[str, Any] = Field(default_factory=dict)


class AddRequest(Strict):
    passages: list[PassageIn] = Field(min_length=1, description="at most max_add passages")


class DeleteRequest(Strict):
    ids: list[PassageId] = Field(min_length=1, description="at most max_delete ids")


class Passage(BaseModel):
    id: str
    title: str
    text: str
    metadata: dict[str, Any]


class UpdateResponse(BaseModel):
    added: int
    deleted: int
    passages: int = Field(description="passages in the index after the update")
    generation: int = Field(description="the new index generation")
    seconds: float = Field(description="time to update, save and reload the index")


class Health(BaseModel):
    status: str
    generation: int
    passages: int


class MethodParam(BaseModel):
    name: str
    type: str
    default: Any
    help: str
    server_only: bool = Field(description="set only by the operator (hopgraph serve --set)")
    max: float | None = Field(
        default=None, description="the largest absolute value a request may give (numbers only)"
    )


class MethodInfo(BaseModel):
    name: str
    default: bool = Field(description="the method used when a request names none")
    summary: str
    parts: list[str] = Field(description="index parts it needs (with its default parameters)")
    available: bool = Field(description="the served index has every part it needs")
    params: list[MethodParam]
    server_params: dict[str, Any] = Field(description="parameters fixed by the server")


class BuildStage(BaseModel):
    stage: Literal["searchable", "complete"] = Field(
        description="searchable: a staged build saved the index without its passage vectors, "
        "which it is encoding (searches without a method use the default without them; writes "
        "answer 409 index_building); complete: every part is in"
    )
    pending_parts: list[str] = Field(description="the parts the build has still to add")
    vectors_done: int = Field(description="passage vectors encoded so far")
    vectors_total: int = Field(description="passage vectors of the complete index")
    building: bool = Field(
        description="a build's work folder (INDEX_DIR.partial) exists: the build runs, or "
        "stopped and continues with `hopgraph index ... --resume`"
    )


class Info(BaseModel):
    index: dict[str, Any] = Field(description="hopgraph info of the served index")
    generation: int
    build: BuildStage = Field(description="the served generation's build stage")
    default_method: str = Field(
        description="the recommended default method: a search without `method` (or with "
        "'default') uses it when the index has its parts"
    )
    default_available: bool = Field(
        description="the served index has every part the default method needs (else a search "
        "without `method` falls back, see default_used)"
    )
    default_used: str = Field(
        "",
        description="the method a search without `method` uses now: default_method, or on an "
        "index without its parts the first of rrf, bm25, dense the index has the parts for",
    )
    default_note: str | None = Field(
        None,
        description="when default_used is a fallback: the parts the default method lacks and "
        "the `hopgraph add-parts` command that adds them",
    )
    methods: list[MethodInfo]
    limits: dict[str, float]
    role: str = Field(description="writer (this server adds and deletes) or reader")
    writer: str = Field(description="who writes the index folder: this server, or which process")
    auth: dict[str, bool] = Field(
        description="which requests need `Authorization: Bearer <token>`: writes, reads"
    )
    process: dict[str, Any] = Field(
        default_factory=dict,
        description="what `hopgraph serve` set for its process: cores, encoder sessions, ONNX "
        "and BLAS threads, malloc arenas, whether ONNX Runtime keeps its memory arena, whether "
        "malloc_trim runs "
        "after each published generation (those only when `hopgraph serve` made the app), "
        "and writer_nice: the CPU niceness of the threads that update, compact and replay",
    )


class ErrorInfo(BaseModel):
    type: str = Field(description="machine-readable kind, e.g. validation_error, unknown_method")
    message: str
    details: list[Any] = Field(description="per-field problems (location, message, rule)")


class ErrorResponse(BaseModel):
    error: ErrorInfo
