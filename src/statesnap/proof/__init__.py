"""Proof by replay: verification of findings and the end-of-session pipeline."""
