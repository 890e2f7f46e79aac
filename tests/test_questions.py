"""The comparison-question rule that gates the hop encoder."""

import json
from pathlib import Path

import pytest

from hopgraph.text.questions import is_comparison


@pytest.mark.parametrize(
    "q",
    [
        "Who was born first, Annie Morton or Terry Richardson?",
        "Are Random House Tower and 888 7th Avenue both used for real estate?",
        "Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?",
        "Who was born first out of Marco De Luigi and Fabio Maistro?",
        "Were Scott Derrickson and Ed Wood of the same nationality?",
        "Did Franki Valli sing with Hellogoodbye or The Four Seasons?",
        "Is the building at 200 West Street taller than the one at 888 7th Avenue?",
    ],
)
def test_comparisons(q: str) -> None:
    assert is_comparison(q)


@pytest.mark.parametrize(
    "q",
    [
        "What government position was held by the woman who portrayed Corliss Archer?",
        "Who is the spouse of the performer of Green?",
        "When did the director of film Hypocrite (Film) die?",
        "In which county is the town where Orlando's father was born?",
        "What is the place of birth of the director of film Le Pont Du Nord?",
        "Orlando and the Furioso were painted by whom?",  # 'and' but not a yes/no question
    ],
)
def test_chains(q: str) -> None:
    assert not is_comparison(q)


def test_on_2wiki_types(data_dir: Path) -> None:
    """Against 2WikiMultiHopQA's own question types (skipped without ../shared/data)."""
    path = data_dir / "2wikimultihopqa" / "questions.jsonl"
    qs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cmp = [q for q in qs if q["type"] in ("comparison", "bridge_comparison")]
    chains = [q for q in qs if q["type"] not in ("comparison", "bridge_comparison")]
    assert sum(is_comparison(q["question"]) for q in cmp) / len(cmp) >= 0.97
    assert not any(is_comparison(q["question"]) for q in chains)
