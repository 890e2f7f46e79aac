"""Synonyms found inside one passage (GRIEVER's same_as): one test per source."""

from __future__ import annotations

from hopgraph.text.synonyms import passage_aliases


def test_title_disambiguator():
    assert passage_aliases("Orange (fruit)", "The fruit is round.", []) == [
        ("Orange", "Orange (fruit)")
    ]


def test_title_comma_qualifier_used_alone_in_the_text():
    title = "Santa Monica, California"
    assert passage_aliases(title, "Santa Monica is a city.", []) == [("Santa Monica", title)]
    # the comma is part of the name: "Culture" is not an alias
    title = "Culture, Society and Masculinities"
    assert passage_aliases(title, f"{title} was a journal.", ["Culture"]) == []


def test_entities_equal_to_the_title():
    ents = ["Beatles", "the beatles", "THE BEATLES (band)", "Beatlemania", "The Beatles"]
    assert passage_aliases("The Beatles", "The Beatles were a band.", ents) == [
        ("Beatles", "The Beatles"),
        ("the beatles", "The Beatles"),
        ("THE BEATLES (band)", "The Beatles"),
    ]
    assert passage_aliases("Orange (fruit)", "An orange.", ["orange"]) == [
        ("Orange", "Orange (fruit)"),
        ("orange", "Orange (fruit)"),
    ]


def test_acronym_in_parentheses():
    text = "He played in the National Basketball Association (NBA) for the Boston Celtics."
    assert passage_aliases("Bill Russell", text, []) == [("NBA", "National Basketball Association")]
    # connectors are skipped, the title is the canonical name when it is the long form
    text = "The Institute of Mathematics and Informatics (IMI) is in Sofia."
    assert passage_aliases("Institute of Mathematics and Informatics", text, []) == [
        ("IMI", "Institute of Mathematics and Informatics")
    ]
    # letters that do not spell the words before: no alias
    assert passage_aliases("X", "He joined the Royal Navy (UK) in 1990.", []) == []


def test_acronym_entity_spelling_initials():
    ents = ["MIT", "Massachusetts Institute of Technology", "Boston"]
    assert passage_aliases("Noam Chomsky", "He taught at MIT.", ents) == [
        ("MIT", "Massachusetts Institute of Technology")
    ]
    assert passage_aliases("United States", "The U.S. economy.", ["U.S."]) == [
        ("U.S.", "United States")
    ]


def test_surnames():
    # the title first, even when another name ends with the same word
    ents = ["Douglass", "Helen Pitts Douglass", "Rochester"]
    assert passage_aliases(
        "Frederick Douglass", "Douglass married Helen Pitts Douglass.", ents
    ) == [("Douglass", "Frederick Douglass")]
    # a name in the passage; a disambiguated title stays the canonical name
    ents = ["Frederick Douglass", "Douglass", "Anna"]
    assert passage_aliases("Anna (film)", "Frederick Douglass met Anna.", ents) == [
        ("Anna", "Anna (film)"),
        ("Douglass", "Frederick Douglass"),
    ]
    # two names end with the word: ambiguous, no alias
    ents = ["Smith", "John Smith", "Mary Smith"]
    assert passage_aliases("Leeds", "John Smith and Mary Smith.", ents) == []


def test_surnames_are_not_places_or_the_title():
    ents = ["University of Copenhagen", "Copenhagen", "Northern Ireland", "Ireland"]
    assert passage_aliases("X", "text", ents) == []
    assert passage_aliases("Kassel", "text", ["Kassel", "Regierungsbezirk Kassel"]) == []


def test_also_known_as_list():
    text = (
        "Person-centered therapy, also known as client-centered therapy and Rogerian"
        " psychotherapy, is a form of psychotherapy developed by Carl Rogers."
    )
    assert passage_aliases("Person-centered therapy", text, ["Person-centered therapy"]) == [
        ("client-centered therapy", "Person-centered therapy"),
        ("Rogerian psychotherapy", "Person-centered therapy"),
    ]


def test_also_known_as_the_entity_before():
    text = (
        "The Bubye River, also known as Bubi River, is a river. Its source, Mount Kuda, also"
        " known as Kuda Hill in English, is high."
    )
    ents = ["Bubye River", "Mount Kuda"]
    assert passage_aliases("Bubye River", text, ents) == [
        ("Bubi River", "Bubye River"),
        ("Kuda Hill", "Mount Kuda"),
    ]


def test_born_names_not_dates():
    text = "Lady Gaga (born Stefani Joanne Angelina Germanotta; March 28, 1986) is a singer."
    assert passage_aliases("Lady Gaga", text, ["Lady Gaga"]) == [
        ("Stefani Joanne Angelina Germanotta", "Lady Gaga")
    ]
    text = "Ada Vell (born 5 May 1950) is a painter. She was born in Leeds."
    assert passage_aliases("Ada Vell", text, []) == []
    text = "Keith Urban is a New Zealand - born Australian singer."
    assert passage_aliases("Keith Urban", text, []) == []


def test_or_simply_and_abbreviated_as():
    text = (
        "New South Wales (abbreviated as NSW) is a state."
        " Ireland, or simply the Republic, is a country."
    )
    assert passage_aliases("New South Wales", text, ["New South Wales", "Ireland"]) == [
        ("NSW", "New South Wales"),
        ("Republic", "Ireland"),
    ]


def test_no_self_pairs_deduplicated_deterministic():
    text = "Acme Corporation (AC) is a firm. Acme Corporation, also known as AC, makes anvils."
    ents = ["Acme Corporation", "AC", "Acme Corporation"]
    out = passage_aliases("Acme Corporation", text, ents)
    assert out == [("AC", "Acme Corporation")]
    assert passage_aliases("Acme Corporation", text, ents) == out
    assert passage_aliases("", "", []) == []
    assert passage_aliases("Paris", "Paris is a city.", ["Paris"]) == []
