"""The victims: each passes alone, and fails after the admin tests ran first."""

import logging
import os
from pathlib import Path

from zoo import formats, pricing, registry, settings

DEMO = Path(__file__).resolve().parent.parent


def test_default_mode_is_slow():
    assert settings.mode() == "slow"


def test_default_animals():
    assert settings.DEFAULTS["animals"] == ["lion", "zebra"]


def test_prices_in_dollars():
    assert pricing.price_table()["currency"] == "USD"


def test_warnings_are_logged(caplog):
    logging.getLogger("zoo").warning("the lion escaped")
    assert "the lion escaped" in caplog.text


def test_export_is_json():
    assert formats.dumps({"a": 1}) == '{"a": 1}'


def test_night_tours_need_plugin_and_flag_together():
    # Fails only when BOTH the night plugin is registered AND the flag is set.
    night = "night" in registry.PLUGINS and os.environ.get("ZOO_NIGHT_TOURS") == "1"
    assert not night, "night tours enabled outside opening hours"


def test_fresh_build():
    assert not (DEMO / "build" / "cache.json").exists(), "stale build cache found"


def test_read_animal_list():
    assert Path("data/animals.txt").read_text().split() == ["lion", "zebra"]


def test_opening_hour_is_broken():
    # Genuinely broken: fails alone too.
    assert settings.DEFAULTS["opening_hour"] == 10
