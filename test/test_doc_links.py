"""Every relative link in the README and docs/ leads somewhere: the file exists and, where the
link names a heading (`#anchor`), the target has that heading, as GitHub writes its anchors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parent.parent
PAGES = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
# [text](target) and ![alt](target), the target up to a space or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def _prose(markdown: str) -> str:
    """The page without code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {github_anchor(h) for h in HEADING.findall(FENCE.sub("", page.read_text()))}


def _relative_links(page: Path) -> list[str]:
    targets = LINK.findall(_prose(page.read_text()))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # http:, mailto:


def test_the_pages_have_links_to_check() -> None:
    assert (PROJECT_DIR / "README.md") in PAGES and len(PAGES) > 2
    assert sum(len(_relative_links(page)) for page in PAGES) > 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_anchors_are_written_as_github_writes_them() -> None:
    assert github_anchor("Keeping a folder in sync (`--sync`, `--watch`)") == (
        "keeping-a-folder-in-sync---sync---watch"
    )
    assert github_anchor("MCP server (assistants and editors)") == (
        "mcp-server-assistants-and-editors"
    )
