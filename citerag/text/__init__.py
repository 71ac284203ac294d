"""Text utilities every stage shares: tokens, stems, stop words, dates and years, sentences and
JSON out of an LLM's reply. They sit below every other package and import none of them."""
