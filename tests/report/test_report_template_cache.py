"""Compiled report templates kept on disk: read back when valid, never at the page's cost."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from jinja2 import Environment
from report_records import RecordFactory, entry, env_added

from statesnap.output.report import render
from statesnap.output.report.render import make_environment
from statesnap.output.report.templatecache import PycacheBytecode, pycache_for
from statesnap.output.report.views import build_view


@pytest.fixture(autouse=True)
def _bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever PYTHONDONTWRITEBYTECODE says where the tests run."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _page(env: Environment, make_record: RecordFactory) -> str:
    """The whole report of a record with a leak, rendered through ``env``."""
    record = make_record([entry(0, "t.py::test_a", changes=[env_added("K", "v")]),
                          entry(1, "t.py::test_b", "failed")])
    view = build_view([record], [], generated=1.0)
    original = render.environment
    render.environment = lambda: env  # type: ignore[assignment]
    try:
        return render.render(view)
    finally:
        render.environment = original


def _no_compiling(env: Environment) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a template was compiled, not read from the cache")

    env.compile = refuse  # type: ignore[method-assign]


def test_a_page_from_compiled_templates_is_the_page_from_their_source(
        tmp_path: Path, make_record: RecordFactory) -> None:
    fresh = _page(make_environment(None), make_record)
    first = _page(make_environment(PycacheBytecode(str(tmp_path / "c"))), make_record)
    assert len(list((tmp_path / "c").iterdir())) >= 5  # report.html.j2 and its includes
    cached = make_environment(PycacheBytecode(str(tmp_path / "c")))
    _no_compiling(cached)
    assert _page(cached, make_record) == first == fresh


def test_a_damaged_entry_is_compiled_again(tmp_path: Path,
                                           make_record: RecordFactory) -> None:
    fresh = _page(make_environment(None), make_record)
    _page(make_environment(PycacheBytecode(str(tmp_path))), make_record)
    assert list(tmp_path.iterdir())
    for path in tmp_path.iterdir():
        path.write_bytes(path.read_bytes()[:40] + b"\x00garbage")
    assert _page(make_environment(PycacheBytecode(str(tmp_path))), make_record) == fresh


def test_a_directory_that_cannot_be_made_costs_only_the_cache(
        tmp_path: Path, make_record: RecordFactory) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    fresh = _page(make_environment(None), make_record)
    assert _page(make_environment(PycacheBytecode(str(blocker / "cache"))),
                 make_record) == fresh


def test_nothing_is_written_under_dont_write_bytecode(
        tmp_path: Path, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _page(make_environment(PycacheBytecode(str(tmp_path / "c"))), make_record)
    assert not (tmp_path / "c").exists()


def test_the_cache_sits_with_the_modules_bytecode_and_names_its_settings(
        tmp_path: Path) -> None:
    cache = pycache_for(render.__file__)
    assert cache is not None
    assert Path(cache.directory) == Path(importlib.util.cache_from_source(render.__file__)).parent
    # Other environment settings (another render.py) never read these entries.
    settings = tmp_path / "render.py"
    settings.write_text(Path(render.__file__).read_text() + "\n# changed\n")
    other = pycache_for(str(settings))
    assert other is not None
    assert other.pattern != cache.pattern
    assert sys.implementation.cache_tag in cache.pattern
