"""Tests written by someone in a hurry: each passes, and each leaves something behind."""

import logging
import os
import sys
import threading
import types
from pathlib import Path

from zoo import pricing, registry, settings

DEMO = Path(__file__).resolve().parent.parent


def test_enable_fast_mode():
    os.environ["ZOO_MODE"] = "fast"  # should have been monkeypatch.setenv
    assert settings.mode() == "fast"


def test_add_penguins():
    settings.DEFAULTS["animals"].append("penguin")  # mutates the shared list in place
    assert "penguin" in settings.DEFAULTS["animals"]


def test_prices_in_euros(monkeypatch):
    monkeypatch.setenv("ZOO_CURRENCY", "EUR")  # undone after the test...
    assert pricing.price_table()["currency"] == "EUR"  # ...but the cache keeps EUR


def test_quiet_logs():
    logging.getLogger("zoo").setLevel(logging.CRITICAL)


def test_fake_json5():
    fake = types.ModuleType("json5")
    fake.dumps = lambda obj: "<json5 stub>"
    sys.modules["json5"] = fake  # a stub left behind


def test_register_night_plugin():
    registry.register("night")


def test_night_tours_flag():
    os.environ["ZOO_NIGHT_TOURS"] = "1"


def test_build_cache():
    build = DEMO / "build"
    build.mkdir(exist_ok=True)
    (build / "cache.json").write_text("{}")  # a build artifact nobody cleans up


def test_feeding_timer():
    # A background timer that outlives the test (harmless here, but visible).
    stop = threading.Event()
    threading.Thread(target=stop.wait, args=(2.0,), name="feeding-timer", daemon=True).start()


def test_work_in_tmp(tmp_path):
    os.chdir(tmp_path)  # should have been monkeypatch.chdir
