"""Helpers of benchmarks/quality/quality_alignment.py (data loading, rendering, reference aligners)."""
