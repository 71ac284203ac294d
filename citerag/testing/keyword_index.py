"""The contract of `KeywordIndex` (citerag.store.keywords): bm25s files and Milvus BM25 keep it.

Subclass `KeywordIndexContract` and give the class a `keyword_index` fixture that yields an
empty index (and closes it after). Scores are not compared here (each backend has its own);
what a user relies on is: which entries match, of which kind, best first, within
`allowed_ids`, and that a removed document is gone.
"""

from __future__ import annotations

from citerag.store.keywords import KeywordEntry, KeywordIndex, KeywordKind, KeywordQuery

COLLECTION = "contract"
OTHER = "contract_other"

D1 = [
    KeywordEntry("d1-c0", "chunk", "Piracy risk factors are described in this section."),
    KeywordEntry("d1-c1", "chunk", "Revenue grew in Europe; costs fell."),
    KeywordEntry("d1-p1", "page", "Piracy risk factors are described. Revenue grew in Europe."),
]
D2 = [
    KeywordEntry("d2-c0", "chunk", "Streaming revenue rose with price increases in Canada."),
    KeywordEntry("d2-c1", "chunk", "The board reviewed the stock repurchase program."),
    KeywordEntry("d2-p1", "page", "Streaming revenue rose in Canada."),
    KeywordEntry("d2-p2", "page", "The board reviewed the stock repurchase program."),
]


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [entry_id for entry_id, _ in hits]


def with_two(index: KeywordIndex) -> KeywordIndex:
    index.add_document(COLLECTION, "d1", D1)
    index.add_document(COLLECTION, "d2", D2)
    return index


class KeywordIndexContract:
    def test_both_documents_are_found_by_kind(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)

        def found(kind: KeywordKind, text: str) -> list[str]:
            return ids(index.search(COLLECTION, KeywordQuery(kind, text, 5)))

        assert found("chunk", "piracy risks") == ["d1-c0"]
        assert found("chunk", "stock repurchase") == ["d2-c1"]
        assert set(found("chunk", "revenue")) == {"d1-c1", "d2-c0"}
        assert set(found("page", "revenue")) == {"d1-p1", "d2-p1"}
        assert found("page", "board repurchase") == ["d2-p2"]

    def test_hits_are_positive_best_first_and_at_most_top_k(
        self, keyword_index: KeywordIndex
    ) -> None:
        index = with_two(keyword_index)
        hits = index.search(COLLECTION, KeywordQuery("chunk", "streaming revenue Canada", 1))
        assert ids(hits) == ["d2-c0"]
        hits = index.search(COLLECTION, KeywordQuery("chunk", "streaming revenue Canada", 5))
        scores = [score for _, score in hits]
        assert ids(hits)[0] == "d2-c0" and all(s > 0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert index.search(COLLECTION, KeywordQuery("chunk", "revenue", 0)) == []

    def test_allowed_ids_restrict_the_hits(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)

        def found(kind: KeywordKind, allowed_ids: set[str]) -> list[str]:
            return ids(index.search(COLLECTION, KeywordQuery(kind, "revenue", 5, allowed_ids)))

        assert found("chunk", {"d2-c0"}) == ["d2-c0"]
        assert found("chunk", set()) == []
        assert found("page", {"d1-c1"}) == []

    def test_a_removed_document_is_no_longer_found(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)
        index.remove_document(COLLECTION, "d1")
        assert index.doc_ids(COLLECTION) == {"d2"}
        assert ids(index.search(COLLECTION, KeywordQuery("chunk", "revenue", 5))) == ["d2-c0"]
        assert index.search(COLLECTION, KeywordQuery("page", "piracy", 5)) == []
        index.remove_document(COLLECTION, "d1")  # twice: nothing to do, no error
        assert index.doc_ids(COLLECTION) == {"d2"}

    def test_doc_ids_among_names_the_held_documents_of_those_asked(
        self, keyword_index: KeywordIndex
    ) -> None:
        index = with_two(keyword_index)
        assert index.doc_ids_among(COLLECTION, ["d1", "d3"]) == {"d1"}
        index.remove_document(COLLECTION, "d1")
        assert index.doc_ids_among(COLLECTION, iter(["d1", "d2"])) == {"d2"}
        assert index.doc_ids_among(COLLECTION, []) == set()
        assert index.doc_ids_among(OTHER, ["d2"]) == set()

    def test_doc_ids_and_collections_are_separate(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)
        index.add_document(OTHER, "d3", [KeywordEntry("d3-c0", "chunk", "Piracy again.")])
        assert index.doc_ids(COLLECTION) == {"d1", "d2"}
        assert index.doc_ids(OTHER) == {"d3"}
        assert ids(index.search(OTHER, KeywordQuery("chunk", "piracy", 5))) == ["d3-c0"]
        index.drop_collection(OTHER)

    def test_drop_collection_removes_everything_in_it(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)
        index.drop_collection(COLLECTION)
        assert index.doc_ids(COLLECTION) == set()
        assert index.search(COLLECTION, KeywordQuery("chunk", "revenue", 5)) == []
        index.add_document(COLLECTION, "d2", D2)  # the collection can be used again
        assert ids(index.search(COLLECTION, KeywordQuery("chunk", "board", 5))) == ["d2-c1"]

    def test_an_empty_or_stopword_query_finds_nothing(self, keyword_index: KeywordIndex) -> None:
        index = with_two(keyword_index)
        assert index.search(COLLECTION, KeywordQuery("chunk", "", 5)) == []
        assert index.search(COLLECTION, KeywordQuery("chunk", "the of and", 5)) == []
        assert index.search(COLLECTION, KeywordQuery("chunk", "zebra", 5)) == []

    def test_an_unknown_collection_is_empty(self, keyword_index: KeywordIndex) -> None:
        assert keyword_index.search("never_made", KeywordQuery("chunk", "revenue", 5)) == []
        assert keyword_index.doc_ids("never_made") == set()
        keyword_index.remove_document("never_made", "d1")
        keyword_index.drop_collection("never_made")

    def test_adding_a_document_again_replaces_its_entries(
        self, keyword_index: KeywordIndex
    ) -> None:
        index = with_two(keyword_index)
        index.add_document(COLLECTION, "d1", [KeywordEntry("d1-c9", "chunk", "Zebra crossing.")])
        assert ids(index.search(COLLECTION, KeywordQuery("chunk", "zebra", 5))) == ["d1-c9"]
        assert index.search(COLLECTION, KeywordQuery("chunk", "piracy", 5)) == []
