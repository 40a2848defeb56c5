"""The run record: the versioned JSON Lines journal, its header, paths and failure signatures."""
