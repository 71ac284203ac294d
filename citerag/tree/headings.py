"""Headings from layout: candidates by size, weight and numbering, levels from both.

No LLM and no model: runs of text stronger than the body style (larger, or bold where the body
is not) or carrying structural numbering become candidates; tables of contents, running
headers, tabs repeated across pages and figure labels are removed; a chapter label
("CHAPTER 3") joins the title set beside it; levels come from numbering (parts and chapters,
then items, then `1.2`-style depth), and un-numbered headings sit below the numbered heading in
effect, ranked by typography.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

from citerag.text.tokens import WORD
from citerag.tree.layout import Run, Style, body_style, in_capitals
from citerag.tree.levels import Heading, assign_levels
from citerag.tree.patterns import (
    CONTENTS,
    is_figure_label,
    is_label_only,
    numbering,
    split_part_prefix,
)

HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARS = 150
MAX_HEADING_LINES = 3
TITLE_SIZE_RATIO = 1.3  # a chapter label's title is at least this much larger than body
MIN_LARGE_HEADINGS = 5  # this many large headings (beyond page 1): the document sets them large
WRAP_GAP = 0.6  # vertical gap (in font sizes) below which two heading lines are one
PAGE_BODY_CHARS = 800  # a page's own body size counts when this much text is set in it
TAB_PAGES = 3  # a short text in capitals repeated on this many pages is a tab
SENTENCE_WORDS = 5  # a bold line of this many words ending with a period is a sentence
_ENUMERATOR = re.compile(r"^\(\w{1,3}\)\s*")  # "(a) Title"


def detect_headings(runs: list[Run]) -> list[Heading]:
    """The document's headings in reading order."""
    body = body_style(runs)
    toc_pages = _contents_pages(runs, body)
    usable = [r for r in runs if not r.running and r.page not in toc_pages]
    strict = _sets_headings_large(usable, body)
    page_body = _page_body_sizes(usable, body)
    candidates = [
        r for r in usable if _is_candidate(r, body, strict, page_body.get(r.page, body.size))
    ]
    candidates = _joined_wrapped(_without_tabs(candidates))
    headings = _merge_labels(candidates, usable, body, page_body)
    headings = _without_running_chapter_heads(headings)
    headings = [h for h in headings if h.page > 1 or h.numbered]  # page 1's others: the cover
    assign_levels(headings, _unnumbered_style_ranks(headings, candidates))
    return headings


def _strength(style: Style, body: Style) -> str:
    if style.size >= body.size * HEADING_SIZE_RATIO:
        return "large"
    if style.bold and not body.bold and style.size >= body.size * 0.95:
        return "bold"
    return ""


def _page_body_sizes(runs: list[Run], body: Style) -> dict[int, float]:
    """Pages whose own body text is set larger than the document's (an exhibit, a letter):
    the size of that text, against which their headings are judged."""
    chars: defaultdict[int, Counter[float]] = defaultdict(Counter)
    for run in runs:
        if not run.style.bold:
            chars[run.page][run.style.size] += len(run.text)
    sizes: dict[int, float] = {}
    for page, counts in chars.items():
        size, count = counts.most_common(1)[0]
        if size > body.size and count >= PAGE_BODY_CHARS:
            sizes[page] = size
    return sizes


def is_caps_title(run: Run) -> bool:
    """A title set in capitals: centered, or of three words or more (a lone acronym set flush
    left, "COVID-19", is not)."""
    text = run.text.strip()
    return in_capitals(text) and (run.centered or len(text.split()) >= 3)


def _is_sentence_or_caption(text: str) -> bool:
    """A table caption or row label ("Financial Results:") or a sentence set in bold (a risk
    factor's statement), not a heading."""
    text = text.strip()
    return text.endswith(":") or (text.endswith(".") and len(text.split()) >= SENTENCE_WORDS)


def _page_strength(run: Run, body: Style, page_size: float) -> str:
    """`_strength`, where text only counts as large when it is larger than its page's body."""
    strength = _strength(run.style, body)
    if strength == "large" and run.style.size < page_size * HEADING_SIZE_RATIO:
        return "bold" if run.style.bold else ""
    return strength


def _shape_ok(run: Run) -> bool:
    text = _ENUMERATOR.sub("", run.text.strip())
    if not text:
        return False
    letters = sum(ch.isalpha() for ch in text)
    if len(text) > MAX_HEADING_CHARS or run.lines > MAX_HEADING_LINES or letters < 3:
        return numbering(text) is not None and len(text) <= MAX_HEADING_CHARS
    digits = sum(ch.isdigit() for ch in text)
    if digits * 3 > letters + digits:
        return False  # a row of figures, not a title
    return text[0].isalnum() and not text[0].islower() and not text.endswith(",")


def _is_candidate(run: Run, body: Style, strict: bool, page_size: float) -> bool:
    """A heading candidate: strong enough for this document's heading style (and for its page's
    body text, where that is larger) and shaped like a heading. `strict`: headings are set large
    and bold, so bold body-size text is emphasis."""
    if not _shape_ok(run) or is_figure_label(run.text):
        return False
    strength = _page_strength(run, body, page_size)
    found = numbering(run.text)
    if found is not None and found.kind != "decimal" and strength:
        return True
    if _is_sentence_or_caption(run.text):
        return False
    if not strict:
        return bool(strength) or (is_caps_title(run) and run.centered and _body_size(run, body))
    if found is not None and found.kind == "keyword" and run.style.bold:
        return True
    return strength == "large" and run.style.bold and not _is_tab(run.text)


def _body_size(run: Run, body: Style) -> bool:
    return run.style.size >= body.size * 0.95


def _is_tab(text: str) -> bool:
    words = text.split()
    return text.isupper() and len(words) <= 3 and numbering(text) is None


def _sets_headings_large(runs: list[Run], body: Style) -> bool:
    """True when the document's headings are large and mostly bold (a book, a brochure)."""
    large = [
        r
        for r in runs
        if r.page > 1
        and _strength(r.style, body) == "large"
        and _shape_ok(r)
        and numbering(r.text) is None
    ]
    pages = {r.page for r in large}
    bold = sum(r.style.bold for r in large)
    return len(large) >= MIN_LARGE_HEADINGS and len(pages) >= 3 and bold * 2 > len(large)


def _contents_pages(runs: list[Run], body: Style) -> set[int]:
    """Pages holding a table of contents: a "Contents"/"Index" title, or numbered headings
    ("PART II", "Item 7.") that appear again on later pages."""
    pages = {r.page for r in runs if CONTENTS.match(r.text.strip()) and _strength(r.style, body)}
    first_page: dict[str, int] = {}
    repeats: Counter[int] = Counter()
    for run in runs:
        found = numbering(run.text)
        if found is None or found.kind in ("decimal", "keyword"):
            continue
        if found.key in first_page and first_page[found.key] < run.page:
            repeats[first_page[found.key]] += 1
        first_page.setdefault(found.key, run.page)
    pages.update(page for page, n in repeats.items() if n >= 2)
    return pages


def _without_tabs(candidates: list[Run]) -> list[Run]:
    """Short all-caps texts repeated as they are on several pages are tabs or running titles
    (a section titled "INCOME TAXES" is not one because a sub-section says "Income Taxes")."""
    pages: defaultdict[str, set[int]] = defaultdict(set)
    for run in candidates:
        pages[_same_text(run.text)].add(run.page)
    return [
        r
        for r in candidates
        if not (
            _is_tab(r.text.replace(",", "").replace(".", ""))
            and len(pages[_same_text(r.text)]) >= TAB_PAGES
        )
    ]


def _same_text(text: str) -> str:
    return " ".join(WORD.findall(text))


def _joined_wrapped(candidates: list[Run]) -> list[Run]:
    """A heading wrapped over two blocks ("ITEM 5. MARKET ... ISSUER" / "PURCHASES OF ...", or
    two stacked lines of one title in capitals) is one heading."""
    joined: list[Run] = []
    for run in candidates:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and previous.page == run.page
            and previous.style == run.style
            and 0 <= run.y0 - previous.y1 <= run.style.size * WRAP_GAP
            and numbering(run.text) is None
            and (_wraps_numbered(previous, run) or (is_caps_title(previous) and is_caps_title(run)))
        ):
            joined[-1] = replace(previous, text=f"{previous.text} {run.text}", y1=run.y1)
            continue
        joined.append(run)
    return joined


def _wraps_numbered(previous: Run, run: Run) -> bool:
    return numbering(previous.text) is not None and previous.text.isupper() == run.text.isupper()


def _merge_labels(
    candidates: list[Run], usable: list[Run], body: Style, page_body: dict[int, float]
) -> list[Heading]:
    """Headings from candidates; a label alone ("CHAPTER 1", "Introduction") takes the largest
    heading-typeface text of its page as its title ("Chapter 1: Three Steps ...")."""
    families = {r.style.family for r in candidates if r.style.bold} or {body.family}
    titles: dict[int, Run] = {}
    for run in candidates:
        if is_label_only(run.text):
            title_run = _page_title(run, usable, families, body)
            if title_run is not None:
                titles[id(run)] = title_run
    taken = {id(title) for title in titles.values()}
    headings: list[Heading] = []
    for run in candidates:
        if id(run) in taken:
            continue
        title_run = titles.get(id(run))
        if title_run is not None:
            label = run.text.strip().rstrip(":").title()
            text = f"{label}: {title_run.text.strip()}"
            kind = _kind_of(run.text)
            y0 = min(run.y0, title_run.y0)
            headings.append(Heading(text, run.page, 0, y0, kind, _tier(title_run, body, page_body)))
            continue
        for text in split_part_prefix(run.text):
            tier = _tier(run, body, page_body)
            headings.append(Heading(text.strip(), run.page, 0, run.y0, _kind_of(text), tier))
    headings.sort(key=lambda h: (h.page, h.y0))
    return headings


def _page_title(label: Run, usable: list[Run], families: set[str], body: Style) -> Run | None:
    same_page = [
        r
        for r in usable
        if r.page == label.page
        and r is not label
        and r.style.family in families
        and _strength(r.style, body) == "large"
        and _shape_ok(r)
        and numbering(r.text) is None
        and not _is_tab(r.text)
    ]
    if not same_page:
        return None
    best = max(same_page, key=lambda r: r.style.size)
    return best if best.style.size >= body.size * TITLE_SIZE_RATIO else None


def _without_running_chapter_heads(headings: list[Heading]) -> list[Heading]:
    """A heading naming a chapter already started ("... CHAPTER 2" atop its later pages) or
    repeating, on TAB_PAGES pages or more, a title already seen is a running head; a title
    printed on two pages only (two certifications, two audit reports) heads two sections."""
    seen_keys: set[str] = set()
    seen_titles: set[str] = set()
    pages: defaultdict[str, set[int]] = defaultdict(set)
    for heading in headings:
        pages[_same_text(heading.title)].add(heading.page)
    kept: list[Heading] = []
    for heading in headings:
        trailing = re.search(r"\b(chapter|part)\s+(\d+|[ivx]+)\s*$", heading.title, re.I)
        if trailing and f"{trailing.group(1)} {trailing.group(2)}".casefold() in seen_keys:
            continue
        found = numbering(heading.title)
        if found is not None and found.kind in ("part", "chapter"):
            seen_keys.add(found.key)
        title = _same_text(heading.title)
        if title in seen_titles and not heading.numbered and len(pages[title]) >= TAB_PAGES:
            continue
        seen_titles.add(title)
        kept.append(heading)
    return kept


def _tier(run: Run, body: Style, page_body: dict[int, float]) -> tuple[int, int]:
    """Large before body-size; then a title in capitals, bold upright, bold italic, other."""
    style = run.style
    large = _page_strength(run, body, page_body.get(run.page, body.size)) == "large"
    if is_caps_title(run):
        face = 0
    elif style.bold:
        face = 2 if style.italic else 1
    else:
        face = 3
    return (0 if large else 1, face)


def _kind_of(text: str) -> str:
    found = numbering(text)
    return found.kind if found is not None else ""


def _unnumbered_style_ranks(headings: list[Heading], candidates: list[Run]) -> dict[str, int]:
    """1 for the strongest style of un-numbered headings, 2 for the next, ..."""
    style_of = {r.text.strip(): r.style for r in candidates}
    styles = {style_of[h.title] for h in headings if not h.numbered and h.title in style_of}
    ranked = sorted(styles, key=lambda s: (-s.size, not s.bold))
    rank = {style: index for index, style in enumerate(ranked, start=1)}
    return {
        h.title: rank[style_of[h.title]] for h in headings if not h.numbered and h.title in style_of
    }
