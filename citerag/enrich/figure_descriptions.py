"""Figure descriptions at ingest: each figure's region described once by a vision-capable LLM
and stored as its own node, so "what does Figure 3 show?" is answered from what it shows.

The vision model is the configured LLM provider with `VISION_MODEL` (an OpenAI-compatible image
message through LlamaIndex's `ImageBlock`). A description is cached on disk by the sha256 of the
rendered image and the model: a second ingest makes no call. A reply is cleaned (markup, code
fences and control characters out, one paragraph, at most `MAX_DESCRIPTION_CHARS`) and refused
when empty or when it talks to the assistant instead of describing ("ignore previous
instructions", "system prompt"); a failed or refused call leaves that figure to its caption.
Without a vision model, figures are found by their captions only, and one log line says so.

A description node carries the figure's label (`figure:3`), page and box; its text starts with
what it describes ("Figure 3 (page 12): ...") and its metadata stays out of the LLM prompt, like
every chunk's bookkeeping. It is no part of its page's text (`retrieve.page_evidence.page_texts`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock
from llama_index.core.llms import LLM
from llama_index.core.schema import TextNode

from citerag.errors import RagError
from citerag.llm.connection import build_llm
from citerag.nodes import chunk_node
from citerag.parse.figures import FigureRegion, find_figures, render_region
from citerag.settings import Settings
from citerag.text.sentences import sentence_spans
from citerag.types import ParsedDocument

log = logging.getLogger(__name__)
FIGURE_DESCRIPTION = "figure_description"  # the block_type of a description node
FIGURE_CACHE = "figure_cache"  # under the storage folder
MAX_DESCRIPTION_CHARS = 1500
PROMPT = (
    "Describe this figure from a document for someone who cannot see it: what kind of figure "
    "it is, what it shows, its labels, axes, values, arrows and trends. Plain sentences only."
)
_MARKUP = re.compile(r"<[^>]{0,200}>|```[a-z]*|[\x00-\x08\x0b-\x1f\x7f]")
_ADDRESSED = re.compile(
    r"ignore (?:all |any )?(?:the )?(?:previous|prior|above)|system prompt|you are (?:now )?"
    r"(?:an?|the) (?:assistant|ai|language model)|disregard (?:the|all|your)|as an ai\b",
    re.I,
)


@dataclass(frozen=True)
class DescriptionReport:
    asked: int = 0
    cached: int = 0
    failed: int = 0


class FigureDescriber:
    """A vision LLM's descriptions of rendered figure regions, cached by image and model."""

    def __init__(self, llm: LLM, model: str, cache_dir: Path) -> None:
        self._llm = llm
        self.model = model
        self._cache_dir = cache_dir

    def describe(self, png: bytes, caption: str) -> tuple[str | None, str]:
        """The description (None when the call failed or its reply was refused) and where it
        came from: "cache", "llm", "failed" or "refused"."""
        key = hashlib.sha256(f"{self.model}\n{hashlib.sha256(png).hexdigest()}".encode())
        path = self._cache_dir / f"{key.hexdigest()}.json"
        if path.is_file():
            try:
                return str(json.loads(path.read_text())["description"]), "cache"
            except (OSError, ValueError, KeyError):
                log.warning("figure cache entry %s is unreadable; asking again", path.name)
        try:
            reply = self._ask(png, caption)
        except Exception as error:  # noqa: BLE001 - any provider failure: caption only
            log.warning("describing a figure failed (%s); its caption stands alone", error)
            return None, "failed"
        description = clean_description(reply)
        if description is None:
            log.warning("the vision model's reply was not a description; caption only")
            return None, "refused"
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        record = {"model": self.model, "image_sha256": hashlib.sha256(png).hexdigest()}
        path.write_text(json.dumps({**record, "description": description}))
        return description, "llm"

    def _ask(self, png: bytes, caption: str) -> str:
        text = f"{PROMPT}\nIts caption or nearby text: {caption}" if caption else PROMPT
        blocks = [TextBlock(text=text), ImageBlock(image=png, image_mimetype="image/png")]
        response = self._llm.chat([ChatMessage(role=MessageRole.USER, blocks=blocks)])
        return str(response.message.content or "")


def clean_description(reply: str) -> str | None:
    """One paragraph of plain text, or None when nothing usable is left or the reply speaks to
    the assistant rather than describing the figure."""
    text = " ".join(_MARKUP.sub(" ", reply).split())
    if not text or _ADDRESSED.search(text):
        return None
    if len(text) > MAX_DESCRIPTION_CHARS:
        cut = text[:MAX_DESCRIPTION_CHARS]
        text = cut[: cut.rfind(". ") + 1] or cut
    return text


def describer_for(settings: Settings) -> FigureDescriber | None:
    """The vision model when `VISION_MODEL` and an LLM provider are set; None (with one log
    line) otherwise."""
    if not settings.llm.vision_model or not settings.llm.llm_provider:
        log.info("figures: no vision model configured (set VISION_MODEL); captions only")
        return None
    try:
        llm = build_llm(settings.llm.with_overrides(llm_model=settings.llm.vision_model))
    except RagError as error:
        log.warning("figures: the vision model cannot be set up (%s); captions only", error)
        return None
    if llm is None:
        return None
    return FigureDescriber(
        llm, settings.llm.vision_model, settings.storage.storage_dir / FIGURE_CACHE
    )


def figure_nodes(
    path: Path, parsed: ParsedDocument, describer: FigureDescriber, first_index: int
) -> tuple[list[TextNode], DescriptionReport]:
    """One node per described figure of the PDF; figures whose description failed keep only
    their caption (in the page text, as without a vision model)."""
    nodes: list[TextNode] = []
    counts = {"llm": 0, "cache": 0, "failed": 0, "refused": 0}
    for region in find_figures(path):
        description, origin = describer.describe(render_region(path, region), region.caption)
        counts[origin] += 1
        if description is not None:
            nodes.append(_node(parsed, region, description, first_index + len(nodes)))
    report = DescriptionReport(counts["llm"], counts["cache"], counts["failed"] + counts["refused"])
    log.info(
        "%s: %d figure descriptions (%d asked, %d cached, %d failed)",
        parsed.name,
        len(nodes),
        report.asked,
        report.cached,
        report.failed,
    )
    return nodes, report


def figure_title(region: FigureRegion) -> str:
    if region.label:
        return f"Figure {region.label} (page {region.page})"
    return f"Figure on page {region.page}"


def _node(parsed: ParsedDocument, region: FigureRegion, description: str, index: int) -> TextNode:
    caption = f" Caption: {region.caption}" if region.caption else ""
    text = f"{figure_title(region)}: {description}{caption}"
    return chunk_node(
        node_id=f"{parsed.doc_id[:16]}-fig-{region.page:04d}-{region.index}",
        doc_id=parsed.doc_id,
        doc_name=parsed.name,
        page=region.page,
        chunk_index=index,
        text=text,
        start=0,
        block_type=FIGURE_DESCRIPTION,
        label=region.label,
        boxes=[region.bbox],
        sentences=sentence_spans(text),
    )
