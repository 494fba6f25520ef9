"""Benchmarks and research experiments (not installed): see ``benchmarks/README.md`` for the index."""
