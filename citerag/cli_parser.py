"""The command line's arguments: `main.py`'s subcommands and the checks on their values."""

from __future__ import annotations

import argparse
from pathlib import Path

from citerag.article import DEFAULT_COLLECTION
from citerag.query.request import MODES
from citerag.store.base import PageRange
from citerag.text.names import display_name


def build_parser(description: str) -> argparse.ArgumentParser:
    """`main.py`'s parser; `description` is the first line of its help."""
    parser = argparse.ArgumentParser(prog="main.py", description=description)
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log debug details on stderr (else warnings only; RAG_LOG_LEVEL=INFO for more)",
    )
    commands = parser.add_subparsers(dest="command")

    ingest = commands.add_parser("ingest", help="parse, chunk, embed and store PDFs")
    ingest.add_argument(
        "paths", nargs="+", type=Path, help="PDF files, and folders searched for *.pdf"
    )
    add_target_arguments(ingest)
    ingest.add_argument(
        "--sync",
        action="store_true",
        help="make the collection hold what the one FOLDER holds: new files added, changed ones "
        "replaced, renamed ones renamed (not embedded again), documents whose file left the "
        "folder removed (only documents ingested from that folder)",
    )
    ingest.add_argument(
        "--watch",
        action="store_true",
        help="--sync, then again after each change to the folder, until Ctrl-C",
    )

    query = commands.add_parser("query", help="answer a question with cited sources")
    query.add_argument("text", nargs="?", help="the question (or use --questions FILE)")
    query.add_argument("--questions", type=Path, help="a file with one question per line")
    add_target_arguments(query)
    query.add_argument("--json", action="store_true", help="print the answer contract as JSON")
    query.add_argument("--top-k", type=positive_int, default=None, help="number of sources")
    query.add_argument("--pages", type=parse_page_range, default=None, help="only pages A-B")
    query.add_argument(
        "--where",
        type=parse_condition,
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="only documents whose card matches (repeatable): company=3M, year=2018, quarter=2, "
        "kind='annual report', ticker=BBY, title=WORDS; `list --json` shows the cards",
    )
    query.add_argument(
        "--mode",
        choices=MODES,
        default="hybrid",
        help="hybrid: sub-questions routed to facts/pages/summary/sections, cited chunks "
        "(default); single: one retrieval over the whole question; tree: 5 sections per file",
    )
    query.add_argument("--top-k-files", type=positive_int, default=3, help="files (tree mode)")
    query.add_argument(
        "--history",
        type=Path,
        default=None,
        help="earlier turns (JSON chat messages, or one earlier question a line): the question "
        "is condensed from them into a standalone one",
    )

    chat = commands.add_parser("chat", help="a conversation: each line of input is a turn")
    add_target_arguments(chat)
    chat.add_argument("--mode", choices=MODES, default="hybrid")
    chat.add_argument("--json", action="store_true", help="one answer contract (JSON) a line")

    tree = commands.add_parser("tree", help="a document's section tree (PageIndex JSON)")
    tree.add_argument(
        "name", type=display_name, help="the document's file name, as `list` shows it"
    )
    add_target_arguments(tree)
    tree.add_argument("--json", action="store_true", help="print PageIndex's JSON")
    tree.add_argument(
        "--summarize",
        action="store_true",
        help="ask the configured LLM for the section summaries and store them",
    )
    tree.add_argument(
        "--import",
        dest="import_file",
        type=Path,
        default=None,
        metavar="TREE_JSON",
        help="store PageIndex's JSON (made elsewhere) as the document's tree for tree mode",
    )

    listing = commands.add_parser("list", help="documents per collection and their chunk counts")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--collection", default=None)

    inspect = commands.add_parser(
        "inspect", help="a collection's Milvus schema, rows per document and sample rows"
    )
    inspect.add_argument("collection")
    inspect.add_argument("--json", action="store_true")
    inspect.add_argument("--rows", type=positive_int, default=5, help="sample rows to show")

    reindex = commands.add_parser(
        "reindex",
        help="rebuild a collection's Milvus rows from the docstore (no parsing, sentences not "
        "embedded again): gives a collection made before them the year/entity filter columns",
    )
    reindex.add_argument("collection")

    delete = commands.add_parser("delete", help="remove a document by file name")
    delete.add_argument("name", type=display_name)
    delete.add_argument("--collection", default=DEFAULT_COLLECTION)

    serve = commands.add_parser("serve", help="the HTTP API and the viewer (uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    serve.add_argument("--port", type=positive_int, default=8000)
    serve.add_argument(
        "--article",
        default=None,
        help="an article of ARTICLE_CONFIGS in config.py: its settings, schema and domain words",
    )
    mcp = commands.add_parser(
        "mcp",
        help="an MCP server over stdio for desktop clients and IDE agents (answer, search, "
        "list_documents, read_pages); `serve` also serves it over HTTP at /mcp",
    )
    add_target_arguments(mcp)
    return parser


def add_target_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--collection",
        default=None,
        help=f"the collection (default: the --article's, else {DEFAULT_COLLECTION!r}); "
        "the ARTICLE_RAG_OVERRIDES of the article stored in it apply",
    )
    command.add_argument(
        "--article",
        default=None,
        help="an article of ARTICLE_CONFIGS in config.py: its collection and its overrides",
    )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number; pass 1 or more")
    return value


def parse_page_range(text: str) -> PageRange:
    parts = text.split("-")
    try:
        first, last = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        first, last = 0, -1
    if first < 1 or last < first:
        raise argparse.ArgumentTypeError(f"{text!r} is not a page range; write it as A-B, e.g. 3-7")
    return PageRange(first, last)


def parse_condition(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a condition; write it as KEY=VALUE")
    return key.strip(), value.strip()
