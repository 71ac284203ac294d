"""The questions asked in a configured run, per article in config.ARTICLE_CONFIGS."""

from config import ACTIVE_ARTICLE

DEMO_QUERIES = [
    "What does the retrieval stage combine before reranking?",
    "Which parser had the highest table fidelity in Table 1?",
    "What does Figure 1 show?",
    "How is the fused score of a chunk computed?",
]

PAUL_GRAHAM_QUERIES = [
    "What did the author work on before college?",
    "What was Viaweb and what happened to it?",
    "Why did the author start Y Combinator?",
    "What did the author do in 2019?",
]

CAREER_AI_QUERIES = [
    "What are the three key steps of career growth in AI?",
    "How should someone choose AI projects to work on?",
]

NETFLIX_10K_QUERIES = [
    "What were Netflix's total revenues in 2020?",
    "How many paid memberships did Netflix have at the end of 2020?",
]

MICROSOFT_10K_QUERIES = [
    "What was Microsoft's revenue in fiscal year 2021?",
    "How did the Intelligent Cloud segment perform in fiscal year 2021?",
]

QUERIES_BY_ARTICLE: dict[str, list[str]] = {
    "demo": DEMO_QUERIES,
    "paul_graham_essay": PAUL_GRAHAM_QUERIES,
    "career_ai": CAREER_AI_QUERIES,
    "netflix_10k": NETFLIX_10K_QUERIES,
    "microsoft_10k": MICROSOFT_10K_QUERIES,
}

ACTIVE_QUERIES: list[str] = QUERIES_BY_ARTICLE.get(ACTIVE_ARTICLE, [])
