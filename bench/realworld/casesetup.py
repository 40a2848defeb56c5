"""Setting up the real-world cases of ``cases.toml``: source, virtual environment, validation.

Each case's source is a PyPI sdist (``name==version``, fetched with pip) or a repository
commit read with ``git archive`` from a git mirror of the project, ``MIRRORS/owner+name/repo``
(``git clone --mirror https://github.com/OWNER/NAME MIRRORS/OWNER+NAME/repo``); both unpack
into ``CACHE/src/``.  Each source gets one virtual environment of
its own (``CACHE/venvs/``) holding only the project and what its ``install`` steps name;
pytest, statesnap's dependencies and detect-test-pollution come from one shared
``CACHE/tools`` environment through a ``.pth`` file, statesnap itself from ``src/``.
A case whose source cannot be had is skipped with one line saying why.

``CACHE`` is ``$STATESNAP_BENCH_CACHE``, by default ``~/.cache/statesnap-bench-real``: outside
this repository on purpose, since pytest would otherwise take the repository's
``pyproject.toml`` for each case's configuration file and rootdir.  ``MIRRORS`` is
``$STATESNAP_BENCH_MIRRORS``, by default ``CACHE/mirrors``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = Path(os.environ.get("STATESNAP_BENCH_CACHE")
             or Path.home() / ".cache" / "statesnap-bench-real")
MIRRORS = Path(os.environ.get("STATESNAP_BENCH_MIRRORS") or CACHE / "mirrors")
#: What every case environment borrows from the shared tools environment.
TOOLS = ("pytest==9.2.0", "psutil", "deepdiff", "jinja2", "rich", "nvidia-ml-py",
         "detect-test-pollution==1.2.0")
#: Arguments every pytest run of a case gets (plain and with statesnap alike).
PYTEST_ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider")


class Unavailable(Exception):
    """The case cannot be set up here (its source or an install step is missing)."""


@dataclass
class Case:
    id: str
    source: str
    victim: str
    polluters: list[str]
    suite: str
    install: list[str] = field(default_factory=list)
    #: Extra pytest arguments the suite needs (plain and with statesnap alike).
    args: list[str] = field(default_factory=list)
    #: Substrings one of which a right key ("probe:key") contains.
    keys: list[str] = field(default_factory=list)
    hidden: bool = True
    state: str = ""
    framework: str = "pytest"
    origin: str = ""
    note: str = ""

    @property
    def slug(self) -> str:
        return self.source.replace("==", "-").replace("/", "+").replace("@", "-")


def load_cases(path: Path = HERE / "cases.toml") -> list[Case]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Case(**entry) for entry in data.get("case", [])]


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 900) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["?"]
        raise Unavailable(f"{shlex.join(cmd[:6])} failed: {tail[0][:200]}")


def tools_env() -> Path:
    """The shared environment with pytest, statesnap's dependencies and detect-test-pollution."""
    venv = CACHE / "tools"
    stamp = venv / ".stamp"
    if not stamp.exists():
        _run([sys.executable, "-m", "venv", str(venv)])
        _run([str(venv / "bin" / "pip"), "install", "-q", *TOOLS])
        stamp.write_text("\n".join(TOOLS), encoding="utf-8")
    return venv


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def source_dir(case: Case) -> Path:
    """The unpacked source (downloaded or read from the mirror on first use)."""
    dest = CACHE / "src" / case.slug
    if dest.exists():
        return dest
    tmp = dest.with_name(dest.name + ".part")
    tmp.mkdir(parents=True, exist_ok=True)
    if "==" in case.source:
        sdists = CACHE / "sdists"
        sdists.mkdir(parents=True, exist_ok=True)
        try:
            _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                  "--no-binary", ":all:", case.source, "-d", str(sdists)])
        except Unavailable as exc:
            raise Unavailable(f"sdist {case.source} not available: {exc}") from None
        name, version = case.source.split("==")
        found = [p for p in sdists.iterdir() if p.name.lower().replace("_", "-").startswith(
            f"{name.lower().replace('_', '-')}-{version}")]
        if not found:
            raise Unavailable(f"sdist {case.source} not downloaded")
        _unpack(found[0], tmp)
    else:
        repo, _, commit = case.source.partition("@")
        mirror = MIRRORS / repo.replace("/", "+") / "repo"
        if not mirror.exists():
            raise Unavailable(f"{repo} is not mirrored under {MIRRORS} (clone it there with "
                              "git clone --mirror, or set STATESNAP_BENCH_MIRRORS)")
        archive = subprocess.run(["git", "-C", str(mirror), "archive", commit or "HEAD"],
                                 capture_output=True)
        if archive.returncode != 0:
            raise Unavailable(f"{repo}@{commit}: not in the mirror")
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    inner = [p for p in tmp.iterdir()]
    top = inner[0] if len(inner) == 1 and inner[0].is_dir() else tmp
    top.rename(dest) if top is not tmp else tmp.rename(dest)
    if tmp.exists():
        tmp.rmdir()
    return dest


def _unpack(archive: Path, dest: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")


def case_env(case: Case) -> tuple[Path, Path]:
    """``(source dir, python)`` of the case, installed on first use."""
    src = source_dir(case)
    venv = CACHE / "venvs" / case.slug
    python = venv / "bin" / "python"
    stamp = venv / ".stamp"
    want = "\n".join(case.install)
    tools = tools_env()
    # statesnap from this checkout's src/, written on every use: a venv made by another
    # checkout (a worktree since removed) would run that one's statesnap, or none.
    pth = f"{REPO / 'src'}\n{_site(tools)}\n"
    if stamp.exists() and stamp.read_text(encoding="utf-8") == want:
        (_site(venv) / "statesnap-bench.pth").write_text(pth, encoding="utf-8")
        return src, python
    # No pip of its own (ensurepip is slow): the tools environment's pip installs into it.
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    (_site(venv) / "statesnap-bench.pth").write_text(pth, encoding="utf-8")
    for step in case.install:
        _run([str(tools / "bin" / "python"), "-m", "pip", "--python", str(python), "install",
              "-q", *shlex.split(step)], cwd=src)
    # The console script detect-test-pollution runs pytest with this interpreter.
    script = venv / "bin" / "detect-test-pollution"
    script.write_text(f"#!{python}\nimport sys\nfrom detect_test_pollution import main\n"
                      "sys.exit(main())\n", encoding="utf-8")
    script.chmod(0o755)
    stamp.write_text(want, encoding="utf-8")
    return src, python


def pytest_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "STATESNAP_", "VIRTUAL_ENV"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def plain(python: Path, src: Path, ids: list[str], extra: list[str] = (),  # type: ignore[assignment]
          timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Plain pytest (no statesnap) on ``ids``, in that order."""
    return subprocess.run([str(python), "-m", "pytest", *PYTEST_ARGS, "-rA", *extra, *ids],
                          cwd=src, capture_output=True, text=True, env=pytest_env(),
                          timeout=timeout)


def outcome(proc: subprocess.CompletedProcess[str], nodeid: str) -> str | None:
    """The test's outcome from pytest's ``-rA`` short summary (None: it did not run)."""
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS") and (
                rest == nodeid or rest.startswith(nodeid + " - ")):
            return word.lower()
    return None


def failed(proc: subprocess.CompletedProcess[str], nodeid: str) -> bool:
    return outcome(proc, nodeid) in ("failed", "error")


def passed(proc: subprocess.CompletedProcess[str], nodeid: str) -> bool:
    return outcome(proc, nodeid) == "passed"


def validate(case: Case, python: Path, src: Path) -> str | None:
    """None when the victim passes alone and fails after each known polluter; else why not."""
    alone = plain(python, src, [*case.args, case.victim])
    if not passed(alone, case.victim):
        return f"the victim does not pass alone (exit {alone.returncode})"
    for polluter in case.polluters:
        pair = plain(python, src, [*case.args, polluter, case.victim])
        if not failed(pair, case.victim):
            return f"the victim does not fail after {polluter}"
    return None


def check_hidden(case: Case, python: Path, src: Path) -> str | None:
    """None when the suite's default order agrees with ``hidden``; else what it did instead."""
    suite = plain(python, src, [*case.args, case.suite], timeout=1800)
    fails = failed(suite, case.victim)
    if fails == case.hidden:
        said = "hidden" if case.hidden else "not hidden"
        return (f"said {said}, but the victim {'fails' if fails else 'passes'} "
                f"in the default order ({case.suite})")
    return None
