"""A small project whose nested config dict is filled from environment variables.

Shared by the hunt's and the session's key-set tests: the polluter sets variables and loads
them into the dict; the victim reads the dict first.  File name -> text.
"""

from __future__ import annotations

TALLY: dict[str, str] = {
    "tally/__init__.py": "",
    "tally/config.py": '''
import copy, os

_CONFIG = {"session": {"tally_host": "", "tally_port": "443"},
           "storage": {"tally_store": "", "tally_folder": ""}}
_config = copy.deepcopy(_CONFIG)

def read():
    return copy.deepcopy(_config)

def load(values=None):
    for section, content in _config.items():
        for key in content:
            given = (values or {}).get(key, "")
            content[key] = given or os.getenv(key, _CONFIG[section][key])
''',
    "test_a_config.py": '''
from tally.config import load, read

def test_read():
    assert read()["storage"] == {"tally_store": "", "tally_folder": ""}, "loaded before"
    load({"tally_host": "example"})
    assert read()["storage"] == {"tally_store": "", "tally_folder": ""}, "from the env"
''',
    "test_b_deploy.py": '''
import os
from tally.config import load, read

def test_deploy():
    os.environ["tally_store"] = "datastore1"
    os.environ["tally_folder"] = "vms"
    load()
    assert read()["storage"]["tally_store"] == "datastore1"
''',
}
