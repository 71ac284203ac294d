"""Command line: `python main.py` runs the configured article; subcommands do one thing each.

python main.py          # ingest ACTIVE_ARTICLE if needed, then answer its queries
python main.py ingest PDF_OR_FOLDER... [--collection NAME | --article NAME]  # folders: *.pdf
python main.py ingest FOLDER --sync [--watch] [--collection NAME]  # the collection = the folder
python main.py mcp [--collection NAME]                          # MCP server over stdio
python main.py query TEXT [--collection NAME | --article NAME] [--json] [--top-k N] [--pages A-B]
python main.py query --questions FILE [--json] ...
python main.py query TEXT --mode tree [--top-k-files N] ...   # sections of several files
python main.py query TEXT --mode single ...                     # one retrieval, no sub-questions
python main.py query TEXT --history FILE ...                    # a follow-up to earlier turns
python main.py chat [--collection NAME] [--mode MODE] [--json]  # a conversation, a line a turn
python main.py tree DOC [--collection NAME] [--json] [--summarize]  # a document's section tree
python main.py tree DOC --import tree.json                      # store PageIndex's tree for DOC
python main.py list [--json]
python main.py delete NAME [--collection NAME]
python main.py inspect COLLECTION [--json] [--rows N]          # what Attu shows, in the terminal
python main.py reindex COLLECTION         # Milvus rows rebuilt from the docstore (new columns)
python main.py serve [--host 127.0.0.1] [--port 8000] [--article NAME]  # MCP at /mcp too
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if not {"-v", "--verbose"} & set(sys.argv[1:]):
    # gRPC's C core (under pymilvus) prints keepalive notes ("too_many_pings") on stderr
    # during long ingests; read when the library loads, so set before any import of it.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from citerag.article import Article  # noqa: E402
from citerag.cli_output import (  # noqa: E402
    StageBar,
    format_answer,
    format_documents,
    format_file_result,
    format_sync_result,
    format_sync_totals,
    format_totals,
)
from citerag.cli_parser import build_parser  # noqa: E402
from citerag.env_file import env_file_variables  # noqa: E402
from citerag.errors import InputError, RagError  # noqa: E402
from citerag.plan.limits import checked_question, checked_top_k  # noqa: E402
from citerag.query.conversation import ChatTurn  # noqa: E402
from citerag.query.request import AnswerRequest  # noqa: E402
from citerag.retrieve.routing import checked_where  # noqa: E402
from citerag.settings import check_milvus_environment, unknown_variable_warnings  # noqa: E402
from citerag.text.names import display_name  # noqa: E402

log = logging.getLogger("citerag")
MAX_QUESTIONS_FILE_BYTES = 16 * 2**20  # `query --questions FILE`


def load_config() -> Any:
    """config.py, or a one-sentence ConfigError when it cannot be loaded."""
    from citerag.errors import ConfigError

    try:
        import config
    except SyntaxError as error:
        raise ConfigError(
            f"config.py has a syntax error at line {error.lineno} ({error.msg}); fix it and rerun."
        ) from None
    except Exception as error:  # noqa: BLE001 - any failure while importing the user's file
        raise ConfigError(f"config.py cannot be loaded ({error}); fix it and rerun.") from None
    return config


def load_queries() -> Any:
    """queries.py (which imports config.py), or a one-sentence error when it cannot be loaded."""
    from citerag.errors import ConfigError

    load_config()
    try:
        import queries
    except SyntaxError as error:
        raise ConfigError(
            f"queries.py has a syntax error at line {error.lineno} ({error.msg}); fix it and rerun."
        ) from None
    except Exception as error:  # noqa: BLE001 - any failure while importing the user's file
        raise ConfigError(f"queries.py cannot be loaded ({error}); fix it and rerun.") from None
    return queries


def resolve_target(args: argparse.Namespace) -> Article:
    """The article (settings, schema, collection) that --article and --collection select:
    --article NAME selects that article's collection (unless --collection names another);
    --collection alone applies the article stored in that collection, if one is."""
    return load_target(args.article, args.collection)


def load_target(article: str | None = None, collection: str | None = None) -> Article:
    import extraction_schemas
    from citerag.article import load_article

    return load_article(load_config(), extraction_schemas.SCHEMAS, article, collection)


@contextmanager
def open_engine(article: Article | None = None) -> Iterator[Any]:
    target = article or load_target()  # settings checked before pymilvus is imported
    from citerag.engine import Engine

    engine = Engine(target.settings, schema=target.schema)
    try:
        yield engine
    finally:
        engine.close()


def run_configured_article() -> int:
    from citerag.article import active_article

    config = load_config()
    queries = load_queries()
    target = load_target(active_article(config))
    questions = queries.QUERIES_BY_ARTICLE.get(target.name) or []
    if not questions:
        raise InputError(
            f"queries.py has no queries for {target.name!r}; add them to QUERIES_BY_ARTICLE."
        )
    if target.pdf is None:
        from citerag.errors import ConfigError

        raise ConfigError(
            f"ARTICLE_CONFIGS[{target.name!r}] needs 'directory' and 'filename'; add them in "
            "config.py."
        )
    from citerag.ingest.shelf import ingest_one

    with open_engine(target) as engine:
        ingested = ingest_one(
            engine, target.pdf, target.collection, progress=StageBar(target.pdf.name)
        )
        if ingested.failed:
            raise InputError(ingested.message)
        print(format_file_result(ingested))
        for question in questions:
            result = engine.query(question, target.collection)
            print(format_answer(question, result))
    return 0


def run_ingest(args: argparse.Namespace) -> int:
    """Every PDF the paths name or hold, in one process: a line per file, then the total;
    exit 1 when any file failed (each failure has its sentence on stderr)."""
    from citerag.engine import check_collection_name
    from citerag.ingest.discover import discover_pdfs
    from citerag.ingest.shelf import FileResult, ShelfTotals, ingest_shelf
    from citerag.ingest.sync import keep_sources

    if args.sync or args.watch:
        return run_sync(args)
    started = time.perf_counter()
    target = resolve_target(args)
    collection = target.collection
    check_collection_name(collection)  # once, rather than as every file's failure
    found = discover_pdfs(args.paths)
    if not found:
        shown = ", ".join(str(path) for path in args.paths)
        raise InputError(f"No PDF files in {shown}; give PDF files or folders that hold some.")

    def report(result: FileResult) -> None:
        if result.failed:
            print(f"error: {result.message}", file=sys.stderr, flush=True)
        print(format_file_result(result), flush=True)

    with ExitStack() as stack:
        # Nothing to load (no models, no stores) when every path given is unusable.
        usable = any(item.ok for item in found)
        engine: Any = stack.enter_context(open_engine(target)) if usable else None
        results = ingest_shelf(
            engine,
            found,
            collection,
            lambda position, item: StageBar(
                f"[{position}/{len(found)}] {display_name(item.path.name)}"
            ),
            report,
        )
        stores = getattr(engine, "stores", None)  # None: no engine (or a test's stand-in)
        if stores is not None:
            keep_sources(stores, collection, results)
    totals = ShelfTotals.of(results, time.perf_counter() - started)
    print(format_totals(totals, collection))
    return 1 if totals.failed else 0


def run_sync(args: argparse.Namespace) -> int:
    """`ingest FOLDER --sync`: one sync and its summary line (exit 1 when a file failed);
    with --watch, a sync after each change until Ctrl-C (exit 0)."""
    from citerag.engine import check_collection_name
    from citerag.ingest.shelf import FileResult
    from citerag.ingest.sync import SyncTotals, check_sync_folder, sync_folder
    from citerag.ingest.watch import watch_folder

    if len(args.paths) != 1:
        raise InputError(
            "--sync keeps a collection equal to one folder; give exactly one folder (run it "
            "once per folder)."
        )
    folder = check_sync_folder(args.paths[0])
    target = resolve_target(args)
    collection = check_collection_name(target.collection)

    def report(result: FileResult) -> None:
        if result.failed:
            print(f"error: {result.message}", file=sys.stderr, flush=True)
        print(format_sync_result(result), flush=True)

    with open_engine(target) as engine:

        def one_sync(settling: Collection[str] = ()) -> SyncTotals:
            results = sync_folder(
                engine, folder, collection, lambda path: StageBar(path.name), report, settling
            )
            totals = SyncTotals.of(results)
            print(format_sync_totals(totals, folder, collection), flush=True)
            return totals

        if not args.watch:
            return 1 if one_sync().failed else 0
        print(f"watching {folder} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        try:
            watch_folder(folder, one_sync)
        except KeyboardInterrupt:
            print(f"stopped watching {folder}", file=sys.stderr, flush=True)
    return 0


def run_query(args: argparse.Namespace) -> int:
    from citerag.query.conversation import read_history_file

    questions = _questions(args)
    history = read_history_file(args.history) if args.history is not None else []
    for question in questions:  # refused before any model loads, as the API refuses them
        checked_question(question)
    checked_top_k(args.top_k)
    where = checked_where(dict(args.where or []))
    target = resolve_target(args)
    collection = target.collection
    with open_engine(target) as engine:
        for question in questions:
            result = engine.answer(query_request(args, question, collection, history, where))
            if args.json:
                print(json.dumps(result.to_dict(), ensure_ascii=False))
            else:
                print(format_answer(question, result))
    return 0


def query_request(
    args: argparse.Namespace,
    question: str,
    collection: str,
    history: Sequence[ChatTurn],
    where: Mapping[str, str],
) -> AnswerRequest:
    """The request `query`'s options ask for `question` (the API builds the same one from the
    same options: `QueryRequest.to_request`)."""
    return AnswerRequest.of(
        question,
        collection,
        mode=args.mode,
        top_k=args.top_k,
        pages=args.pages,
        where=where,
        top_k_files=args.top_k_files,
        history=history,
    )


def run_chat(args: argparse.Namespace) -> int:
    """Each line of standard input is the next turn, condensed from the turns before it."""
    target = resolve_target(args)
    collection = target.collection
    history: list[ChatTurn] = []
    with open_engine(target) as engine:
        for line in _turns(sys.stdin):
            request = AnswerRequest.of(line, collection, mode=args.mode, history=history)
            result = engine.answer(request)
            if args.json:
                print(json.dumps(result.to_dict(), ensure_ascii=False), flush=True)
            else:
                print(format_answer(line, result), flush=True)
            history += [ChatTurn("user", line), ChatTurn("assistant", result.answer)]
    return 0


def _turns(stream: Any) -> Iterator[str]:
    interactive = stream.isatty()
    if hasattr(stream, "reconfigure"):  # bytes that are not UTF-8 reach the question's check
        stream.reconfigure(errors="surrogateescape")
    while True:
        if interactive:
            print("you> ", end="", file=sys.stderr, flush=True)
        line = stream.readline()
        if not line:
            return
        if line.strip():
            yield line.strip()


def run_tree(args: argparse.Namespace) -> int:
    from citerag.tree.render import outline_text
    from citerag.tree.stored import import_tree, resummarize, stored_tree

    if args.import_file is not None and args.summarize:
        raise InputError("Use --import or --summarize, not both; import first, then summarize.")
    target = resolve_target(args)
    collection = target.collection
    with open_engine(target) as engine:
        if args.import_file is not None:
            imported = import_tree(engine.docstore, collection, args.name, args.import_file)
            tree = imported.tree
            for fix in imported.fixes:
                print(f"fixed: {fix}", file=sys.stderr)
            nodes = len(tree.node_ids())
            print(f"imported {nodes} nodes from {args.import_file}", file=sys.stderr)
        elif args.summarize:
            tree, report = resummarize(engine.docstore, engine.settings, collection, args.name)
            print(
                f"summaries: {report.asked} written by the LLM, {report.cached} from the cache, "
                f"{report.failed} failed (kept as they were)",
                file=sys.stderr,
            )
        else:
            tree = stored_tree(engine.docstore, collection, args.name)
    if args.json:
        print(json.dumps(tree.to_pageindex(), ensure_ascii=False, indent=2))
    else:
        print(outline_text(tree))
    return 0


def _questions(args: argparse.Namespace) -> list[str]:
    if args.questions is not None:
        from citerag.text.bounded import read_bounded

        data = read_bounded(args.questions, MAX_QUESTIONS_FILE_BYTES, "Questions file")
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
        questions = [line for line in lines if line]
    else:
        questions = [args.text] if args.text and args.text.strip() else []
    if not questions:
        raise InputError("No question given; pass the question text or --questions FILE.")
    return questions


def run_list(args: argparse.Namespace) -> int:
    with open_engine() as engine:
        collections = [args.collection] if args.collection else None
        documents = engine.list_documents(collections)
    if args.json:
        print(json.dumps([d.to_dict() for d in documents], indent=2))
    else:
        print(format_documents(documents))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    with open_engine() as engine:
        removed = engine.delete(args.name, args.collection)
    if not removed:
        raise InputError(
            f"No document named {args.name!r} in collection {args.collection!r}; "
            "see `python main.py list`."
        )
    print(f"Deleted {removed} document(s) named {args.name!r} from {args.collection!r}.")
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    from citerag.engine import check_collection_name
    from citerag.store.inspect import format_inspection, inspect_collection

    collection = check_collection_name(args.collection)
    with open_engine() as engine:
        engine.check_collection(collection)
        if not engine.vectors.has_collection(collection):
            raise InputError(
                f"Milvus has no collection {collection!r}; see `python main.py list` for those "
                "that hold documents."
            )
        data = inspect_collection(engine.docstore, engine.vectors, collection, args.rows)
    print(json.dumps(data, indent=2, default=str) if args.json else format_inspection(data))
    return 0


def run_reindex(args: argparse.Namespace) -> int:
    with open_engine() as engine:
        repairs = engine.reindex(args.collection)
    print(f"Rebuilt the Milvus rows of {len(repairs)} document(s) in {args.collection!r}.")
    lost = [r.name for r in repairs if r.lost]
    if lost:
        print(f"Could not rebuild {', '.join(lost)}: ingest them again.")
    return 1 if lost else 0


def run_serve(args: argparse.Namespace) -> int:
    from citerag.article import article_folders
    from citerag.serve.server import serve

    target = load_target(args.article)
    serve(target.settings, args.host, args.port, article_folders(load_config()), target)
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    """The MCP server over stdio until the client closes it (stdout is the protocol's)."""
    from citerag.engine import check_collection_name
    from citerag.mcp_server.library import Library
    from citerag.mcp_server.server import build_server

    target = resolve_target(args)
    collection = check_collection_name(target.collection)
    with open_engine(target) as engine:
        build_server(Library(engine, collection)).run("stdio")
    return 0


LOG_LEVEL_VARIABLE = "RAG_LOG_LEVEL"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def configure_logging(verbose: bool, level_name: str = "") -> None:
    """Warnings and errors only, unless `--verbose` (DEBUG) or RAG_LOG_LEVEL asks for more: the
    quick start prints answers, not the libraries' INFO and DEBUG records."""
    name = "DEBUG" if verbose else (level_name.strip().upper() or "WARNING")
    if name not in LOG_LEVELS:
        raise InputError(
            f"{LOG_LEVEL_VARIABLE}={level_name!r} is not a log level; use one of "
            f"{', '.join(LOG_LEVELS)}."
        )
    level = getattr(logging, name)
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    log.setLevel(level)


COMMANDS = {
    "ingest": run_ingest,
    "query": run_query,
    "chat": run_chat,
    "list": run_list,
    "delete": run_delete,
    "tree": run_tree,
    "inspect": run_inspect,
    "reindex": run_reindex,
    "serve": run_serve,
    "mcp": run_mcp,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(__doc__.splitlines()[0]).parse_args(argv)
    try:
        from_env_file = env_file_variables()
        os.environ.update(from_env_file)  # the LLM SDKs and pymilvus read the environment
        configure_logging(args.verbose, os.environ.get(LOG_LEVEL_VARIABLE, ""))
        for warning in unknown_variable_warnings(from_env_file):
            log.warning(warning)
        check_milvus_environment()  # pymilvus reads MILVUS_URI as it is imported
        if args.command is None:
            return run_configured_article()
        return COMMANDS[args.command](args)
    except RagError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; nothing half-written was kept.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
