"""The docstore's change record: per collection, a generation counter and a bounded journal of
the documents each write touched, so that a serving process learns what changed since its last
question from the entries after its generation instead of listing the collection.

Every write that can change which documents are ready, or their version (`created_at`), adds one
entry: `put_document`, `mark_ready`, `delete_document`. An entry holds the generation it made
(1, 2, ...: one more than the collection's last), the document id and the kind of write; a
reader asks for the current record of each document named after its generation, so an entry
never needs to say more. The journal keeps the collection's last `JOURNAL_KEEP` entries: a
process whose generation is older than that (it slept through many changes) lists the collection
once and carries on by delta.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from citerag.types import DocumentRecord

ChangeKind = Literal["ready", "pending", "deleted"]
# Entries kept per collection: at a few entries per ingested document, hundreds of uploads
# between two questions of one process before it lists the collection again.
JOURNAL_KEEP = 2000


@dataclass(frozen=True)
class ChangeSet:
    """What changed in a collection after some generation, as the docstore holds it now."""

    generation: int  # the collection's generation these changes bring a reader to
    ready: dict[str, DocumentRecord] = field(default_factory=dict)  # changed, ready now
    pending: frozenset[str] = frozenset()  # changed, recorded but not ready (ingest under way)
    gone: frozenset[str] = frozenset()  # changed, no record any more

    @property
    def unready(self) -> frozenset[str]:
        return self.pending | self.gone


def reaches(since: int, generations: Sequence[int]) -> bool:
    """Whether the journal's entries from generation `since` on (ascending, `generations`)
    still hold every change after `since`: the entry `since` itself is kept (or `since` is 0
    and nothing was trimmed). A journal trimmed past it, or a store reset behind the reader's
    back (no entry at all, or newer ones only), means: list again."""
    if since == 0:
        return not generations or generations[0] == 1
    return bool(generations) and generations[0] == since


def change_set(
    generation: int, changed: Iterable[str], records: Iterable[DocumentRecord]
) -> ChangeSet:
    """The change set of the `changed` document ids, from their current `records`."""
    found = {r.doc_id: r for r in records}
    ready = {d: found[d] for d in changed if d in found and found[d].status == "ready"}
    pending = frozenset(d for d in changed if d in found and found[d].status != "ready")
    gone = frozenset(d for d in changed if d not in found)
    return ChangeSet(generation, ready, pending, gone)
