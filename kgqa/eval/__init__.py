"""Evaluation: KGQA answer metrics, retrieval recall@K and latency summaries."""
