"""A plugin registry: a module-level list that plugins append to."""

PLUGINS: list = []


def register(name: str) -> None:
    PLUGINS.append(name)
