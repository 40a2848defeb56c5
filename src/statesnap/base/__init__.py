"""The bottom layer: helpers any layer may use (version, argument checks, file facts,
whole-file writes, redaction)."""
