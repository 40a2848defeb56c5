"""A test's first failure, as the record keeps it: the phase, the exception's type and message,
where it was raised (its signature) and pytest's report text, with secret-looking values
scrubbed.

Called on a test's first failed report only; the record modules it needs are imported then, so a
session with no failure never imports them.
"""

from __future__ import annotations

import os

import pytest

from statesnap.plugin.run import RunState


def note_failure(run: RunState, report: pytest.TestReport, call: pytest.CallInfo[None],
                 item: pytest.Item | None, when: str) -> None:
    """The test's first failure (a failed report of one of its phases)."""
    test = run.test
    # Imported on the first failure: a session with none never needs them.
    from statesnap.record.failure import failure_entry
    from statesnap.record.signature import failing_frame

    def scrub(text: str) -> str:
        """Replace values of secret-looking environment variables that appear in a text."""
        return run.redactor.scrub(text, run.redactor.secrets_in(os.environ))

    excinfo = call.excinfo
    message, exc_type, where = "", None, None
    if excinfo is not None:
        exc_type = excinfo.typename
        try:
            message = str(excinfo.value)
        except Exception:  # the test's exception has a broken __str__
            message = ""
        if item is not None:
            # With the type, the failure's signature (statesnap.record.signature): a
            # replay that fails elsewhere in the test fails differently.
            where = failing_frame(excinfo.traceback, getattr(item, "path", None),
                                  item.config.rootpath)
    test.note_failure(failure_entry(when, exc_type, message, report.longreprtext or "",
                                    where, scrub=scrub))
