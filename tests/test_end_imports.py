"""What importing the session end's modules costs: no regular expression is compiled until one
is used.  A session's end imports the analysis modules where a test changed something (the
leaks listed in the terminal section); compiling their patterns there cost every such session
about 3 M instructions even where no leak needed them (issue 28, statesnap's own start)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: Counts ``re.compile`` calls made while the end's modules are imported, in a fresh process.
PROGRAM = textwrap.dedent('''
    import re
    import statesnap.state.diff  # imported at the start of every session, before the tests
    compiled = []
    real = re.compile
    re.compile = lambda *a, **k: (compiled.append(a[0]), real(*a, **k))[1]
    import statesnap.analysis.resets  # noqa: F401  (with analysis.quiet)
    re.compile = real
    print(len(compiled))
    from statesnap.analysis.quiet import quiet
    from statesnap.state.diff import CHANGED, Change
    memo = Change("attributes", "lib:_CACHE", CHANGED,
                  "{} #0a0b0c dict len=0 ~00000000",
                  "{'de': <gettext.GNUTranslations>} #0a0b0c dict len=1 ~11111111")
    print(quiet(memo))
''')


def test_importing_the_ends_analysis_compiles_no_pattern() -> None:
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    compiled, judged = proc.stdout.split()
    assert compiled == "0"
    # The patterns, compiled at their first use, still judge: a memo of a derived value.
    assert judged == "True"
