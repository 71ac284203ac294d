"""A page drawn with tens of thousands of vector paths is a picture: its strokes are not a table."""

from __future__ import annotations

import pymupdf

from citerag.parse.tables import MAX_PATHS_FOR_TABLE, find_tables


def _ruled_grid_page(extra_paths: int) -> pymupdf.Page:
    """A 3x3 ruled table of text, and `extra_paths` short strokes drawn below it (a map's)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    rows = [("Region", "Lots"), ("Bronx", "1,204"), ("Queens", "2,310")]
    for r, (label, value) in enumerate(rows):
        page.insert_text((80, 118 + 30 * r), label, fontsize=11)
        page.insert_text((230, 118 + 30 * r), value, fontsize=11)
    for y in (100, 130, 160, 190):
        page.draw_line((70, y), (330, y))
    for x in (70, 200, 330):
        page.draw_line((x, 100), (x, 190))
    shape = page.new_shape()
    for i in range(extra_paths):
        x, y = 60 + (i % 400) * 1.2, 300 + (i // 400) * 1.2
        shape.draw_line((x, y), (x + 0.5, y + 0.3))
        shape.finish(width=0.2)  # one path per stroke, as a map's producer writes them
    shape.commit()
    return page


def _ruled(page: pymupdf.Page) -> list[str]:
    return [t.markdown for t in find_tables(page) if "Bronx" in t.markdown and "|" in t.markdown]


def test_a_ruled_table_is_found_among_a_few_strokes() -> None:
    found = _ruled(_ruled_grid_page(extra_paths=50))
    assert len(found) == 1
    assert "Bronx" in found[0] and "1,204" in found[0]


def test_a_page_of_more_paths_than_any_table_is_not_searched_for_ruled_tables() -> None:
    page = _ruled_grid_page(extra_paths=MAX_PATHS_FOR_TABLE + 1)
    assert len(page.get_drawings()) > MAX_PATHS_FOR_TABLE
    # Its rows stay text: at most an unruled table read from the words, never the ruled grid.
    ruled_rect = pymupdf.Rect(70, 100, 330, 190)
    assert not [t for t in find_tables(page) if abs(t.rect.x0 - ruled_rect.x0) < 1]
