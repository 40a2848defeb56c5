"""Dunder-named attributes: the project's own flags are state, Python's machinery is not."""

from __future__ import annotations

import copy
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from statesnap.base.redact import Redactor
from statesnap.probes.attributes.probe import AttributesProbe
from statesnap.probes.base import ProbeContext
from statesnap.state.diff import diff_maps

SOURCE = '''
__all__ = ["Gauge"]
__version__ = "1.0"


class Gauge:
    """Checks its settings once per class: a flag flipped by ``__new__``."""

    __initialised__ = False
    __registry__ = []

    def __new__(cls, **kwargs):
        cls.__initialised__ = True
        return super().__new__(cls)

    def __repr__(self):
        return "Gauge()"

    @classmethod
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
'''


@pytest.fixture
def gauges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"dunder_gauges_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    importlib.import_module(name)
    yield name
    sys.modules.pop(name, None)


def test_a_flag_of_the_projects_own_is_a_key_pythons_dunders_are_not(
        gauges: str, tmp_path: Path) -> None:
    probe = AttributesProbe()
    probe.setup(ProbeContext(rootdir=tmp_path, redactor=Redactor()))
    before = {k: v for k, v in probe.read().items() if k.startswith(gauges + ":")}
    dunders = sorted(k for k in before if "__" in k.split(":", 1)[1])
    assert dunders == [f"{gauges}:Gauge.__initialised__", f"{gauges}:Gauge.__registry__"]
    module = sys.modules[gauges]
    copy.copy(module.Gauge())  # copyreg caches __slotnames__ on the class: not a change
    module.Gauge.__registry__.append("probe")
    probe.token()
    changes = {c.key: (c.before, c.after) for c in diff_maps("attributes", before,
                                                               probe.read())}
    assert set(changes) == {f"{gauges}:Gauge.__initialised__", f"{gauges}:Gauge.__registry__"}
    assert changes[f"{gauges}:Gauge.__initialised__"] == ("False", "True")
    # Put back by a key-level replay like any class attribute.
    saved_probe = AttributesProbe()
    saved_probe.setup(ProbeContext(rootdir=tmp_path, redactor=Redactor()))
    saved = saved_probe.save()
    module.Gauge.__initialised__ = "later"
    assert saved_probe.restore(saved, [f"{gauges}:Gauge.__initialised__"]) == [
        f"{gauges}:Gauge.__initialised__"]
    assert module.Gauge.__initialised__ is True
