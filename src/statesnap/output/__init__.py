"""Findings and records as text, the summary JSON and the HTML report."""
