"""JUnit XML (``--junitxml``): the ``<testcase>`` entries in file order, mapped to node ids.

The mapping runs from the checkout's collected node ids, mangled as pytest mangles them, to the
XML (it is not reversible the other way); a test case the checkout lacks refuses the artifact.
Under xdist the order is one lane (``junit``).  Details: docs/ARCHITECTURE.md ("Backfill").
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from statesnap.backfill.shard import BadArtifact, Shard
from statesnap.replay.console import signature


def junit_address(nodeid: str, prefix: str | None = None) -> tuple[str, str]:
    """``(classname, name)`` as pytest's junitxml writes them for ``nodeid``."""
    names = nodeid.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    if prefix:
        names.insert(0, prefix)
    return ".".join(names[:-1]), names[-1]


def parse_junit(path: Path, text: str, collected: Iterable[str] | None) -> list[Shard]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise BadArtifact(f"{path}: not well-formed XML ({exc})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise BadArtifact(f"{path}: XML that is not JUnit (root element <{root.tag}>, "
                          "expected <testsuites> or <testsuite>)")
    cases = list(root.iter("testcase"))
    if not cases:
        raise BadArtifact(f"{path}: a JUnit file with no <testcase>")
    if collected is None:
        raise BadArtifact(f"{path}: JUnit node ids need the checkout's tests collected, and "
                          "collection failed")
    lookup: dict[tuple[str, str], str] = {}
    for known in collected:
        lookup.setdefault(junit_address(known), known)
    order: list[str] = []
    outcomes: dict[str, str] = {}
    failures: dict[str, dict[str, str | None]] = {}
    missing: list[str] = []
    for case in cases:
        key = (case.get("classname") or "", case.get("name") or "")
        nodeid = lookup.get(key)
        if nodeid is None:
            missing.append(f"{key[0]}::{key[1]}")
            continue
        if nodeid not in order:
            order.append(nodeid)
        outcome, failure = _outcome(case)
        if outcomes.get(nodeid) not in ("failed", "error"):
            outcomes[nodeid] = outcome
        if failure is not None:
            failures.setdefault(nodeid, failure)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                          if len(missing) > 3 else "")
        raise BadArtifact(f"{path}: {len(missing)} test case(s) not in the checkout: {shown}")
    notes = ["JUnit XML names no xdist worker: under -n this is the order reports reached "
             "the controller in"]
    return [Shard(source=path, kind="junit", worker="junit", order=order, outcomes=outcomes,
                  failures=failures, notes=notes)]


def _outcome(case: ET.Element) -> tuple[str, dict[str, str | None] | None]:
    for tag, outcome in (("failure", "failed"), ("error", "error")):
        found = case.find(tag)
        if found is not None:
            message = found.get("message") or ""
            sig = signature(message)
            if sig["exc_type"] is None and found.get("type"):
                sig = {"exc_type": str(found.get("type")).rsplit(".", 1)[-1],
                       "message": message or None}
            return outcome, sig
    if case.find("skipped") is not None:
        skipped = case.find("skipped")
        kind = skipped.get("type") if skipped is not None else None
        return ("xfailed" if kind == "pytest.xfail" else "skipped"), None
    return "passed", None

