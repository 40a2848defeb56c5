"""statesnap's verdicts in pytest's JUnit XML (``--junitxml``), for every CI that reads it.

Verdicts are settled at the session end, after pytest's junitxml has turned each test's
reports into XML (it does so at the test's last report, so a property cannot be handed to it
later) and written the file.  The file is therefore read back, given the verdicts, and
replaced whole (:func:`statesnap.base.atomic.write_atomic`).

Under ``xunit1`` (and ``legacy``) a victim's ``<testcase>`` gets a ``<properties>`` element
with the ``<property>`` elements ``record_property`` writes: ``statesnap.verdict``,
``statesnap.polluter`` (one per polluter), ``statesnap.key``, ``statesnap.reproduce`` (only a
command a replay saw fail the victim).  ``xunit2``'s schema allows no properties on a
testcase (pytest warns that ``record_property`` is incompatible with it): there they go on the
``<testsuite>``, as ``record_testsuite_property`` writes them, each name ending in the
victim's node id (``statesnap.verdict:tests/test_a.py::test_x``), so the file stays valid.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

from statesnap.analysis.findings import Finding
from statesnap.base.atomic import write_atomic

PREFIX = "statesnap."
_BAD_XML = {c for c in range(0x20) if c not in (0x9, 0xA, 0xD)} | {0xFFFE, 0xFFFF}


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold written as ``#xNN``, as pytest's
    junitxml does (``bin_xml_escape``)."""
    return "".join(f"#x{ord(c):02X}" if ord(c) in _BAD_XML or 0xD800 <= ord(c) <= 0xDFFF
                   else c for c in text)


def victim_properties(f: Finding) -> list[tuple[str, str]]:
    """The ``(name, value)`` properties of one victim's verdict."""
    out = [(PREFIX + "verdict", f.status)]
    out += [(PREFIX + "polluter", p) for p in f.polluters]
    if f.setter:
        out.append((PREFIX + "setter", f.setter))
    if f.probe and f.key:
        out.append((PREFIX + "key", f"{f.probe}:{f.key}"))
    if f.repro_proven:
        out.append((PREFIX + "reproduce", f.repro))
    if f.note:
        out.append((PREFIX + "note", f.note))
    return out


def _property(parent: ET.Element, name: str, value: str) -> None:
    ET.SubElement(parent, "property", name=xml_text(name), value=xml_text(value))


def _properties(parent: ET.Element, first: bool) -> ET.Element:
    """``parent``'s ``<properties>``, made (first child: where both schemas want it) if none."""
    found = parent.find("properties")
    if found is None:
        found = ET.Element("properties")
        parent.insert(0 if first else len(parent), found)
    return found


def add_verdicts(path: Path, findings: Iterable[Finding],
                 testcases: Mapping[str, tuple[str, str]], family: str) -> int:
    """Give the victims' ``<testcase>`` entries of the JUnit XML at ``path`` their verdicts.

    ``testcases``: ``nodeid → (classname, name)`` as junitxml wrote them.  Returns how many
    victims were found in the file; the file is rewritten only if any was.  Raises
    ``OSError`` or ``ET.ParseError`` for a file that cannot be read.
    """
    tree = ET.parse(path)
    root = tree.getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    by_name: dict[tuple[str, str], tuple[ET.Element, ET.Element]] = {}
    for suite in suites:
        for case in suite.findall("testcase"):
            key = (case.get("classname") or "", case.get("name") or "")
            by_name.setdefault(key, (suite, case))
    found = 0
    for f in findings:
        names = testcases.get(f.victim)
        hit = by_name.get((xml_text(names[0]), xml_text(names[1]))) if names else None
        if hit is None:
            continue
        found += 1
        suite, case = hit
        props = victim_properties(f)
        if family == "xunit2":
            holder = _properties(suite, first=True)
            for name, value in props:
                _property(holder, f"{name}:{f.victim}", value)
        else:
            holder = _properties(case, first=True)
            for name, value in props:
                _property(holder, name, value)
    if found:
        text = ET.tostring(root, encoding="unicode")
        write_atomic(path, '<?xml version="1.0" encoding="utf-8"?>' + text)
    return found
