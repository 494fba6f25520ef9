"""Helpers of benchmarks/quality_alignment.py (data loading, rendering, reference aligners)."""
