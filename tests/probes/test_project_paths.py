"""The attributes probe's quick "not the project's" answer agrees with the full path check."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from statesnap.probes.attributes.scan import is_normal_path, is_project_file

ODD = ["/a/./b.py", "/a//b.py", "/a/../b.py", "/a/b/", "a/b.py", "/a/.venv/x.py", "/a/b/..",
       "//a/b.py", "/a/b/.", "/.", "/", "", "./x.py", "/a/b.py/", "/a/..b/c.py", "/a/b..py"]


def test_a_normal_path_is_what_normpath_returns() -> None:
    files = [f for m in list(sys.modules.values())
             if isinstance(f := getattr(m, "__file__", None), str)]
    for f in files + ODD:
        if is_normal_path(f):
            assert os.path.isabs(f) and os.path.normpath(f) == f, f
    assert is_normal_path("/a/b.py") and not is_normal_path("/a/../b.py")


def test_outside_the_roots_by_prefix_is_outside_by_the_full_check(tmp_path: Path) -> None:
    root = str(tmp_path / "proj")
    prefixes = (root + os.sep,)
    inside = [f"{root}/pkg/mod.py", f"{root}/../proj/pkg/mod.py", f"{root}//pkg/mod.py"]
    outside = [f"{root}x/mod.py", f"{root}/../other/mod.py", "/usr/lib/python3/os.py", root]
    for f in inside + outside + ODD:
        quick_no = is_normal_path(f) and not f.startswith(prefixes)
        if quick_no:
            assert not is_project_file(f, (root,), {}), f
    assert is_project_file(inside[1], (root,), {}) and not is_normal_path(inside[1])
