"""Serve an index: over HTTP (``hopgraph serve``) and to AI agents over the Model Context Protocol
(``hopgraph mcp``)."""

from __future__ import annotations

import copy

import click

from hopgraph.cli.common import ASSIGN_HELP, METHOD_HELP
from hopgraph.config import parse_assignments
from hopgraph.errors import ConfigError, HopgraphError


@click.command("serve")
@click.argument("index_dir", type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--max-query-chars", type=click.IntRange(min=1), default=2000, show_default=True,
    help="longest query (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-body-bytes", type=click.IntRange(min=1), default=10 * 1024 * 1024, show_default=True,
    help="largest request body (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-k", type=click.IntRange(min=1), default=1000, show_default=True,
    help="most passages per ranking (422 beyond)",
)  # fmt: skip
@click.option(
    "--max-batch", type=click.IntRange(min=1), default=64, show_default=True,
    help="most queries per /search/batch (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-add", type=click.IntRange(min=1), default=1000, show_default=True,
    help="most passages per add request (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-search-seconds", type=click.FloatRange(0, 86400, min_open=True), default=30.0,
    show_default=True, help="a search answers 503 past this many seconds",
)  # fmt: skip
@click.option(
    "--set", "sets", multiple=True,
    help=f"fixed method parameter method.param=value (the only way to set model=); {ASSIGN_HELP}",
)  # fmt: skip
@click.option("--no-verify", is_flag=True, help="skip the checksums when loading the index")
@click.option(
    "--role", type=click.Choice(["auto", "writer", "reader"]), default="auto", show_default=True,
    help="writer: take INDEX_DIR's writer role (fail if taken); reader: never write; "
    "auto: writer if the role is free",
)  # fmt: skip
@click.option(
    "--reload-interval", type=click.FloatRange(0, 3600), default=1.0, show_default=True,
    help="seconds between checks for a generation another process committed (0: never)",
)  # fmt: skip
@click.option(
    "--token", envvar="HOPGRAPH_TOKEN", default=None, show_envvar=True,
    help="bearer token every write needs (prefer the environment variable: a command line is "
    "visible to other users); required to listen beyond loopback unless --role reader",
)  # fmt: skip
@click.option(
    "--protect-reads", is_flag=True,
    help="also require the token for searches and passages (all but GET /health)",
)  # fmt: skip
@click.option(
    "--advertise", default=None,
    help="the URL clients reach this server at, shown to readers' clients as the writer's "
    "[default: http://HOST:PORT]",
)  # fmt: skip
@click.option(
    "--encoder-sessions", type=click.IntRange(min=1), default=None,
    help="query encodes run at once, each on cores/sessions ONNX threads [default: the cores]",
)  # fmt: skip
@click.option(
    "--indexes-dir", type=click.Path(file_okay=False), default=None,
    help="also serve the named indexes in DIR's subfolders under /indexes/NAME/..., and create "
    "and drop them over HTTP (POST /indexes, DELETE /indexes/NAME); created if missing",
)  # fmt: skip
@click.option(
    "--max-indexes", type=click.IntRange(min=1), default=16, show_default=True,
    help="most named indexes served (409 beyond)",
)  # fmt: skip
@click.option(
    "--max-create", type=click.IntRange(min=1), default=10_000, show_default=True,
    help="most passages per POST /indexes (413 beyond)",
)  # fmt: skip
@click.option(
    "--writer-nice", type=click.IntRange(0, 19), default=None,
    help="CPU niceness of the threads that apply updates, compact and replay generations "
    "committed elsewhere (0 keeps the priority); searches keep theirs [default: 19]",
)  # fmt: skip
@click.option(
    "--log-level", default="info", show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)  # fmt: skip
def serve_cmd(
    index_dir, host, port, max_query_chars, max_body_bytes, max_k, max_batch, max_add,
    max_search_seconds, sets, no_verify, role, reload_interval, token, protect_reads, advertise,
    encoder_sessions, writer_nice, log_level, indexes_dir, max_indexes, max_create,
) -> None:  # fmt: skip
    """Serve INDEX_DIR over HTTP: search, add and delete passages (JSON; API at /docs).

    Several servers may serve one folder (one machine, or shared storage): the first takes its
    writer role and takes additions and deletions, each saved atomically over INDEX_DIR as a
    new generation; the others only read, answer writes 409 naming the writer, and serve each
    new generation within --reload-interval seconds, without a restart (docs/serve.md: readers
    behind a load balancer). `hopgraph add`/`delete` on a served folder take turns with the
    writer, and every server picks their generation up the same way.

    With --indexes-dir DIR it also serves named indexes, DIR/NAME, each like INDEX_DIR, under
    /indexes/NAME/...; clients create them from passages and drop them (docs/serve.md: several
    indexes)."""
    try:
        import uvicorn

        from hopgraph.serve import Settings, create_app
    except ImportError as exc:
        raise HopgraphError(
            f"hopgraph serve needs the serve extra ({exc.name} is missing): "
            "pip install 'hopgraph[serve]'"
        ) from None

    from hopgraph.serve.auth import is_loopback

    if not token and role != "reader" and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who reaches the port could "
            "add and delete passages. Set HOPGRAPH_TOKEN (make one with: python -c 'import "
            "secrets; print(secrets.token_urlsafe(32))') and send `Authorization: Bearer "
            "<token>` with writes; or listen on 127.0.0.1; or serve read-only (--role reader)"
        )
    from hopgraph.serve.process import configure_serving

    configure_serving(encoder_sessions)  # before any model loads: threads, malloc arenas
    method_params: dict[str, dict[str, str]] = {}
    for key, value in parse_assignments(sets).items():
        method, dot, name = key.partition(".")
        if not dot or not name:
            raise ConfigError(f"server parameters are written method.param=value, got {key!r}")
        method_params.setdefault(method, {})[name] = value
    settings = Settings(
        max_query_chars=max_query_chars, max_body_bytes=max_body_bytes, max_k=max_k,
        max_batch=max_batch, max_add=max_add, max_search_seconds=max_search_seconds,
        verify=not no_verify, method_params=method_params,
        role=role, reload_interval=reload_interval, address=advertise or f"http://{host}:{port}",
        token=token or "", protect_reads=protect_reads,
        indexes_dir=indexes_dir or "", max_indexes=max_indexes, max_create=max_create,
        **({} if writer_nice is None else {"writer_nice": writer_nice}),
    )  # fmt: skip
    app = create_app(index_dir, settings)
    served = app.state.served.snapshot.index
    click.echo(
        f"serving {served.path} ({len(served)} passages; parts: {', '.join(served.parts)}) "
        f"on http://{host}:{port} (API docs at /docs)",
        err=True,
    )
    if app.state.served.role == "reader":
        click.echo(f"read-only: the writer is {app.state.served.writer()}", err=True)
    if app.state.indexes is not None:
        named = app.state.indexes.names()
        click.echo(
            f"named indexes in {app.state.indexes.root} (/indexes/NAME/...): "
            + (", ".join(named) if named else "none yet"),
            err=True,
        )
    from hopgraph.index.staged import describe_stage
    from hopgraph.retrieve.base import DEFAULT_METHOD, default_choice

    choice = default_choice(served)
    stage = app.state.served.build_stage()
    if stage["stage"] != "complete":  # a staged build adds the parts: no command to give
        how = "the default without passage vectors" if not choice.fell_back else repr(choice.method)
        click.echo(
            f"{describe_stage(stage, served.path)}; searches without a method use {how} and "
            "writes are refused until the build commits the complete index, which this server "
            "then loads",
            err=True,
        )
    elif choice.partial and choice.works:  # a fallback, or the default without its vectors
        click.echo(f"note: searches without a method: {choice.note}", err=True)
    elif choice.partial:
        click.echo(
            f"warning: searches without a method fail: the default, {DEFAULT_METHOD!r}, needs "
            f"the {', '.join(choice.missing)} part{'s' if len(choice.missing) > 1 else ''}; "
            f"add with `{choice.command}` and restart the server",
            err=True,
        )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)  # our log lines like uvicorn's
    log_config["loggers"]["hopgraph"] = {"handlers": ["default"], "level": log_level.upper()}
    uvicorn.run(app, host=host, port=port, log_level=log_level, log_config=log_config)


@click.command("mcp")
@click.argument("index_dir", type=click.Path())
@click.option("--method", default="default", show_default=True, help=METHOD_HELP)
@click.option("--set", "sets", multiple=True, help=f"parameter of --method; {ASSIGN_HELP}")
def mcp_cmd(index_dir, method, sets) -> None:
    """Serve INDEX_DIR to AI agents over the Model Context Protocol on stdin/stdout: the tools
    search (with --method unless a call names another) and get_passage; read-only
    (docs/mcp.md)."""
    try:
        from hopgraph.mcp_server import run_stdio
    except ImportError as exc:
        raise HopgraphError(
            f"hopgraph mcp needs the mcp extra, mcp 2.x ({exc.name} is missing): "
            "pip install 'hopgraph[mcp]'"
        ) from None
    run_stdio(index_dir, method, parse_assignments(sets))
