"""Fix hints and the text of findings, on their own (they were reached only end to end).

The findings are those a real run proved (``snapshots/records/format1-sample.findings.json``)
and hand-made ones for the branches that run does not reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statesnap.analysis.findings import Finding
from statesnap.analysis.hints import hint_for, probe_class, restorable
from statesnap.analysis.verdicts import findings_of
from statesnap.output.explain import format_finding, format_findings, logs_folder, markdown
from statesnap.probes.env import EnvProbe
from statesnap.record.reader import read_record

RECORDS = Path(__file__).resolve().parent.parent / "snapshots" / "records"


def _proved() -> dict[str, Finding]:
    data = json.loads((RECORDS / "format1-sample.findings.json").read_text(encoding="utf-8"))
    return {d["victim"]: Finding.from_json(d) for d in data}


def _header() -> dict[str, object]:
    return read_record(RECORDS / "format1-sample.jsonl").header


# -- hints ----------------------------------------------------------------------------------
def test_a_built_in_probe_answers_in_its_own_terms() -> None:
    assert probe_class("env") is EnvProbe
    assert hint_for("env", "FOO", "added") == (
        "set FOO with monkeypatch.setenv('FOO', ...) so it is removed after the test")
    assert "monkeypatch.chdir" in hint_for("cwd", "cwd", "changed")


@pytest.mark.parametrize(("change", "words"), [
    ("added", "undo it in the test's teardown"),
    ("removed", "put it back in the test's teardown"),
    ("changed", "restore the old value"),
    ("something new", "restore the old value"),
])
def test_an_unknown_probe_gets_the_generic_hint(change: str, words: str) -> None:
    assert probe_class("no-such-probe") is None
    assert hint_for("no-such-probe", "k", change).startswith(words)


@pytest.mark.parametrize(("before", "after", "words"), [
    # A list appended to, a dict (of a subclass, with a cache part) updated: the same object.
    ("[] #a61f80 len=0 ~d4098626", "['audit'] #a61f80 len=1 ~73dac4ce",
     "copy the module-level list/dict"),
    ("OrderedDict() #0c1d2e OrderedDict len=0 ~00000001 cache~00000002",
     "OrderedDict({'a': 1}) #0c1d2e OrderedDict len=1 ~00000003 cache~00000002",
     "copy the module-level list/dict"),
    # An object whose attributes were filled in place.
    ("<Bus {'listeners': []}> #df1710 ~beefbccf", "<Bus {'listeners': ['x']}> #df1710 ~29da007f",
     "give each test a fresh one"),
    # Rebound to another list, or a plain value: setattr puts the original back.
    ("[] #a61f80 len=0 ~d4098626", "['audit'] #b00000 len=1 ~73dac4ce", "so the original is put"),
    ("'slow'", "'fast'", "so the original is put back"),
])
def test_an_attributes_hint_reads_the_kind_from_the_recorded_fingerprints(
        before: str, after: str, words: str) -> None:
    # No module "nowhere_mod" exists in this process: only the record tells what the value is
    # (the hunt's and the CLI's case).
    assert words in hint_for("attributes", "nowhere_mod:NAME", "changed", before, after)


def test_restorable_follows_the_probe_class() -> None:
    assert restorable("env") and restorable("cwd") and restorable("syspath")
    assert not restorable("threads")
    assert not restorable("no-such-probe")


# -- explain --------------------------------------------------------------------------------
def test_a_verified_finding_of_the_real_run_as_terminal_lines() -> None:
    f = _proved()["test_victims.py::test_default_mode_is_safe"]
    lines = format_finding(f)
    assert lines[0] == "[VERIFIED] test_victims.py::test_default_mode_is_safe"
    assert lines[1] == "    polluted by: test_config.py::test_enable_fast_mode"
    assert any(line.startswith("    state: env:SAMPLE_MODE: ") for line in lines)
    assert any(line.startswith("    failure: AssertionError: ") for line in lines)
    assert any(line.startswith("    fix: ") for line in lines)
    assert lines[-2].startswith("    reproduce: ") or lines[-1].startswith("    reproduce: ")


def test_a_not_order_dependent_finding_shows_no_fix() -> None:
    f = _proved()["test_config.py::test_genuinely_broken"]
    lines = format_finding(f)
    assert lines[0] == "[not order-dependent] test_config.py::test_genuinely_broken"
    assert not [line for line in lines if "fix:" in line or "polluted by" in line]


def test_every_optional_line() -> None:
    f = Finding(victim="t.py::v", polluters=["t.py::a", "t.py::b"], probe="env", key="K",
                status="latent", before=None, after="x", exc_type="KeyError",
                message="K", hint="do this", hint_proven=True,
                proven_keys=["env:K", "cwd:cwd"], cleaners=["t.py::c"], note="a note",
                repro="python -m pytest t.py::a t.py::v", setter="t.py::s",
                logs=["run.logs/v-1.log", "run.logs/v-2.log"])
    assert format_finding(f) == [
        "[LATENT] t.py::v",
        "    polluted by: t.py::a + t.py::b",
        "    relies on state set by: t.py::s",
        "    state: env:K: ∅ → x (restoring it makes the victim pass)",
        "    restoring also heals it: cwd:cwd",
        "    failure: KeyError: K",
        "    fix: do this",
        "    cleaned by: t.py::c",
        "    note: a note",
        "    reproduce: python -m pytest t.py::a t.py::v",
        "    logs: run.logs/ (beside the record), 2 replay(s)",
    ]
    bare = Finding(victim="t.py::v", polluters=[], probe=None, key=None, status="odd",
                   hint="never shown without a polluter or a setter")
    assert format_finding(bare) == ["[odd] t.py::v"]
    assert format_findings([]) == []
    assert format_findings([bare, bare]) == ["2 finding(s):", "  [odd] t.py::v",
                                             "  [odd] t.py::v"]


def test_logs_folder() -> None:
    assert logs_folder(["/r.logs/a.log", "/r.logs/b.log"]) == "/r.logs/"
    assert logs_folder(["x/a.log", "y/b.log"]) == "x/a.log, y/b.log"
    f = Finding(victim="v", polluters=[], probe=None, key=None, status="verified",
                logs=["/abs/r.logs/a.log"])
    assert format_finding(f)[-1] == "    logs: /abs/r.logs/, 1 replay(s)"


def test_markdown_of_the_real_run() -> None:
    proved = _proved()
    text = markdown([proved["test_victims.py::test_default_mode_is_safe"],
                     proved["test_config.py::test_genuinely_broken"]], _header())
    assert text.startswith("### `test_victims.py::test_default_mode_is_safe` fails after "
                           "`test_config.py::test_enable_fast_mode`\n")
    assert "### `test_config.py::test_genuinely_broken` fails on its own" in text
    assert "Reproduce (the victim fails):\n\n```sh\n" in text
    # A format-1 record stored no replay: nothing says the victim alone passes.
    assert "The victim alone (passes):" not in text
    assert "- Python 3.11.7 on Linux-6.18.44-fc-v1045-x86_64-with-glibc2.36, pytest 9.2.0" in text
    assert "- filesystem of `/src/sample`: " in text
    assert text.endswith("</details>\n")


def test_markdown_says_the_victim_alone_passes_only_after_a_stored_replay_showed_it() -> None:
    record = read_record(RECORDS / "format2-sample.jsonl")
    found = {f.victim: f for f in findings_of(record)}
    verified = found["test_victims.py::test_default_mode_is_safe"]
    text = markdown([verified], record.header)
    assert "The victim alone (passes):" in text
    verified.replays = [r for r in verified.replays if r.label != "alone"]
    assert "The victim alone (passes):" not in markdown([verified], record.header)


def test_markdown_code_survives_backticks_and_an_empty_header() -> None:
    f = Finding(victim="t.py::v[`x`]", polluters=[], probe="env", key="K`", status="weird",
                exc_type="E", message="m``m")
    text = markdown([f], {"seed": 7})
    assert text.startswith("### ``t.py::v[`x`]`` fails (weird)\n")
    assert "- **failure**: `E`: ```m``m```" in text
    assert "- **state**: `` env:K` ``" in text  # padded: it ends with a backtick
    assert "- Python ? on ?, pytest ?" in text
    assert "- plugins: none" in text and "- pytest-randomly seed: 7" in text
    assert "- args: ``" in text


def test_a_healing_set_led_by_the_named_key_says_they_heal_only_together() -> None:
    f = Finding(victim="t.py::v", polluters=["t.py::a"], probe="attributes", key="m:CONF",
                status="latent", before="{}", after="{'a': 1}", hint="patch it",
                hint_proven=False, proven_keys=["attributes:m:CONF", "env:A"],
                repro="python -m pytest t.py::a t.py::v")
    lines = format_finding(f)
    assert "    state: attributes:m:CONF: {} → {'a': 1}" in lines, lines
    assert "    restoring it heals only together with: env:A" in lines, lines
    assert not [line for line in lines if "restoring also heals" in line
                or "makes the victim pass" in line], lines
