"""Quality benchmarks: the accuracy tables of the README and the docs, and data safety (index: benchmarks/README.md)."""
