"""Tree search: which sections of a document answer a question.

Offline: a node scores the best retriever score among its chunks, plus the share of the
question's terms its title and summary contain. (PageIndex's 1/sqrt(N+1) * sum of chunk scores
was measured too: it ranks long sections with many weak hits above the one holding the best
passage, and lost recall@1 and MRR on the finance questions; see benchmarks/results/tree.md.)

With an LLM: the tree without text goes in the prompt, the reply is `{"thinking", "node_list"}`;
broken JSON is repaired, or asked again once; ids the tree does not have are dropped (the first
MAX_INVALID of them listed, and MAX_THINKING characters of the reasoning kept, so a hostile reply
cannot swell the answer's metadata). Either way exactly `k` nodes come back (fewer only when the
tree has fewer), filled with the best-scored unseen nodes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from citerag.llm.llm_chat import Chat
from citerag.text.json_reply import loads_repaired
from citerag.text.stopwords import QUESTION_WORDS
from citerag.text.tokens import WORD
from citerag.tree.model import DocumentTree

NODES_PER_FILE = 5
MAX_THINKING = 500  # characters of the LLM's reasoning kept in the search history
MAX_INVALID = 20  # distinct invented ids listed there
_ID = re.compile(r"[0-9]{1,9}")
_ID_LIMIT = 10**9
TITLE_WEIGHT = 0.25  # title/summary terms nudge, the retriever leads (0.5 measured worse)
SELECT_PROMPT = (
    "You are given a question and the outline of a document: each line is a node id, its "
    "pages, its title and a summary. Select the {k} nodes most likely to contain the answer. "
    'Reply with JSON only: {{"thinking": "<one sentence>", "node_list": ["0003", ...]}}. '
    "Use only node ids from the outline; do not invent ids.\n\nQuestion: {question}\n\n"
    "Document: {doc_name}\n{outline}"
)
REPAIR_PROMPT = (
    "Your reply was not valid JSON. Reply again with JSON only, exactly "
    '{{"thinking": "...", "node_list": ["0001", ...]}}, using ids from the outline.\n\n'
    "Your reply was:\n{reply}"
)


def terms(text: str) -> set[str]:
    return {w for w in WORD.findall(text.casefold()) if w not in QUESTION_WORDS and len(w) > 1}


def selection_view(tree: DocumentTree) -> str:
    """The tree without text: one line per node, indented by depth."""
    lines: list[str] = []
    for node, depth in tree.walk_with_depth():
        summary = f" — {node.summary[:160]}" if node.summary else ""
        pages = f"p{node.start_index}-{node.end_index}"
        lines.append(f"{'  ' * depth}[{node.node_id}] {pages} {node.title}{summary}")
    return "\n".join(lines)


def node_evidence(hits: Sequence[float], chunk_count: int) -> float:
    """How strongly the retriever points at a node: its best chunk's score."""
    return max(hits, default=0.0)


def offline_ranking(
    tree: DocumentTree, question: str, chunk_scores: Mapping[str, float]
) -> list[tuple[str, float]]:
    """Every node id with its score, best first (ties in document order)."""
    wanted = terms(question)
    scored: list[tuple[str, float]] = []
    for node in tree.walk():
        hits = [chunk_scores[c] for c in node.chunk_ids if c in chunk_scores]
        evidence = node_evidence(hits, len(node.chunk_ids))
        named = terms(f"{node.title} {node.summary}")
        match = len(wanted & named) / len(wanted) if wanted else 0.0
        scored.append((node.node_id, evidence + TITLE_WEIGHT * match))
    order = {node_id: i for i, node_id in enumerate(tree.node_ids())}
    return sorted(scored, key=lambda item: (-item[1], order[item[0]]))


def fill_selection(
    chosen: Sequence[str], ranking: Sequence[tuple[str, float]], k: int = NODES_PER_FILE
) -> list[str]:
    """Valid chosen ids first (once each), then the best-ranked unseen ones, `k` in all."""
    valid = {node_id for node_id, _ in ranking}
    picked = [node_id for node_id in dict.fromkeys(chosen) if node_id in valid][:k]
    for node_id, _score in ranking:
        if len(picked) >= k:
            break
        if node_id not in picked:
            picked.append(node_id)
    return picked


@dataclass
class Selection:
    node_ids: list[str]
    method: str  # "llm" or "offline"
    thinking: str = ""
    invalid_ids: list[str] = field(default_factory=list)
    retried: bool = False
    error: str = ""


def llm_selection(
    chat: Chat,
    tree: DocumentTree,
    question: str,
    ranking: Sequence[tuple[str, float]],
    k: int = NODES_PER_FILE,
) -> Selection:
    """The LLM's choice of `k` nodes, repaired, validated and filled from `ranking`."""
    prompt = SELECT_PROMPT.format(
        k=k, question=question.strip(), doc_name=tree.doc_name, outline=selection_view(tree)
    )
    messages = [("user", prompt)]
    reply = chat(messages)
    parsed = parse_selection(reply)
    retried = False
    if parsed is None:
        retried = True
        messages += [("assistant", reply), ("user", REPAIR_PROMPT.format(reply=reply[:2000]))]
        parsed = parse_selection(chat(messages))
    if parsed is None:
        ids = fill_selection([], ranking, k)
        return Selection(ids, "offline", retried=True, error="the LLM's reply was not JSON twice")
    thinking, listed = parsed
    known = set(tree.node_ids())
    invalid = [node_id for node_id in dict.fromkeys(listed) if node_id not in known]
    ids = fill_selection(listed, ranking, k)
    return Selection(ids, "llm", thinking[:MAX_THINKING], invalid[:MAX_INVALID], retried)


def parse_selection(reply: str) -> tuple[str, list[str]] | None:
    """(thinking, node ids) from a reply, repairing the usual breakage; None if hopeless."""
    data = loads_repaired(reply)
    if not isinstance(data, dict):
        return None
    listed = data.get("node_list", data.get("selected_node_ids"))
    if not isinstance(listed, list):
        return None
    ids = [_as_id(item) for item in listed]
    thinking = data.get("thinking", data.get("reasoning", ""))
    return str(thinking), [node_id for node_id in ids if node_id]


def _as_id(item: object) -> str:
    """ "0003" from 3 or " 3 " or "0003"; "" from anything else (floats, negative or huge
    numbers, digits other than 0-9 such as "²", lists, objects)."""
    if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < _ID_LIMIT:
        return f"{item:04d}"
    if isinstance(item, str) and _ID.fullmatch(item.strip()):
        return f"{int(item.strip()):04d}"
    return ""


def chunk_scores_by_doc(scored: Sequence[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """(doc_id, chunk_id, score) triples grouped by document."""
    grouped: defaultdict[str, dict[str, float]] = defaultdict(dict)
    for doc_id, chunk_id, score in scored:
        grouped[doc_id][chunk_id] = max(score, grouped[doc_id].get(chunk_id, score))
    return dict(grouped)
