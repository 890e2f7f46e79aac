"""Page titles without the site's name: the part most pages of a folder share.

Web pages title themselves ``"functools — Higher-order functions … — Python 3.11.2
documentation"`` or ``"Docs | Install"``: the site's name, repeated on every page, tells pages
apart no better than nothing and weighs on every title match. :func:`shared_affix` finds a
leading or trailing part (cut at a separator such as `` — ``, `` | ``, `` - ``) that more than
:data:`MIN_SHARE` of a folder's titles share; :func:`strip_affix` takes it off a title.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["MIN_PAGES", "MIN_SHARE", "shared_affix", "strip_affix"]

#: A part shared by more than this share of the titles is the site's, not the page's ...
MIN_SHARE = 0.5
#: ... in a folder of at least this many titled pages.
MIN_PAGES = 3

_SEPARATOR = re.compile(r"\s+(?:[—–|·•»:~]|-{1,2}|::)\s+")


def _parts(title: str) -> tuple[str | None, str | None]:
    """The leading part (up to its first separator, separator included) and the trailing one
    (from its last separator) of ``title``; None where it has no separator."""
    cuts = list(_SEPARATOR.finditer(title))
    if not cuts:
        return None, None
    return title[: cuts[0].end()], title[cuts[-1].start() :]


def shared_affix(titles: Sequence[str | None]) -> tuple[str | None, str | None]:
    """The ``(prefix, suffix)`` that more than :data:`MIN_SHARE` of ``titles`` share (None for
    either when no part is shared so widely, or when there are fewer than :data:`MIN_PAGES`
    titles)."""
    titled = [" ".join(t.split()) for t in titles if t and t.strip()]
    if len(titled) < MIN_PAGES:
        return None, None
    heads: Counter[str] = Counter()
    tails: Counter[str] = Counter()
    for title in titled:
        head, tail = _parts(title)
        if head is not None:
            heads[head] += 1
            tails[tail] += 1
    found = []
    for counts in (heads, tails):
        best = counts.most_common(1)
        found.append(best[0][0] if best and best[0][1] > MIN_SHARE * len(titled) else None)
    return found[0], found[1]


def strip_affix(title: str, prefix: str | None, suffix: str | None) -> str:
    """``title`` without ``prefix`` and ``suffix`` (as :func:`shared_affix` gives them); a title
    that is nothing but them stays as it is."""
    out = " ".join(title.split())
    if suffix and out.endswith(suffix) and len(out) > len(suffix):
        out = out[: -len(suffix)]
    if prefix and out.startswith(prefix) and len(out) > len(prefix):
        out = out[len(prefix) :]
    return out.strip() or title
