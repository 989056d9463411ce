"""Benchmarks: scripts that print tables; pytest runs each only as a tiny smoke test."""
