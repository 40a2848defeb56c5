"""A pytest plugin that writes pytest's option table to a file and ends the run before it starts.

Loaded with ``-p statesnap.plugin.optiondump`` in the checkout, with the recorded run's own
arguments, so the plugins and conftests that run loaded are loaded here too: their options'
arities come from pytest's parser, as a replay child's do (statesnap.replay.args).  Nothing is
configured, collected or written but the table: ``pytest_cmdline_main`` answers first.
"""

from __future__ import annotations

import json
import os

import pytest

from statesnap.plugin.start import pytest_option_table
from statesnap.replay.args import OPTION_TABLE_ENV as ENV


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int:
    table = pytest_option_table(config)
    data = {
        "nargs": dict(table.nargs),
        "aliases": {k: sorted(v) for k, v in table.aliases.items()},
        "own": sorted(table.own),
        "fromfile_prefix": table.fromfile_prefix,
    }
    with open(os.environ[ENV], "w", encoding="utf-8") as out:
        json.dump(data, out)
    return 0
