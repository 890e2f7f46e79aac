"""What kind of question this is, from its words alone (no model).

A *comparison* compares or joins named things: "Who was born first, A or B?", "Are A and B
both ...?", "... from the same country?", "Who was born first out of A and B?". Its gold
passages are parallel hops, one from each thing named, not a chain where one passage leads to
the next; ``multihop``'s hop encoder, trained to follow chains, leaves such questions to the
default ranker. On 2WikiMultiHopQA's typed dev questions the rule finds 224 of the 228
comparison and bridge-comparison questions and none of the 261 compositional and inference
ones (the "out of" form was added after checking there; docs/methods.md).
"""

from __future__ import annotations

import re

COMPARISON = re.compile(
    r"\b(?:or|both|same|either|neither|than)\b"  # "A or B", "both", "the same ..."
    r"|\bout of\b.+\band\b"  # "... first out of A and B"
    r"|^\W*(?:are|were|is|was|do|does|did|have|has|had)\b.+\band\b",  # "Are A and B ...?"
    re.IGNORECASE,
)


def is_comparison(question: str) -> bool:
    """True when ``question`` compares or joins named things (:data:`COMPARISON`)."""
    return COMPARISON.search(question) is not None
