"""Speed benchmarks: decoders, learners, the app, batch work and the project store (index: benchmarks/README.md)."""
