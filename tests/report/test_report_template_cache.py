"""Compiled report templates kept on disk: read back when valid, never at the page's cost."""

from __future__ import annotations

import importlib.util
import marshal
import sys
from pathlib import Path

import pytest
from jinja2 import Environment
from jinja2.bccache import Bucket
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


def test_an_entry_is_read_whole_not_unmarshalled_through_the_file(
        tmp_path: Path, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``marshal.load`` on a file object makes a Python call per object it reads (about 1.5 M
    instructions a template): the entry is read in one go and unmarshalled from bytes."""
    first = _page(make_environment(PycacheBytecode(str(tmp_path))), make_record)

    def refuse(*args: object) -> None:
        raise AssertionError("marshal.load on the cache file")

    monkeypatch.setattr(marshal, "load", refuse)
    cached = make_environment(PycacheBytecode(str(tmp_path)))
    _no_compiling(cached)
    assert _page(cached, make_record) == first


def test_an_entry_of_other_source_or_another_jinja2_is_not_used(tmp_path: Path) -> None:
    env = make_environment(PycacheBytecode(str(tmp_path)))
    cache = env.bytecode_cache
    assert isinstance(cache, PycacheBytecode)
    source, filename, _ = env.loader.get_source(env, "_macros.html.j2")  # type: ignore[union-attr]
    env.get_template("_macros.html.j2")  # compiled and written
    (entry,) = tmp_path.iterdir()
    assert cache.get_bucket(env, "_macros.html.j2", filename, source).code is not None
    # The template's source changed since: its checksum differs.
    assert cache.get_bucket(env, "_macros.html.j2", filename, source + " ").code is None
    # Written by another Jinja2 (another magic), or cut short after the checksum.
    data = entry.read_bytes()
    for damaged in (b"j3" + data[2:], data[:len(data) // 2]):
        entry.write_bytes(damaged)
        bucket = Bucket(env, cache.get_cache_key("_macros.html.j2", filename),
                        cache.get_source_checksum(source))
        assert cache._get_cache_filename(bucket) == str(entry)
        cache.load_bytecode(bucket)
        assert bucket.code is None
