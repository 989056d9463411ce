"""Weak-label construction and training loops for the triple scorer and the extractive reader."""
