"""The contract of `FieldExtractor` (citerag.enrich.fields): rules, GLiNER and LangExtract
keep it.

Subclass `FieldExtractorContract` and give the class an `extractor` fixture; `FILLS` names the
fields the extractor fills (a subset of `LIST_FIELDS`).
"""

from __future__ import annotations

from typing import ClassVar

from citerag.enrich.fields import LIST_FIELDS, FieldExtractor

TEXTS = [
    "In March 2020 Netflix earned $2.5 billion, up 24% from 2019.",
    "Paul Graham started Viaweb in 1995 in Cambridge with Robert Morris.",
    "",
]


class FieldExtractorContract:
    FILLS: ClassVar[tuple[str, ...]] = LIST_FIELDS

    def test_one_result_per_text_in_order(self, extractor: FieldExtractor) -> None:
        assert len(extractor.fields(TEXTS)) == len(TEXTS)
        assert extractor.fields([]) == []

    def test_only_known_fields_each_a_list_of_distinct_non_empty_strings(
        self, extractor: FieldExtractor
    ) -> None:
        for found in extractor.fields(TEXTS):
            assert set(found) <= set(self.FILLS)
            for values in found.values():
                assert isinstance(values, list)
                assert all(isinstance(v, str) and v.strip() for v in values)
                assert len(values) == len(set(values))

    def test_an_empty_text_fills_nothing(self, extractor: FieldExtractor) -> None:
        assert all(not values for values in extractor.fields([""])[0].values())

    def test_the_same_texts_give_the_same_fields(self, extractor: FieldExtractor) -> None:
        assert extractor.fields(TEXTS) == extractor.fields(TEXTS)

    def test_the_extractor_has_a_name(self, extractor: FieldExtractor) -> None:
        assert isinstance(extractor.name, str) and extractor.name
