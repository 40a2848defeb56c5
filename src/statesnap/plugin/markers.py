"""statesnap's markers: names and the help lines pytest shows for them (``pytest --markers``).

Each feature registers its own marker's line at configure; the names live here so that the
core and other features can read a marker without importing the feature that owns it.
"""

from __future__ import annotations

ISOLATE = "statesnap_isolate"
ALLOW = "statesnap_allow"
REQUIRES_CLEAN = "statesnap_requires_clean"

#: Each marker's help line; the feature that owns it registers it.
HELP = {
    ISOLATE: f"{ISOLATE}(mode='auto'): run this test in a fresh child process (fork, or spawn when "
    "CUDA is initialised or mode='spawn'), so what it leaks dies with it",
    ALLOW: f"{ALLOW}('env:FOO', 'modules', ...): state that --statesnap-strict tolerates from "
    "this test (probe:key globs; a bare probe means all its keys)",
    REQUIRES_CLEAN: f"{REQUIRES_CLEAN}('cuda', 'env:CUDA_VISIBLE_DEVICES', ...): error at "
    "setup, naming the test that dirtied it, when this state differs from the session's start",
}
