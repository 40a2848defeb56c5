"""The record's header on its own: installed packages from dist-info names, plugin labels,
the environment redacted, every field a replay and the report read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from statesnap.base.redact import Redactor
from statesnap.record.header import build_header, installed_packages
from statesnap.record.journal import FORMAT


def test_installed_packages_from_folder_names_and_egg_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "zeta_pkg-1.2.3.dist-info").mkdir(parents=True)
    (site / "Alpha-0.1.dist-info").mkdir()
    (site / "noversion.dist-info").mkdir()  # no version in the name, no metadata: left out
    egg = site / "legacy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: legacy-thing\nVersion: 4.5\n",
                                  encoding="utf-8")
    (site / "not_a_package").mkdir()
    (site / "file.txt").write_text("x", encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing"), str(site)])
    assert installed_packages() == {"Alpha": "0.1", "legacy-thing": "4.5", "zeta-pkg": "1.2.3"}
    assert list(installed_packages()) == ["Alpha", "legacy-thing", "zeta-pkg"]  # by name


def test_the_first_entry_on_sys_path_wins(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "dup-2.0.dist-info").mkdir(parents=True)
    (second / "dup-1.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    assert installed_packages() == {"dup": "2.0"}


def test_build_header_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADER_UNIT_TOKEN", "tok-secret-value")
    monkeypatch.setenv("HEADER_UNIT_PLAIN", "plain")
    header = build_header(
        worker="gw1", args=("-p", "statesnap", "-x"), invocation_dir=tmp_path,
        rootdir=tmp_path / "root", inifile=None, plugins=["statesnap-0.1.0"], seed=42,
        probes=[{"name": "env", "status": "ok", "detail": None}],
        mtime_resolution={str(tmp_path): {"resolution_ns": 1}}, redactor=Redactor(),
        notes={"files": "inotify"}, extra={"modes": {"strict": "all"}})
    assert header["type"] == "header" and header["format"] == FORMAT
    assert header["worker"] == "gw1" and header["pid"] == os.getpid()
    assert header["args"] == ["-p", "statesnap", "-x"]
    assert header["invocation_dir"] == str(tmp_path)
    assert header["rootdir"] == str(tmp_path / "root") and header["inifile"] is None
    assert header["seed"] == 42 and header["notes"] == {"files": "inotify"}
    assert header["modes"] == {"strict": "all"}
    assert header["python"]["executable"] == sys.executable
    assert header["env"]["HEADER_UNIT_PLAIN"] == "plain"
    assert header["env"]["HEADER_UNIT_TOKEN"].startswith("<redacted:")
    assert "tok-secret-value" not in repr(header)
    assert len(header["run_id"]) == 12
    again = build_header(
        worker="main", args=[], invocation_dir=tmp_path, rootdir=tmp_path,
        inifile=tmp_path / "pytest.ini", plugins=[], seed=None, probes=[],
        mtime_resolution={}, redactor=Redactor(), notes={})
    assert again["run_id"] != header["run_id"]
    assert again["inifile"] == str(tmp_path / "pytest.ini")


EGG_METADATA = {
    "plain": "Metadata-Version: 2.1\nName: plain-egg\nVersion: 1.0\n\nbody: not a header\n",
    "lower": "metadata-version: 2.1\nname:   lower_egg \nversion:\t2.0\n",
    "twice": "Name: first-name\nVersion: 3.0\nName: second-name\nVersion: 9.9\n",
    "folded": "Name: folded\n  -name\nVersion: 4.0\n",
    "spaced": "Metadata-Version: 2.1\nBad Header: x\nName: spaced\nVersion: 5.0\n",
    "crlf": "Name: crlf-egg\r\nVersion: 6.0\r\n",
    "noversion": "Name: noversion-egg\n",
    "noname": "Version: 7.0\n",
    "unixfrom": "From someone\nName: unixfrom-egg\nVersion: 8.0\n",
}


def test_egg_metadata_is_read_as_importlib_metadata_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain headers are read by hand (no email package); anything else by importlib.metadata:
    the header says the same either way."""
    import importlib.metadata

    site = tmp_path / "site"
    for folder, text in EGG_METADATA.items():
        egg = site / f"{folder}.egg-info"
        egg.mkdir(parents=True)
        (egg / "PKG-INFO").write_bytes(text.encode())
    both = site / "both.egg-info"  # METADATA first, as importlib.metadata reads it
    both.mkdir()
    (both / "METADATA").write_text("Name: from-metadata\nVersion: 1\n", encoding="utf-8")
    (both / "PKG-INFO").write_text("Name: from-pkg-info\nVersion: 2\n", encoding="utf-8")
    expected: dict[str, str] = {}
    for egg in sorted(site.iterdir()):
        dist = importlib.metadata.PathDistribution(egg)
        if dist.metadata["Name"]:
            expected.setdefault(str(dist.metadata["Name"]), str(dist.version))
    monkeypatch.setattr(sys, "path", [str(site)])
    assert installed_packages() == dict(sorted(expected.items(), key=lambda kv: kv[0].lower()))
    assert expected["lower_egg "] == "2.0" and expected["first-name"] == "3.0"
    assert expected["from-metadata"] == "1"



def test_platform_string_is_platform_platform_without_starting_a_process() -> None:
    import platform
    import subprocess
    import sys

    # A fresh interpreter: platform caches uname's processor once asked, in this process too.
    code = ("import subprocess\n"
            "def no_process(*a, **k):\n"
            "    raise SystemExit('platform_string started a process')\n"
            "subprocess.Popen = no_process\n"
            "from statesnap.record.header import platform_string\n"
            "print(platform_string())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    got = proc.stdout.strip()
    processor = platform.processor()
    if processor in ("", "unknown", platform.machine()):
        assert got == platform.platform()
    else:  # a processor of its own (uname -p) is the one part left out
        assert got == platform.platform().replace(f"-{processor}", "", 1)
