"""The search page (``GET /``): server-side HTML, no script, nothing loaded from elsewhere.

Pure functions: a search answer (the dict ``POST /search`` answers, with passages) becomes one
HTML page holding a search box, then per hit its title, text (its line breaks kept, so code
from a document keeps its lines), metadata, the explanation in words and a small inline SVG
picture of how it was reached (question → the entities it names → the first-hop passage →
any later passage on the way → this page), drawn from the explanation's fields. Every string
that comes from the request or the index goes through :func:`html.escape`; the answer's
Content-Security-Policy forbids scripts and every load from another origin.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastapi.responses import HTMLResponse

from hopgraph.serve.problems import ApiError
from hopgraph.text.display import clip

MAX_TEXT_CHARS = 1200
MAX_META_KEYS = 12
MAX_META_CHARS = 160
MAX_NODES = 3  # entity nodes drawn per hit; more are counted ("+2 more")

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

# the sentences of hopgraph.retrieve.explain._path; for N hops (N >= 2) ``via`` holds the N - 1
# passages on the way, "*A* → *B*" (split by route_of)
_HOPS = r"^(?P<hops>[2-9]|[1-9]\d+)-hop: question → "
_PATHS = (
    (re.compile(_HOPS + r"\*(?P<via>.*)\* → this page"), "bridge"),
    (re.compile(_HOPS + r"\*(?P<via>.*)\* ← this page mentions it"), "backlink"),
    (re.compile(r"^1-hop: the question names \*(?P<named>.*)\*$"), "named"),
    (re.compile(r"^1-hop: "), "direct"),
)


@dataclass(frozen=True)
class Form:
    """What the search box shows: the request as given, and the choices."""

    query: str = ""
    k: str = "10"
    method: str = "default"
    methods: Sequence[str] = ()
    default_method: str = "multihop"


@dataclass(frozen=True)
class Route:
    """How a hit was reached, from its explanation: ``kind`` is bridge (the passage ``via``
    names this page's entity), backlink (this page mentions ``via``), named (the question
    names this page), direct (found by the question itself) or none; ``nodes`` are the query
    entities (or matched words) between the question and the passages; ``chain`` the titles of
    the passages on the way before ``via``, first hop first (empty for 2 hops, and without
    ``via``): a 3-hop hit is question → chain[0] → via → this page."""

    kind: str
    via: str | None
    nodes: tuple[str, ...]
    node_kind: str  # "entity" or "word"
    label: str  # what carried the last step, when nothing else says
    chain: tuple[str, ...] = ()


def parse_k(text: str) -> int:
    """The ``k`` query parameter as a number, or a 422 saying what it must be."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise ApiError(
            422,
            "validation_error",
            f"k must be a whole number of 1 or more (got {clip(text, 40)!r})",
        )
    return int(value)


def page_response(body: str, status: int = 200) -> HTMLResponse:
    """The page as an answer, with headers that forbid scripts and outside loads."""
    return HTMLResponse(body, status_code=status, headers=HEADERS)


def esc(value: Any) -> str:
    """Any value as escaped HTML text (quotes included: safe inside attributes too)."""
    return html.escape(str(value), quote=True)


def render_page(
    form: Form,
    result: dict[str, Any] | None = None,
    error: ApiError | None = None,
    passages: int | None = None,
) -> str:
    """The whole page: the search box, then ``error`` or ``result``'s hits."""
    title = f"{form.query} · hopgraph" if form.query.strip() else "hopgraph search"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(clip(title, 120))}</title>",
        f"<style>{CSS}</style></head><body><main>",
        _header(passages),
        _search_box(form),
    ]
    if error is not None:
        parts.append(render_error(error))
    elif result is not None:
        parts.append(render_result(result))
    else:
        parts.append(
            '<p class="hint">Type a question. Each hit says in words how it was reached and '
            "draws it: question → the entities it names → the first-hop passage → the hit "
            "(with every passage on the way when there are more).</p>"
        )
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _header(passages: int | None) -> str:
    size = "" if passages is None else f'<span class="muted">{passages:,} passages</span>'
    return f'<header><h1><a href="./">hopgraph</a></h1>{size}</header>'


def _search_box(form: Form) -> str:
    choices = list(dict.fromkeys(["default", *form.methods, form.method]))
    options = "".join(
        f'<option value="{esc(m)}"{" selected" if m == form.method else ""}>'
        f"{esc(f'default ({form.default_method})' if m == 'default' else m)}</option>"
        for m in choices
    )
    return (
        '<form class="search" method="get" action="./" role="search">'
        f'<input type="search" name="q" dir="auto" value="{esc(form.query)}" '
        'placeholder="Ask a question" aria-label="question" autofocus>'
        f'<label>method <select name="method">{options}</select></label>'
        f'<label>k <input class="k" type="number" name="k" min="1" value="{esc(form.k)}">'
        "</label>"
        '<button type="submit">Search</button></form>'
    )


def render_error(error: ApiError) -> str:
    """An error answer as a readable message."""
    what = error.type.replace("_", " ").capitalize()
    return (
        f'<div class="error" role="alert"><strong>{esc(what)}</strong> '
        f'<span class="muted">({error.status_code} {esc(error.type)})</span>'
        f"<p>{esc(error.message)}</p></div>"
    )


def render_result(result: dict[str, Any]) -> str:
    """The line saying what answered, then one block per hit."""
    hits = result.get("hits") or []
    n = len(hits)
    stats = (
        f'<p class="stats">{n} hit{"" if n == 1 else "s"} for '
        f"<q>{esc(clip(str(result.get('query', '')), 200))}</q> · "
        f"method <code>{esc(result.get('method', ''))}</code> · "
        f"{_number(result.get('latency_ms'))} ms · generation {esc(result.get('generation'))}</p>"
    )
    if not hits:
        return stats + '<p class="hint">No passage matched.</p>'
    body = "".join(render_hit(i, h) for i, h in enumerate(hits, 1))
    routes = [route_of(h["why"]) for h in hits if isinstance(h.get("why"), dict)]
    return f'{stats}{crowding_note(result)}{legend(routes)}<ol class="hits">{body}</ol>'


def crowding_note(result: dict[str, Any]) -> str:
    """A line saying how many hits the per-document limit skipped (max_per_doc), if any."""
    info = result.get("info") if isinstance(result.get("info"), dict) else {}
    skipped, cap = info.get("crowded_out"), info.get("max_per_doc")
    if not isinstance(skipped, int) or skipped < 1:
        return ""
    return (
        f'<p class="hint">{skipped} more passage{"" if skipped == 1 else "s"} of documents '
        f"already shown skipped: at most {esc(cap)} per document.</p>"
    )


def legend(routes: Sequence[Route]) -> str:
    """What the pictures' boxes are, for the kinds of box they hold."""
    if not routes:
        return ""
    keys = ['<span class="key question">question</span>']
    if any(r.nodes and r.node_kind == "entity" for r in routes):
        keys.append('<span class="key entity">entity it names</span>')
    if any(r.nodes and r.node_kind == "word" for r in routes):
        keys.append('<span class="key word">word it matches</span>')
    if any(r.via for r in routes):
        keys.append('<span class="key passage">first-hop passage</span>')
    if any(r.via and r.chain for r in routes):  # 3 hops or more: later passages too
        keys.append('<span class="key passage later">passage on the way</span>')
    keys.append('<span class="key hit">hit</span>')
    return f'<p class="legend">pictures: {" → ".join(keys)}</p>'


def render_hit(rank: int, hit: dict[str, Any]) -> str:
    """One hit: title, score and id, text, metadata, the explanation and its picture."""
    title = str(hit.get("title") or hit.get("id", ""))
    text = str(hit.get("text") or "")
    why = hit.get("why") if isinstance(hit.get("why"), dict) else None
    score = hit.get("score")
    parts = [
        f'<li class="hit"><div class="head"><span class="rank">{rank}</span>'
        f'<h2 class="title" dir="auto">{esc(title)}</h2>'
        f'<span class="muted">score {_number(score)} · id {esc(clip(str(hit.get("id")), 80))}'
        "</span></div>",
        f'<p class="text" dir="auto">{esc(clip(text, MAX_TEXT_CHARS))}</p>' if text else "",
        render_metadata(hit.get("metadata") or {}),
    ]
    if why is not None:
        parts.append(f'<div class="why">{render_explanation(why)}</div>')
        parts.append(f'<figure class="route">{route_svg(route_of(why), title, rank)}</figure>')
    parts.append("</li>")
    return "".join(parts)


def render_metadata(metadata: dict[str, Any]) -> str:
    """A passage's metadata as a small key/value list (values cut short)."""
    if not metadata:
        return ""
    items = list(metadata.items())
    rows = "".join(
        f"<div><dt>{esc(clip(str(k), 40))}</dt>"
        f"<dd>{esc(clip(_plain(v), MAX_META_CHARS))}</dd></div>"
        for k, v in items[:MAX_META_KEYS]
    )
    more = len(items) - MAX_META_KEYS
    if more > 0:
        rows += f"<div><dt>…</dt><dd>{more} more</dd></div>"
    return f'<dl class="meta">{rows}</dl>'


def render_explanation(why: dict[str, Any]) -> str:
    """The explanation in words: the default method's sentence (with *titles* emphasised),
    the rewrite that matched, and the signals; other methods' fields as words."""
    if isinstance(why.get("summary"), str):
        head, _, lifted = why["summary"].partition(". lifted by: ")
        out = f'<p class="summary">{_emphasis(head)}</p>'
        if lifted:
            out += f'<p class="lifted">lifted by: {_emphasis(lifted)}</p>'
        hop = why.get("hop")
        if isinstance(hop, dict) and hop.get("through"):
            out += (
                '<p class="muted">best match of the question rewritten through '
                f"<em>{esc(hop['through'])}</em> (cosine {_number(hop.get('cosine'))})</p>"
            )
        signals = why.get("signals")
        if isinstance(signals, dict) and signals:
            rows = "".join(
                f"<div><dt>{esc(k)}</dt><dd>{_number(v)}</dd></div>" for k, v in signals.items()
            )
            out += f'<details><summary>signals</summary><dl class="meta">{rows}</dl></details>'
        return out
    words = [f"{esc(k.replace('_', ' '))} {esc(_words(v))}" for k, v in why.items()]
    return f'<p class="summary">{" · ".join(words)}</p>'


def route_of(why: dict[str, Any]) -> Route:
    """How a hit was reached, from its explanation's fields (see :class:`Route`)."""
    path = why.get("path") if isinstance(why.get("path"), str) else ""
    kind, via = "none", None
    chain: tuple[str, ...] = ()
    route = why.get("route")
    if isinstance(route, dict) and isinstance(route.get("kind"), str):  # the default's data
        kind = route["kind"]
        via = route["via"] if isinstance(route.get("via"), str) else None
        chain = _chain_of(route.get("chain"), via)
    else:  # an explanation without it (older servers' JSON): its sentence
        for pattern, name in _PATHS:
            m = pattern.match(path)
            if m:
                kind, via = name, m.groupdict().get("via")
                if via is not None:  # "A* → *B" for 3 hops; a 2-hop title is kept whole
                    *before, via = via.split("* → *", int(m["hops"]) - 2)
                    chain = tuple(before)
                break
    if isinstance(why.get("query_entities"), list):
        nodes, node_kind = [str(e) for e in why["query_entities"]], "entity"
    elif isinstance(why.get("via_entities"), list):  # the graph methods
        nodes, node_kind = [str(e) for e in why["via_entities"]], "entity"
    elif isinstance(why.get("matched_terms"), list):  # bm25
        nodes, node_kind = [str(e) for e in why["matched_terms"]], "word"
    else:
        nodes, node_kind = [], "entity"
    label = ""
    if kind == "none" and not nodes:
        label = _main_signal(why)
    return Route(kind, via, tuple(nodes), node_kind, label, chain)


def _chain_of(chain: Any, via: str | None) -> tuple[str, ...]:
    """The titles before ``via`` in a route's ``chain`` (``[{"title", "id"}, ...]``, ending
    with ``via``); none where it is missing (older servers) or not of that shape."""
    if via is None or not isinstance(chain, list):
        return ()
    titles = [c.get("title") if isinstance(c, dict) else None for c in chain]
    if not titles or titles[-1] != via or not all(isinstance(t, str) for t in titles):
        return ()
    return tuple(titles[:-1])


# -- the picture -------------------------------------------------------------------------------
BOX_W, BOX_H, ROW_H, PAD, GAP = 140, 26, 34, 8, 60


def route_svg(route: Route, title: str, uid: int) -> str:
    """An inline SVG, one column each: question → entities (or words) → the passages on the
    way (``chain``, then ``via``; "leads to" between them) → this hit. 1 and 2 hops take four
    columns; each passage before ``via`` adds one, and the picture grows wider."""
    passages = [*route.chain, route.via] if route.via else []
    cols = [PAD + i * (BOX_W + GAP) for i in range(3 + max(1, len(passages)))]
    width = cols[-1] + BOX_W + PAD
    shown = list(route.nodes[:MAX_NODES])
    more = len(route.nodes) - len(shown)
    rows = max(1, len(shown) + (1 if more > 0 else 0))
    height = rows * ROW_H + 2 * PAD
    mid = height / 2
    marker = f"arrow{uid}"
    el: list[str] = []
    edges: list[str] = []

    def edge(x1: float, y1: float, x2: float, y2: float, label: str = "", dash: bool = False):
        style = ' stroke-dasharray="4 3"' if dash else ""
        edges.append(
            f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" class="edge"'
            f'{style} marker-end="url(#{marker})"/>'
        )
        if label:
            edges.append(
                f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 5:.0f}" class="elabel" '
                f'text-anchor="middle">{esc(label)}</text>'
            )

    el.append(_node(cols[0], mid, "question", "question"))
    hit_col = cols[-1]
    # the question's entities (or words); without them the question reaches the next box
    first_x = cols[2] if passages else hit_col
    ys = [PAD + ROW_H * i + ROW_H / 2 for i in range(rows)]
    for y, name in zip(ys, shown, strict=False):
        shown_name = f"“{name}”" if route.node_kind == "word" else name
        el.append(_node(cols[1], y, shown_name, route.node_kind))
        edge(cols[0] + BOX_W, mid, cols[1], y)
        edge(cols[1] + BOX_W, y, first_x, mid)
    if more > 0:
        el.append(
            f'<text x="{cols[1] + BOX_W / 2:.0f}" y="{ys[-1] + 4:.0f}" class="elabel" '
            f'text-anchor="middle">+{more} more</text>'
        )
    if not shown:
        words = {"direct": "words, meaning", "named": "names it"}.get(route.kind, route.label)
        words = "first hop" if route.via else words
        edge(cols[0] + BOX_W, mid, first_x, mid, words)
    for i, name in enumerate(passages):  # the first hop's passage, then any later ones
        x = cols[2 + i]
        el.append(_node(x, mid, name, "passage" if i == 0 else "passage later"))
        if i + 1 < len(passages):
            edge(x + BOX_W, mid, cols[3 + i], mid, "leads to")
        elif route.kind == "backlink":  # this page mentions the last passage's subject
            edge(hit_col, mid, x + BOX_W, mid, "mentions")
        else:
            edge(x + BOX_W, mid, hit_col, mid, "names")
    el.append(_node(hit_col, mid, title, "hit"))
    desc = _describe(route, title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height:.0f}" '
        f'width="{width}" height="{height:.0f}" role="img" aria-label="{esc(desc)}">'
        f"<title>{esc(desc)}</title>"
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
        'class="arrowhead"/></marker></defs>' + "".join(edges) + "".join(el) + "</svg>"
    )


def _node(x: float, y: float, label: str, kind: str) -> str:
    rx = BOX_H / 2 if kind in ("entity", "word") else 5
    text = clip(label, 20 if kind == "hit" else 22)  # bold text is wider
    return (
        f'<g class="node {kind}"><title>{esc(label)}</title>'
        f'<rect x="{x:.0f}" y="{y - BOX_H / 2:.0f}" width="{BOX_W}" height="{BOX_H}" '
        f'rx="{rx:.0f}"/><text x="{x + BOX_W / 2:.0f}" y="{y + 4:.0f}" '
        f'text-anchor="middle">{esc(text)}</text></g>'
    )


def _describe(route: Route, title: str) -> str:
    """The picture in words (its accessible name)."""
    steps = ["question"]
    if route.nodes:
        steps.append(", ".join(route.nodes[:MAX_NODES]))
    if route.via:
        steps.extend([*route.chain, route.via])
    steps.append(title)
    return " → ".join(steps)


# -- small helpers -----------------------------------------------------------------------------
def _emphasis(text: str) -> str:
    """Escaped ``text`` with ``*Title*`` as <em>Title</em>."""
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", esc(text))


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else esc(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    return esc(f"{value:.4g}" if isinstance(value, float) else value)


def _words(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(clip(str(v), 60) for v in value[:12]) + (" …" if len(value) > 12 else "")
    return clip(_plain(value), 200)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _main_signal(why: dict[str, Any]) -> str:
    for key, value in why.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            return f"{key.replace('_', ' ')} {_words(float(value))}"
    return ""


CSS = """
:root{--ink:#1d2430;--muted:#5d6775;--line:#d9dee6;--accent:#2457c5;--bg:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:880px;margin:0 auto;padding:20px 18px 48px}
header{display:flex;align-items:baseline;gap:12px}
h1{font-size:22px;margin:0 0 12px}h1 a{color:var(--ink);text-decoration:none}
.muted{color:var(--muted);font-size:13px}
form.search{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:14px}
form.search input[type=search]{flex:1 1 320px;font:inherit;padding:8px 10px;
border:1px solid #b8c0cc;border-radius:6px;background:#fff}
form.search label{font-size:13px;color:var(--muted)}
form.search select,form.search .k{font:inherit;font-size:13px;padding:6px;border:1px solid #b8c0cc;
border-radius:6px;background:#fff}
form.search .k{width:64px}
button{font:inherit;padding:8px 16px;border:0;border-radius:6px;background:var(--accent);
color:#fff;cursor:pointer}
.stats{color:var(--muted);font-size:13px;margin:4px 0 10px}
.hint{color:var(--muted)}
.error{background:#fdeeee;border:1px solid #e6b3b3;border-radius:8px;padding:10px 14px;
color:#7a1f1f}
.error p{margin:4px 0 0;color:var(--ink)}
ol.hits{list-style:none;margin:0;padding:0}
.hit{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 16px;
margin-bottom:12px}
.head{display:flex;align-items:baseline;gap:10px;flex-wrap:wrap}
.rank{color:var(--muted);font-weight:600;min-width:1.2em}
h2.title{font-size:17px;margin:0}
.text{margin:6px 0;white-space:pre-wrap;overflow-wrap:anywhere}
dl.meta{display:flex;flex-wrap:wrap;gap:4px 8px;margin:6px 0;font-size:12px}
dl.meta div{background:#eef1f5;border-radius:4px;padding:1px 6px}
dl.meta dt{display:inline;color:var(--muted)}dl.meta dt::after{content:": "}
dl.meta dd{display:inline;margin:0}
.why{border-left:3px solid var(--accent);padding-left:10px;margin:8px 0}
.why p{margin:2px 0}.summary em{font-style:normal;font-weight:600}
details summary{cursor:pointer;color:var(--muted);font-size:13px}
figure.route{margin:6px 0 0;overflow-x:auto}
figure.route svg{max-width:100%;height:auto;font:11px system-ui,Arial,sans-serif}
.node rect{stroke-width:1.2}
.node.question rect{fill:#1d2430;stroke:#1d2430}.node.question text{fill:#fff}
.node.entity rect{fill:#fff4d6;stroke:#d9a520}.node.word rect{fill:#f0f0f0;stroke:#999}
.node.passage rect{fill:#e3ecfb;stroke:#2457c5}
.node.passage.later rect{fill:#efe8fb;stroke:#6b46c1}
.node.hit rect{fill:#e1f4e6;stroke:#1f8a4c;stroke-width:2}.node.hit text{font-weight:600}
.node text{fill:var(--ink)}
.edge{stroke:#8a94a3;stroke-width:1.3}.arrowhead{fill:#8a94a3}
.elabel{fill:var(--muted);font-size:10px}
.lifted{color:var(--muted);font-size:13px}
.legend{font-size:12px;color:var(--muted);margin:0 0 10px}
.key{display:inline-block;padding:0 7px;border-radius:4px;border:1px solid}
.key.question{background:#1d2430;color:#fff;border-color:#1d2430}
.key.entity{background:#fff4d6;border-color:#d9a520;border-radius:9px;color:var(--ink)}
.key.word{background:#f0f0f0;border-color:#999;border-radius:9px;color:var(--ink)}
.key.passage{background:#e3ecfb;border-color:#2457c5;color:var(--ink)}
.key.passage.later{background:#efe8fb;border-color:#6b46c1}
.key.hit{background:#e1f4e6;border-color:#1f8a4c;color:var(--ink);font-weight:600}
"""
