"""The screenshots of the README and the docs, from the real app (index: benchmarks/README.md)."""
