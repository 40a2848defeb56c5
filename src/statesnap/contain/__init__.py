"""Containment features, each a pytest plugin of its own (isolation, strict, restore, guards...)."""
