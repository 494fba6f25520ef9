"""One-off experiments the research notes answer (index: benchmarks/README.md)."""
