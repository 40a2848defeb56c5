"""Verdicts where CI users look: GitHub's job summary and annotations, JUnit XML properties.

At the session end, once the findings are settled (:class:`statesnap.plugin.end.SessionEnd`
runs ``trylast``; this feature's wrapper around ``pytest_sessionfinish`` runs after it and
after junitxml wrote its file):

- with ``$GITHUB_STEP_SUMMARY`` set, the findings are appended to the job summary as Markdown
  (:mod:`statesnap.output.github`);
- with ``GITHUB_ACTIONS=true``, each verified victim gets an ``::error`` workflow command on
  its failing line, printed in the terminal section (before pytest's last line);
- with ``--junitxml``, each victim's verdict goes into the XML as properties, on its
  ``<testcase>`` or (xunit2) the ``<testsuite>`` (:mod:`statesnap.output.junitprops`).

``--statesnap-ci=off`` turns all three off.  The environment read is the one the session
started with: a test may have changed ``os.environ``.  Replays, xdist workers and isolated
children write none of it: only the process the user started does.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from statesnap.plugin import cleanroom
from statesnap.plugin.hookplugin import HookPlugin, module_dir
from statesnap.plugin.options import GROUP
from statesnap.plugin.run import RunState

MODES = ("auto", "off")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup(GROUP).addoption(
        "--statesnap-ci",
        choices=MODES,
        default=None,
        help="auto (default): on GitHub Actions, append the findings to the job summary "
        "($GITHUB_STEP_SUMMARY) and annotate each verified victim's failing line; with "
        "--junitxml, write each victim's verdict into the XML as properties (on its "
        "<testcase> under junit_family=xunit1, on the <testsuite> under xunit2). "
        "off: none of these (also ini statesnap_ci)",
    )
    parser.addini("statesnap_ci", "same as --statesnap-ci (auto or off)", default="auto")


class CiHooks(HookPlugin):
    """The session end's CI outputs; registered only in the process the user started."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.annotated = False

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        result = yield
        with cleanroom.shielded(self.run.baseline):
            self._guarded("the JUnit XML verdicts", lambda: junit_verdicts(self.run))
            self._guarded("the GitHub job summary", lambda: job_summary(self.run))
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        with cleanroom.shielded(self.run.baseline):
            self._guarded("the GitHub annotations",
                          lambda: self._annotate(terminalreporter.write_line))

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # No terminal (-p no:terminal): the annotations still go to stdout.
        if not self.annotated:
            self._guarded("the GitHub annotations",
                          lambda: self._annotate(lambda line: print(line, file=sys.__stdout__)))

    def _annotate(self, write: Any) -> None:
        if self.annotated:
            return
        self.annotated = True
        for line in annotation_lines(self.run):
            write(line)

    def _guarded(self, what: str, work: Any) -> None:
        """A failure here is one line, never a traceback, and never the run's outcome."""
        try:
            work()
        except Exception as exc:
            from statesnap.proof.session_end import describe_error

            self.run.say(f"statesnap: {what} failed: {describe_error(exc)}")


def annotation_lines(run: RunState) -> list[str]:
    if run.initial_env.get("GITHUB_ACTIONS") != "true" or not run.results.findings:
        return []
    from statesnap.output.github import annotation

    record = run.results.record
    rootdir = str((record.header if record else {}).get("rootdir") or run.settings.rootdir)
    workspace = run.initial_env.get("GITHUB_WORKSPACE")
    out = []
    for f in run.results.findings:
        line = annotation(f, rootdir, workspace)
        if line is not None:
            out.append(line)
    return out


def job_summary(run: RunState) -> None:
    target = run.initial_env.get("GITHUB_STEP_SUMMARY")
    record = run.results.record
    if not target or record is None:
        return
    from statesnap.output.explain import markdown
    from statesnap.output.github import job_summary as render

    findings = run.results.findings
    issue = markdown(findings, record.header, record.tests) if findings else None
    text = render(findings, run.results.all(), record.header, issue)
    # Appended, as GitHub asks: earlier steps' summaries (and other tools') stay.
    with open(target, "a", encoding="utf-8") as out:
        out.write(text)


def junit_verdicts(run: RunState) -> None:
    from _pytest.junitxml import mangle_test_address, xml_key

    xml = run.config.stash.get(xml_key, None)
    findings = run.results.findings
    if xml is None or not findings:
        return
    # The file junitxml wrote through a symlink is the link's target: that is the one rewritten
    # (os.replace on the link would leave the target without verdicts and the link gone).
    path = Path(xml.logfile).resolve()
    if not path.is_file():  # --junitxml=/dev/stdout, a pipe: nothing to read back
        return
    from statesnap.output.junitprops import add_verdicts

    testcases: dict[str, tuple[str, str]] = {}
    for f in findings:
        names = mangle_test_address(f.victim)
        classnames = names[:-1]
        if xml.prefix:
            classnames.insert(0, xml.prefix)
        testcases[f.victim] = (".".join(classnames), names[-1])
    add_verdicts(path, findings, testcases, xml.family)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    run = RunState.of(config)
    mode = config.getoption("statesnap_ci") or str(config.getini("statesnap_ci") or "auto")
    if mode not in MODES:
        raise pytest.UsageError(f"statesnap_ci: {mode!r} is not one of {', '.join(MODES)}")
    s = run.settings
    if (mode == "off" or run.child or hasattr(config, "workerinput")
            or s.order_file is not None):
        return
    env = run.initial_env
    # Nothing to write outside CI and without --junitxml: no hooks (a plugin object costs
    # every session its registration).
    if not (env.get("GITHUB_STEP_SUMMARY") or env.get("GITHUB_ACTIONS") == "true"
            or getattr(config.option, "xmlpath", None)):
        return
    config.pluginmanager.register(CiHooks(run), "statesnap-ci")


#: pytest and pluggy read every name dir() lists (statesnap.plugin.hookplugin).
__dir__ = module_dir(globals())
