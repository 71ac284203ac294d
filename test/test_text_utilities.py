"""The shared text utilities: keyword tokens, the two stemmers, years and JSON out of a reply."""

from __future__ import annotations

from bm25s.stopwords import STOPWORDS_EN

from citerag.text.dates import dates, years
from citerag.text.json_reply import loads_repaired
from citerag.text.stemming import light_stem, plural_stem
from citerag.text.stopwords import FUNCTION_WORDS, STOPWORDS
from citerag.text.tokens import tokenize


def test_keyword_tokens_fold_plurals_drop_stop_words_and_keep_numbers_whole() -> None:
    assert tokenize("The Companies reported 4,585,289 and 3.5 members") == [
        "company",
        "reported",
        "4585289",
        "3.5",
        "member",
    ]


def test_keyword_search_folds_plurals_only_and_highlights_fold_verb_endings() -> None:
    assert plural_stem("increased") == "increased"
    assert light_stem("increased") == light_stem("increase") == "increas"


def test_the_stop_words_are_lucenes_as_bm25s_ships_them() -> None:
    assert frozenset(STOPWORDS_EN) == STOPWORDS


def test_every_stop_word_list_of_highlights_holds_the_keyword_list() -> None:
    assert STOPWORDS <= FUNCTION_WORDS
    assert "what" in FUNCTION_WORDS and "what" not in STOPWORDS


def test_years_and_dates_as_written() -> None:
    assert years("In 1996, $2019 and the 1990s") == ["1996", "1990s"]
    assert dates("On March 3, 2020 and in February 2021") == ["March 3, 2020", "February 2021"]


def test_a_reply_cut_off_before_its_closing_bracket_is_not_guessed_at() -> None:
    # the token limit may cut the last value too ("0090" to "00", which would select node 0000),
    # so the caller asks again or falls back instead
    assert loads_repaired('Here: {"thinking": "x", "node_list": ["1", "2"') is None
    assert loads_repaired('{"thinking": "cut off", "node_list": ["00') is None
    assert loads_repaired('[{"question": "What was revenue?", "tool": "fa') is None


def test_hostile_replies_give_none_not_an_exception() -> None:
    assert loads_repaired("{" * 5000) is None
    assert loads_repaired("{broken}") is None
    assert loads_repaired("no json here") is None
