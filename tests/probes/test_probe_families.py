"""The probe families (``probes/attributes/``, ``files/``, ``torch/``, ``scistack/``) are a
layout only: the probe names a record holds, and that the CLI and replays look classes up by,
are the ones every run has written, and the golden records' names still find their class.

The family packages' ``__init__`` files import nothing (a session that loads one part pays for
no other), and ``statesnap.probes.torch`` is never taken for the real ``torch``.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from statesnap.analysis.hints import probe_class
from statesnap.probes.builtin import BUILTIN, ON_DEMAND

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "snapshots" / "records"
PROBES = ROOT / "src" / "statesnap" / "probes"
FAMILIES = ("attributes", "files", "torch", "scistack")

#: The names every record written so far uses, in the order the probes run: a record's keys
#: are ``name:key`` and its header lists these; changing one orphans every stored record.
NAMES = ("env", "modules", "syspath", "cwd", "attributes", "threads", "fds", "children",
         "files", "logging", "warnings", "process", "random", "torch", "scistack", "nvml")


def _name(module: str, cls: str) -> str:
    return str(getattr(importlib.import_module(module), cls).name)


def test_the_builtin_names_are_the_recorded_ones() -> None:
    assert tuple(_name(m, c) for m, c in BUILTIN) == NAMES
    assert [_name(m, c) for m, c in ON_DEMAND] == ["fixtures"]


def test_the_documented_list_is_the_builtin_one() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    found = re.search(r"The probe names, in the order they run: (.*?) \(`BUILTIN`", text,
                      re.DOTALL)
    assert found is not None
    assert tuple(re.findall(r"`(\w+)`", found.group(1))) == NAMES


@pytest.mark.parametrize("record", sorted(p.name for p in RECORDS.glob("format*-sample.jsonl")))
def test_the_golden_records_names_find_their_class(record: str) -> None:
    with (RECORDS / record).open(encoding="utf-8") as fh:
        header = json.loads(fh.readline())
    names = [p["name"] for p in header["probes"]]
    builtin = [n for n in names if n in NAMES]
    # An older record lacks the probes added since, never renames or reorders one.
    assert len(builtin) >= 8 and builtin == [n for n in NAMES if n in names]
    for name in builtin:
        cls = probe_class(name)
        assert cls is not None, f"{record}: no built-in probe is called {name!r}"
        assert cls.name == name
    # The rest are the recorded run's own probes (a conftest's), never a built-in's name.
    assert [probe_class(n) for n in names if n not in NAMES] == [None] * (len(names)
                                                                          - len(builtin))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_init_is_a_docstring_only(family: str) -> None:
    init = PROBES / family / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree)
    assert len(tree.body) == 1, f"{init} holds more than its docstring"
    assert (PROBES / family / "probe.py").is_file()


def test_the_probes_import_absolutely() -> None:
    # A relative ``import torch`` cannot happen, and an absolute one is the real torch.
    relative = [f"{p.relative_to(PROBES)}:{node.lineno}" for p in PROBES.rglob("*.py")
                for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == []


def test_the_torch_family_never_shadows_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    code = ("import statesnap.probes.torch.probe as p, statesnap.probes.torch.state, sys;"
            "from pathlib import Path; from statesnap.probes.base import ProbeContext;"
            "probe = p.TorchProbe(); probe.setup(ProbeContext(rootdir=Path.cwd()));"
            "before = probe.read(); import torch;"
            "print(torch.__file__); print(hasattr(torch, 'Tensor'));"
            "print(len(before), len(probe.read()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.split("\n")
    assert "statesnap" not in out[0]
    assert out[1] == "True"
    # The probe read nothing while torch was absent, and reads the real torch once imported.
    before, after = map(int, out[2].split())
    assert before == 0 and after > 10
