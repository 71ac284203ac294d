"""The metadata filters a request's pages and card conditions (`where`) come to."""

from __future__ import annotations

from collections.abc import Callable

from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.errors import InputError
from citerag.nodes import DOC_ID
from citerag.plan.limits import check_pages_exist
from citerag.query.request import AnswerRequest
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.filters import page_filters
from citerag.retrieve.routing import checked_where


def request_filters(
    request: AnswerRequest, state: Callable[[str], CollectionState]
) -> MetadataFilters | None:
    """The request's filters; its pages replace them (after checking some document has those
    pages), and its card conditions add the matching documents (`state(collection)` gives the
    page counts and the cards, without listing the collection)."""
    filters = request.filters
    if request.pages is not None:
        longest = state(request.collection).longest_document
        check_pages_exist(request.pages, request.collection, [longest])
        filters = page_filters(request.pages.first, request.pages.last)
    if request.where:
        filters = _documents_filter(request, state(request.collection), filters)
    return filters


def _documents_filter(
    request: AnswerRequest, state: CollectionState, filters: MetadataFilters | None
) -> MetadataFilters:
    """`filters` and the documents whose cards match the request's conditions, or an
    InputError sentence when none does."""
    wanted = checked_where(request.where)
    doc_ids = state.router.documents_where(wanted)
    if not doc_ids:
        shown = ", ".join(f"{k}={v}" for k, v in wanted.items())
        raise InputError(
            f"No document in collection {request.collection!r} matches {shown}; "
            "see the cards with `python main.py list --json`."
        )
    documents = MetadataFilter(key=DOC_ID, value=doc_ids, operator=FilterOperator.IN)
    items = [*(filters.filters if filters else []), documents]
    return MetadataFilters(filters=items)
