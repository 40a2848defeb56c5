"""Replays: the recorded invocation's arguments, reproduction commands, and fresh-process runs."""
