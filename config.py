"""The user's choices for a run: which articles, what each changes, where to store.

The defaults live once, in `citerag/settings/groups.py`; this file holds only what differs.
Environment variables override the storage and model entries (each declared on its field in
`citerag/settings/groups.py`; README.md lists them).
"""

from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent
SHARED_EVAL_DIR = PROJECT_DIR.parent / "shared" / "eval"

# Each article: where its PDF lives, the collection it is stored in, and its extraction schema.
ARTICLE_CONFIGS: dict[str, dict[str, str]] = {
    "demo": {
        "directory": str(PROJECT_DIR / "demo"),
        "filename": "citerag_demo.pdf",
        "collection": "demo",
        "schema": "technical",
    },
    "paul_graham_essay": {
        "directory": str(SHARED_EVAL_DIR / "paul_graham"),
        "filename": "paul_graham_essay.pdf",
        "collection": "paul_graham",
        "schema": "essay",
    },
    "career_ai": {
        "directory": str(SHARED_EVAL_DIR / "career_ai"),
        "filename": "eBook-How-to-Build-a-Career-in-AI.pdf",
        "collection": "career_ai",
        "schema": "career",
    },
    "netflix_10k": {
        "directory": str(SHARED_EVAL_DIR / "finance"),
        "filename": "NETFLIX_2020_10K.pdf",
        "collection": "netflix_10k",
        "schema": "financial",
    },
    "microsoft_10k": {
        "directory": str(SHARED_EVAL_DIR / "finance"),
        "filename": "MICROSOFT_2021_10K.pdf",
        "collection": "microsoft_10k",
        "schema": "financial",
    },
    # A shelf: many filings in one collection. With no "filename", the article names a folder;
    # `main.py ingest FOLDER --collection filings` fills it, and questions over "filings" use
    # the financial profile (statement pages, analyst concepts, the kind of filing that reports
    # what is asked).
    "filings": {
        "directory": str(SHARED_EVAL_DIR / "financebench_dev" / "pdfs"),
        "collection": "filings",
        "schema": "financial",
    },
}

ACTIVE_ARTICLE = "demo"

# What this project changes for every article. Every default (and why it was chosen) is
# defined once, in `citerag/settings/groups.py`; set here only what you change, e.g.
# {"chunk_size": 512, "reranker": "none"}.
DEFAULT_RAG_SETTINGS: dict[str, object] = {}

# Per-article changes on top of DEFAULT_RAG_SETTINGS, e.g. {"netflix_10k": {"chunk_size": 512}}.
ARTICLE_RAG_OVERRIDES: dict[str, dict[str, object]] = {}

# Storage and models: an upper-case constant here sets the setting of that name for every
# article (the environment variable still wins), e.g.
#   MILVUS_URI = "http://localhost:19530"      # empty: Milvus Lite under STORAGE_DIR
#   MONGODB_URI = "mongodb://localhost:27017"  # empty: SQLite docstore under STORAGE_DIR
#   LLM_PROVIDER = "openai"  # "", "openai", "anthropic", "gemini", "ollama", "openai_like";
#                            # empty: no LLM, answers are extractive
#   API_KEY = "..."  # the HTTP API's key: `Authorization: Bearer KEY` or `X-API-Key: KEY`
STORAGE_DIR = str(PROJECT_DIR / "storage")
