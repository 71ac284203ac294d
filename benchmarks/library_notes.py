"""What `bench_library.py` writes under its ingest table: the levers measured once during
development (static text, not re-run by the script)."""

LEVER_NOTES = [
    "Levers measured once during development (not re-run by this script):",
    "- Kept: ONNX Runtime for the embedder where OpenVINO is not installed (float32: PyTorch's "
    "vectors to 1e-6), every distinct sentence text encoded once (7% of the sentences' word "
    "pieces recur: table rules, repeated rows), and the next file parsed in a background process "
    "while the current one is embedded (the 'parse' stage above is the time the main process "
    "still waited for it).",
    "- Kept, the default on a CPU: OpenVINO runs the packed graph "
    "(`citerag/embed/graph_runners.py`, `openvino==2026.4.1` from PyPI, Intel, Apache-2.0), in "
    "bfloat16 where the CPU computes it natively (this one has AVX512_BF16: matrix products in "
    "bfloat16, sums in float32), else in float32. 4,000 of the library's sentences, one process, "
    "quiet: ONNX Runtime float32 6.52 s, OpenVINO float32 5.35 s (the same vectors, within "
    "2e-7), OpenVINO bfloat16 3.09 s (cosine to float32 at least 0.99995, mean 0.99999; int8's "
    "is 0.99). One question of 14 word pieces: 2.2 ms with ONNX Runtime, 1.6 ms float32, 0.84 ms "
    "bfloat16; import and compile 0.35 s. Whole ingests: the `onnx` and `openvino` rows above "
    "are ONNX Runtime and OpenVINO in float32; an earlier quiet run of the same code gave the "
    "default 38.5 s against stock 35.3 s (1.09x), `onnx` 58.8 s and `openvino` 53.5 s. "
    "Re-measured with bfloat16 as the default: this file's hits and `retrieval.md` per document "
    "are the same as float32's at every k on every set (10-K 0.64 / 0.96 / 1.00, MMLongBench-Doc "
    "dev 0.534 / 0.828 / 0.828; per document finance_qa 0.66 / 0.92 / 0.98 / 1.00, statements "
    "0.75 / 0.958 / 1 / 1, the essay's context recall@5/@10 0.765 / 0.872). The vectors are "
    "within a ten-thousandth of the model's, so a collection keeps its model "
    "(`local:all-MiniLM-L6-v2`) and its stored documents: one built with ONNX Runtime or PyTorch "
    "answers from this backend and back.",
    "- Kept: sequence packing (`citerag/embed/packed.py`): short texts are laid side by side in "
    "rows of up to 256 word pieces of an exported ONNX graph that keeps them apart "
    "(block-diagonal attention, positions restarting per text), so each text gets exactly the "
    "vectors it gets alone (1.8e-7 to SentenceTransformer's; `retrieval.md` and this file's hits "
    "re-run: unchanged) while the model runs on full rows. 1,500 of the library's sentences: "
    "15.0 s one at a time, 7.7 s packed (best of three interleaved runs, loaded machine); page "
    "heads, already near full rows, gain little.",
    "- Kept: parsing reads each page's drawings once and gives PyMuPDF's table finder only the "
    "character fields its line detection reads (`citerag/parse/table_chars.py`): the parsed "
    "documents of all 19 PDFs are the same byte for byte, and parsing them took 87 s instead of "
    "127 s (one interleaved run, loaded machine). Table finding is still most of parsing.",
    "- Kept: a page of more than 10,000 vector paths is a picture (a map, a chart drawn point by "
    "point) and is not searched for ruled tables; the busiest table page in the shared PDFs has "
    "under 900 paths. One MMLongBench-Doc dev report has two such pages (16,856 and 187,107 "
    "paths); on both the finder had wrapped the whole page in one false table. Parsing the 19 "
    "PDFs in one process: 26.9 s before, 19.5 s after (load average 1.5); the page hits are "
    "unchanged.",
    "- Kept: three files parsed ahead instead of one (the first one too), and the model loaded "
    "in a thread while the first file is parsed: the main process waited 6.1 s for the parser "
    "before, 1.3 s in this file's run.",
    "- Kept: a process that embeds with the packed graph imports neither PyTorch nor "
    "transformers nor sentence-transformers (the model folder's files say whether packing "
    "reproduces the model; the tokenizer's Rust core is saved beside the graph once, its ids "
    "identical to transformers' on the library's 16,531 texts; 'auto' asks PyTorch for a GPU "
    "only where a GPU driver is present). Loading the embedder and embedding one text: 5.3 s "
    "before, 0.37 s after; `python main.py` on the stored demo 7.3 s before, 2.7 s after (quiet "
    "machine, second of two runs each).",
    "- Kept: a page's paths counted in C before PyMuPDF builds its Python drawings (the two map "
    "pages' 204,000 paths cost 4.5 s of conversion) and each page's text extracted once for the "
    "table finder's words and the page's lines: parse CPU of the 19 PDFs 19.5 s, then 16.7 s, "
    "then 14.4 s, the parsed documents byte for byte the same.",
    "- Kept: packed rows of 128 word pieces instead of 256 (a longer text gets a row of its "
    "own): the library's sentences 27.3 s instead of 30.0 s (64: 7.2 s and 160: 6.9 s against "
    "6.7 s for 128 on 4,000 of them), vectors within 2e-7; and ONNX Runtime's idle threads no "
    "longer spin: whole ingests of 58.2 and 58.3 s against 59.4 and 61.3 s spinning (two "
    "interleaved quiet runs), because the background parse needs the core they hold.",
    "- No gain: ONNX Runtime's transformer optimizer (it fused the GELUs and layer norms but not "
    "the attention, whose mask the packed graph builds: 7.1 s against 6.4 s), and 3 or 4 "
    "intra-op threads instead of 2 (65.8 and 60.4 s against 60.2 s).",
    "- Not the default: `onnx-int8` (the packed graph with int8 weights, one scale per weight "
    "column: cosine 0.99 to float32; one scale per tensor, as sentence-transformers' own int8 "
    "export does, gave 0.95 on packed rows). Its own run of the final code "
    "(`library_onnx-int8.md`, quiet): ingest 38.9 s against stock 36.0 s (1.08x); 10-K "
    "hit@1/5/10 0.64 / 0.96 / 1.00, level with float32; MMLongBench-Doc dev 0.552 / 0.828 / "
    "0.828 against float32's 0.534 / 0.828 / 0.828. Before running headers were kept once it had "
    "lost a dev question at hit@1 (0.517 against 0.534). Per document "
    "(`retrieval_sentence_vectors_separate_onnx-int8.md`, both rows int8) the 10-K and statement "
    "questions are level with float32 at every k, and the essay's context recall@5 is 0.751 "
    "against 0.765 (@10 0.867 against 0.872): more than the 0.01 a default may lose. It also "
    "changes the vectors a collection records (`local:...+int8`), so collections built with "
    "float32, or asked from a GPU machine where `auto` picks PyTorch, would need their backend "
    "named. It stays a setting, and OpenVINO in bfloat16 is as fast without moving the vectors.",
    "- Rejected: int8 with the feed-forward output projections kept in float32 (cosine 0.996 "
    "instead of 0.992, sentences 1.42x faster than float32 instead of 1.74x): it flipped more "
    "questions, not fewer (per document the 10-K recall@1/3/5 fell to 0.56 / 0.90 / 0.96; the "
    "library's dev hit@5 to 0.793).",
    "- Rejected: page heads of 600 characters instead of 1,200 (the heads are 140,045 of the "
    "536,758 word pieces encoded): the 10-K questions' recall@1/3/10 per document fell from 0.64 "
    "/ 0.92 / 1.00 to 0.58 / 0.88 / 0.98.",
    "- Not the default: `sentence_vectors=pooled` (late chunking: each page encoded once, the "
    "head in one window of up to 254 word pieces, the rest in windows of 126 cut at sentence "
    "starts, each sentence the mean of its own tokens; its ingest row above: it reads token "
    "vectors through sentence-transformers on ONNX Runtime in float32, so it is now slower than "
    "the packed default). Asked of the whole library (a separate run of the same code): 10-K "
    "hit@1/5/10 0.58 / 0.90 / 0.96 against the default's 0.56 / 0.92 / 0.96, MMLongBench-Doc dev "
    "0.50 / 0.79 / 0.81 against 0.48 / 0.74 / 0.79. With `onnx-int8` as well: 0.60 / 0.92 / 0.96 "
    "and 0.48 / 0.78 / 0.81. Per document (`retrieval_sentence_vectors_pooled*.md`) pooling, "
    "float32 or int8, costs the 10-K questions recall@10 (0.98 against 1.00) and recall@1 "
    "(0.04-0.06). The 10-K hit@5 falls by one question library-wide, more than the 0.01 allowed, "
    "so it is a setting, not the default. Windows of 254 throughout did no better (10-K 0.56 / "
    "0.90 / 0.96, MMLongBench-Doc 0.50 / 0.78 / 0.81).",
    "- Rejected: page-head vectors as the mean of the page's first sentences' vectors instead of "
    "a second encoding of the head (would save about a third of the embedding): page-head "
    "ranking alone fell from hit@5 0.72 to 0.58 on the 10-K questions and from 0.64 to 0.47 on "
    "the MMLongBench-Doc dev questions. (The pooled path's head is a real encoding of the head.)",
    "- Rejected: PyMuPDF's table finder run on bands of strokes instead of the whole page: 79.6 "
    "s to 72.0 s of table finding over the 404 pages with strokes, but 41 of those pages' tables "
    "changed.",
    "- No gain (before packing): encoding sentences in batches of 32, 256 or 1024 instead of 64 "
    "(within the noise of a shared machine, 1024 slower); sentence-transformers already sorts "
    "each call's texts by length, so padding is small. Short inputs were slow per word piece for "
    "another reason: small matrices, which packing removes.",
]
