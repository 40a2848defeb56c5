"""The pytest layer: the hooks of the core plugin, its options, outputs and terminal section."""
