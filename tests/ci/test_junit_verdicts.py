"""statesnap's verdicts in pytest's JUnit XML, from real runs, under xunit1 and xunit2.

The file is parsed with junitparser.  Under xunit1 a victim's ``<testcase>`` carries the
verdict as the ``<property>`` elements ``record_property`` writes (beside the test's own);
under xunit2, whose schema allows no properties on a testcase, they go on the
``<testsuite>``, named after the victim, and no testcase holds a ``<properties>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# junitparser's xunit2 flavour reads <properties> inside a <testcase> (its base flavour has no
# API for them); it parses any pytest file, xunit1 included.
from junitparser.xunit2 import JUnitXml, TestCase, TestSuite

from suite_runs import SuiteRun, run_shell, run_suite, write_suite

SUITE = {
    "test_j.py": """
        import os
        import pytest

        def test_polluter():
            os.environ["JUNIT_MODE"] = "fast"

        @pytest.mark.parametrize("x", ["a:b,c", "p%c"])
        def test_victim(x, record_property):
            record_property("owner", "team-x")
            assert os.environ.get("JUNIT_MODE", "slow") == "slow"

        def test_bystander():
            pass
    """,
}
VICTIMS = ["test_j.py::test_victim[a:b,c]", "test_j.py::test_victim[p%c]"]


def _run(tmp: Path, *args: str) -> tuple[SuiteRun, Path]:
    root = write_suite(tmp / "proj", SUITE)
    xml = tmp / "junit.xml"
    return run_suite(root, tmp / "out", f"--junitxml={xml}", *args), xml


def _suite(xml: Path) -> TestSuite:
    doc = JUnitXml.fromfile(str(xml))
    suites = list(doc) if isinstance(doc, JUnitXml) else [doc]
    assert len(suites) == 1
    suite: TestSuite = suites[0]
    return suite


def _case(suite: TestSuite, name: str) -> TestCase:
    found = [c for c in suite if c.name == name]
    assert len(found) == 1, [c.name for c in suite]
    case: TestCase = found[0]
    return case


@pytest.fixture(scope="module")
def xunit1(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, Path]:
    run, xml = _run(tmp_path_factory.mktemp("x1"), "-o", "junit_family=xunit1")
    assert run.proc.returncode == 1, run.output[-4000:]
    return run, xml


def test_xunit1_victims_carry_the_verdict_as_properties(xunit1: tuple[SuiteRun, Path]) -> None:
    run, xml = xunit1
    suite = _suite(xml)
    assert (suite.tests, suite.failures) == (4, 2)  # junitxml's own counts are untouched
    for victim in VICTIMS:
        case = _case(suite, victim.split("::", 1)[1])
        props = [(p.name, p.value) for p in case.properties()]
        assert props[0] == ("owner", "team-x")  # the test's own record_property stays first
        ours = dict(props[1:])
        assert ours["statesnap.verdict"] == "verified"
        assert ours["statesnap.polluter"] == "test_j.py::test_polluter"
        assert ours["statesnap.key"] == "env:JUNIT_MODE"
        assert victim.split("[", 1)[1] in ours["statesnap.reproduce"]
        # One <properties> element, as record_property writes it, before the failure.
        raw = ET.parse(xml).getroot()
        el = next(c for c in raw.iter("testcase") if c.get("name") == case.name)
        assert [child.tag for child in el][:2] == ["properties", "failure"]
    for name in ("test_polluter", "test_bystander"):
        assert not list(_case(suite, name).properties())
    # The reproduction in the file runs as written.
    case = _case(suite, "test_victim[a:b,c]")
    command = next(p.value for p in case.properties() if p.name == "statesnap.reproduce")
    proc = run_shell(command, cwd=run.record_path.parent.parent / "proj")
    assert proc.returncode == 1 and "FAILED test_j.py::test_victim[a:b,c]" in proc.stdout


def test_xunit2_verdicts(tmp_path: Path) -> None:
    """Without record_property (which pytest itself warns is incompatible with xunit2), the
    file keeps xunit2's shape: properties only on the suite, first."""
    root = write_suite(tmp_path / "proj", {"test_j.py": SUITE["test_j.py"].replace(
        'record_property("owner", "team-x")', "pass")})
    xml = tmp_path / "junit.xml"
    run = run_suite(root, tmp_path / "out", f"--junitxml={xml}", "-o", "junit_family=xunit2")
    assert run.proc.returncode == 1, run.output[-4000:]
    raw = ET.parse(xml).getroot()
    assert all(case.find("properties") is None for case in raw.iter("testcase"))
    testsuite = raw.find("testsuite")
    assert testsuite is not None and next(c.tag for c in testsuite) == "properties"
    suite = _suite(xml)
    props = {p.name: p.value for p in suite.properties()}
    for victim in VICTIMS:
        assert props[f"statesnap.verdict:{victim}"] == "verified"
        assert props[f"statesnap.polluter:{victim}"] == "test_j.py::test_polluter"
        assert props[f"statesnap.key:{victim}"] == "env:JUNIT_MODE"
    assert not any("test_polluter" in name or "bystander" in name for name in props)


def test_ci_off_leaves_the_file_as_junitxml_wrote_it(tmp_path: Path) -> None:
    run, xml = _run(tmp_path, "-o", "junit_family=xunit1", "--statesnap-ci=off")
    assert run.proc.returncode == 1, run.output[-4000:]
    names = [p.name for c in _suite(xml) for p in c.properties()]
    assert names == ["owner", "owner"]


def test_under_xdist_only_the_controller_writes(tmp_path: Path) -> None:
    """Workers write neither the summary nor the XML: one summary, one set of properties."""
    root = write_suite(tmp_path / "proj", SUITE)
    xml = tmp_path / "junit.xml"
    summary = tmp_path / "summary.md"
    run = run_suite(root, tmp_path / "out", f"--junitxml={xml}", "-o", "junit_family=xunit1",
                    "-n", "2", "--dist", "loadfile",
                    env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"})
    assert run.proc.returncode == 1, run.output[-4000:]
    assert summary.read_text(encoding="utf-8").count("### statesnap:") == 1
    assert len([x for x in run.proc.stdout.splitlines() if x.startswith("::error ")]) == 2
    for victim in VICTIMS:
        case = _case(_suite(xml), victim.split("::", 1)[1])
        names = [p.name for p in case.properties()]
        assert names.count("statesnap.verdict") == 1, names


def test_a_linked_file_gets_the_verdicts_and_stays_linked(tmp_path: Path) -> None:
    """``--junitxml`` naming a symlink: junitxml writes the link's target, and so does the
    rewrite (the link is not replaced by a file of its own)."""
    target = tmp_path / "results" / "junit.xml"
    target.parent.mkdir()
    target.write_text("", encoding="utf-8")
    link = tmp_path / "junit.xml"
    link.symlink_to(target)
    root = write_suite(tmp_path / "proj", SUITE)
    run = run_suite(root, tmp_path / "out", f"--junitxml={link}", "-o", "junit_family=xunit1")
    assert run.proc.returncode == 1, run.output[-4000:]
    assert link.is_symlink() and link.resolve() == target
    case = _case(_suite(target), VICTIMS[0].split("::", 1)[1])
    assert ("statesnap.verdict", "verified") in [(p.name, p.value) for p in case.properties()]
