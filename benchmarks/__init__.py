"""Benchmark scripts and helpers (run from the project root; not installed)."""
