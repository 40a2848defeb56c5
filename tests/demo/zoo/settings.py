"""Module-level configuration, shared by everything that imports it."""

import os

DEFAULTS = {"animals": ["lion", "zebra"], "opening_hour": 9}


def mode() -> str:
    return os.environ.get("ZOO_MODE", "slow")
