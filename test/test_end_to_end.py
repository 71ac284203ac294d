"""The CLI end to end on real PDFs with the embedded stack (Milvus Lite, SQLite, bm25s, MiniLM)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pymupdf
import pytest
from helpers import DEMO_PDF, shared_eval_file

import main

pytestmark = pytest.mark.slow
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("storage")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_STORAGE_DIR", str(path))
        for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "RAG_RERANKER"):
            patch.delenv(variable, raising=False)
        yield path


@pytest.fixture(scope="module")
def paul_graham(storage: Path) -> Path:
    """The essay ingested into collection "pg" (a no-op when a test before already did it).

    Tests that only query "pg" take this fixture, so each passes when run alone as well.
    """
    pdf = shared_eval_file("paul_graham", "paul_graham_essay.pdf")
    assert main.main(["ingest", str(pdf), "--collection", "pg"]) == 0
    return pdf


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listing(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0
    return json.loads(out)


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def test_configured_demo_run_prints_cited_answers(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    assert "citerag_demo.pdf: ingested" in out
    assert len(CITATION.findall(out)) >= 4
    assert "page" in out


def test_ingest_and_query_paul_graham_contract(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdf = shared_eval_file("paul_graham", "paul_graham_essay.pdf")
    code, out, err = run(capsys, "ingest", str(pdf), "--collection", "pg")
    assert code == 0, err
    code, out, err = run(
        capsys,
        "query",
        "What computer did the author first program on?",
        "--collection",
        "pg",
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    assert set(result) == {"answer", "sources", "metadata"}
    sources = result["sources"]
    assert sources and result["metadata"]["reranked"] is True
    numbers = [s["citationNumber"] for s in sources]
    assert numbers == list(range(1, len(sources) + 1))
    assert {int(n) for n in CITATION.findall(result["answer"])} <= set(numbers)
    assert any("1401" in s["content"] for s in sources[:3]), "the IBM 1401 passage should rank high"
    with pymupdf.open(pdf) as document:
        for source in sources:
            assert 1 <= source["pageNumber"] <= document.page_count
            page_words = words(document[source["pageNumber"] - 1].get_text())
            assert len(words(source["content"]) - page_words) <= 2, (
                "source text must be on its page"
            )
            for highlight in source["highlights"]:
                start, end = highlight["startOffset"], highlight["endOffset"]
                assert source["content"][start:end] == highlight["text"]


def test_second_ingest_changes_no_count(storage: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = shared_eval_file("paul_graham", "paul_graham_essay.pdf")
    run(capsys, "ingest", str(pdf), "--collection", "pg")
    before = listing(capsys)
    code, out, _ = run(capsys, "ingest", str(pdf), "--collection", "pg")
    assert code == 0 and "skipped" in out
    after = listing(capsys)
    assert after == before
    pg = [d for d in after if d["collection"] == "pg"]
    assert len(pg) == 1 and pg[0]["pages"] == 28
    assert pg[0]["chunksInMilvus"] == pg[0]["chunksInDocstore"] > 0


def test_page_range_filter_and_question_file(
    paul_graham: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text("What was Viaweb?\n\nWhy did the author paint?\n")
    code, out, err = run(
        capsys,
        "query",
        "--questions",
        str(questions),
        "--collection",
        "pg",
        "--json",
        "--pages",
        "3-5",
    )
    assert code == 0, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == 2
    for answer in answers:
        assert answer["sources"]
        assert all(3 <= s["pageNumber"] <= 5 for s in answer["sources"])


def test_without_reranker_metadata_says_not_reranked(
    paul_graham: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_RERANKER", "none")
    code, out, err = run(capsys, "query", "What was Viaweb?", "--collection", "pg", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["metadata"]["reranked"] is False
    scores = [s["score"] for s in result["sources"]]
    assert scores == sorted(scores, reverse=True)


def _corrupt(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 200)
    return path


def _encrypted(path: Path) -> Path:
    with pymupdf.open() as document:
        document.new_page().insert_text((72, 72), "secret text")
        aes_256 = pymupdf.PDF_ENCRYPT_AES_256  # type: ignore[attr-defined]
        document.save(path, encryption=aes_256, user_pw="u", owner_pw="o")
    return path


def _scanned(path: Path) -> Path:
    with pymupdf.open() as document:
        page = document.new_page()
        pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
        pixmap.clear_with(200)
        page.insert_image(page.rect, pixmap=pixmap)
        document.save(path)
    return path


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda p: p / "missing.pdf", "does not exist"),
        (lambda p: _corrupt(p / "corrupt.pdf"), "corrupt|no pages"),
        (lambda p: _encrypted(p / "encrypted.pdf"), "encrypted"),
        (lambda p: _scanned(p / "scanned.pdf"), "text layer"),
    ],
)
def test_bad_pdfs_get_one_sentence_and_change_nothing(
    storage: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make: Callable[[Path], Path],
    fragment: str,
) -> None:
    before = listing(capsys)
    code, out, err = run(capsys, "ingest", str(make(tmp_path)), "--collection", "bad")
    assert code != 0
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and re.search(fragment, lines[0].lower()), err
    assert listing(capsys) == before


def test_delete_removes_the_document_everywhere(
    storage: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ingest", str(DEMO_PDF), "--collection", "scratch")
    assert code == 0, err
    assert any(d["collection"] == "scratch" for d in listing(capsys))
    code, _, err = run(capsys, "delete", DEMO_PDF.name, "--collection", "scratch")
    assert code == 0, err
    assert not any(d["collection"] == "scratch" for d in listing(capsys))
    code, _, err = run(capsys, "query", "anything", "--collection", "scratch")
    assert code != 0 and "no documents" in err


def test_llm_answer_through_the_cli_cites_the_sources_it_was_given(
    paul_graham: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_openai_server import ScriptedReply, running_server

    reply = (
        "He started Viaweb <doc=paul_graham_essay.pdf;page=99> and sold it [1]. "
        "Nothing supports this [42]."
    )
    with running_server([ScriptedReply(reply, prompt_tokens=300, completion_tokens=20)]) as server:
        monkeypatch.setenv("LLM_PROVIDER", "openai_like")
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "scripted-model")
        code, out, err = run(capsys, "query", "What was Viaweb?", "--collection", "pg", "--json")
    assert code == 0, err
    result = json.loads(out)
    prompt = "\n".join(str(m["content"]) for m in server.requests[0]["messages"])
    for source in result["sources"]:
        assert f"[{source['citationNumber']}] paul_graham_essay.pdf" in prompt
    cited = [int(n) for n in CITATION.findall(result["answer"])]
    assert cited and set(cited) <= {s["citationNumber"] for s in result["sources"]}
    assert "<doc=" not in result["answer"] and "[42]" not in result["answer"]
    assert result["metadata"]["model"] == "scripted-model"
    assert result["metadata"]["tokensUsed"] == 320
