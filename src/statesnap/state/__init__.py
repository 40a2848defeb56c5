"""Global state at a moment and between moments: snapshots, their diffs, per-test tracking."""
