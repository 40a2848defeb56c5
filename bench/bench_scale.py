"""Issue 27's two scale cases: a test that fills a folder with files, and a huge record.

1. ``folder``: a suite whose one test creates ``--files`` files (100,000) in a new folder
   under the project, run with plain pytest, with statesnap of this checkout, and with
   statesnap of ``--against`` (a tree holding an older ``src/``), each in a fresh process.
2. ``record``: a real run's record scaled up to ``--tests`` tests (267,000: ~200 MB, by
   ``bench/gen_big_record.py``), read by ``statesnap explain``, ``explain --verify``,
   ``report`` and ``diff``, with this checkout and with ``--against``.

Wall time and peak RSS come from GNU time (``/usr/bin/time -f '%e %M'``) around each run;
the ratios are to plain pytest (folder) and to ``--against`` (both), measured in the same run.
The folder case also times its test body inside the test, and compares what each run adds
of its own (the whole less the body) at plain pytest's body.

    .venv/bin/python bench/bench_scale.py --against BASE   # BASE: an export of an older commit
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TIME = "/usr/bin/time"


def timed(argv: list[str], cwd: Path, src: Path | None) -> tuple[float, float, float]:
    """``(wall s, peak RSS MB, CPU s)`` of ``argv`` in ``cwd``; ``src`` on PYTHONPATH.

    CPU time (user + system, the process and the children it waited for) is the steadier
    figure on a shared machine, where the wall time of writing 100,000 files swings several
    times over with the other users' disk traffic."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STATESNAP_"))}
    env["PYTEST_ADDOPTS"] = "-p no:randomly"
    if src is not None:
        env["PYTHONPATH"] = str(src)
    marker = "@@bench "
    proc = subprocess.run([TIME, "-f", marker + "%e %M %U %S", *argv], cwd=cwd, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL)
    line = next(ln for ln in reversed(proc.stderr.splitlines()) if ln.startswith(marker))
    wall, rss_kb, user, system = line[len(marker):].split()
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"{argv}: exit {proc.returncode}\n{proc.stdout[-2000:]}"
                         f"{proc.stderr[-2000:]}\n")
    return float(wall), int(rss_kb) / 1024, float(user) + float(system)


def row(name: str, run: tuple[float, float, float],
        base: tuple[float, float, float] | None) -> str:
    wall, rss, cpu = run
    ratio = "" if base is None else (f"{wall / base[0]:.2f}x wall, {cpu / base[2]:.2f}x CPU, "
                                     f"{rss - base[1]:+.0f} MB")
    return f"| {name} | {wall:.1f} s | {cpu:.1f} s | {rss:.0f} MB | {ratio} |"


FOLDER_SUITE = """
    import os
    import resource
    import time

    def _cpu():
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    def test_a_plain():
        assert True

    def test_fills():
        wall, cpu = time.perf_counter(), _cpu()
        os.makedirs("out", exist_ok=True)
        for i in range({files}):
            with open(os.path.join("out", f"f{{i}}.txt"), "w") as f:
                f.write("x")
        with open({body!r}, "w") as f:
            f.write(f"{{time.perf_counter() - wall}} {{_cpu() - cpu}}")

    def test_z_plain():
        assert True
    """

PAIR_SUITE = """
    import os

    def test_a_polluter():
        os.environ["ZOO_MODE"] = "on"

    def test_b_victim():
        assert os.environ.get("ZOO_MODE") != "on"
    """


def folder_case(work: Path, files: int, against: Path | None, rounds: int) -> None:
    """Each run's whole wall/CPU time, and its own: the whole less the test body's (the
    100,000 writes, timed inside the test).  The body is the same code in every run, but its
    time is the disk's and swings several times over on a shared machine (2-3x between two
    plain runs minutes apart), so it hides what statesnap adds; the own time does not."""
    root = work / "folder"
    root.mkdir()
    body = work / "body.txt"
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_fill.py").write_text(textwrap.dedent(FOLDER_SUITE.format(files=files,
                                                                           body=str(body))))
    py = sys.executable
    runs = [("plain pytest", [py, "-m", "pytest", "-q"], None)]
    rec = work / "folder.jsonl"
    with_ss = [py, "-m", "pytest", "-q", "-p", "statesnap", f"--statesnap-record={rec}",
               f"--statesnap-json={work / 'folder.json'}"]
    runs.append(("statesnap (this checkout)", with_ss, SRC))
    if against is not None:
        runs.append(("statesnap (--against tree)", with_ss, against / "src"))
    print(f"\n### A test that creates {files:,} files in a new folder\n")
    print("Own = the run less its test body (the writes, timed inside the test).\n")
    print("| run | wall | CPU | body wall / CPU | own wall / CPU | peak RSS | against plain "
          "pytest |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    # One unprinted run first: a run that follows the removal of the last one's 100,000
    # files writes them several times slower than the first run on a fresh folder (seen as
    # 10 s against 20-29 s of the body's CPU time), which favoured plain pytest, always first.
    # After this warm-up every printed run follows a removal.
    timed(runs[0][1], root, runs[0][2])
    for _ in range(rounds):
        plain: tuple[float, float, float, float, float] | None = None
        for name, argv, src in runs:
            shutil.rmtree(root / "out", ignore_errors=True)
            rec.unlink(missing_ok=True)
            body.unlink(missing_ok=True)
            wall, rss, cpu = timed(argv, root, src)
            body_wall, body_cpu = map(float, body.read_text().split())
            size = f" (record {rec.stat().st_size / 1e6:.2f} MB)" if rec.exists() else ""
            own_wall, own_cpu = wall - body_wall, cpu - body_cpu
            ratio = ""
            if plain is not None:
                # The same body as plain pytest's: plain's whole time plus what this run
                # added of its own, over plain's whole time.
                ratio = (f"{wall / plain[0]:.2f}x wall, {cpu / plain[2]:.2f}x CPU as run; "
                         f"{(plain[0] + own_wall - plain[3]) / plain[0]:.2f}x wall, "
                         f"{(plain[2] + own_cpu - plain[4]) / plain[2]:.2f}x CPU at plain's "
                         f"body; {rss - plain[1]:+.0f} MB")
            print(f"| {name}{size} | {wall:.1f} s | {cpu:.1f} s | {body_wall:.1f} s / "
                  f"{body_cpu:.1f} s | {own_wall:.1f} s / {own_cpu:.1f} s | {rss:.0f} MB | "
                  f"{ratio} |", flush=True)
            plain = plain or (wall, rss, cpu, own_wall, own_cpu)
    shutil.rmtree(root / "out", ignore_errors=True)


def record_case(work: Path, tests: int, against: Path | None) -> None:
    root = work / "pair"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_pair.py").write_text(textwrap.dedent(PAIR_SUITE))
    real = work / "real.jsonl"
    timed([sys.executable, "-m", "pytest", "-q", "-p", "statesnap",
           f"--statesnap-record={real}"], root, SRC)
    big = work / "big.jsonl"
    subprocess.run([sys.executable, str(HERE / "gen_big_record.py"), str(real), str(big),
                    "--tests", str(tests)], check=True)
    print(f"\n### A record of {tests:,} tests ({big.stat().st_size / 1e6:.0f} MB)\n")
    print("| command | statesnap | wall | CPU | peak RSS | against the older tree |")
    print("| --- | --- | --- | --- | --- | --- |")
    py = sys.executable
    commands = [
        ("explain", ["explain", str(big)]),
        ("explain --verify", ["explain", "--verify", str(big)]),
        ("report", ["report", "-o", str(work / "report.html"), str(big)]),
        ("diff", ["diff", str(big), str(big)]),
    ]
    for name, args in commands:
        results = []
        trees = [("this checkout", SRC)]
        if against is not None:
            trees.append(("--against tree", against / "src"))
        for label, src in trees:
            wall, rss, cpu = timed([py, "-m", "statesnap", *args], root, src)
            results.append((label, wall, rss, cpu))
        mine = results[0]
        other = results[1] if len(results) > 1 else None
        for label, wall, rss, cpu in results:
            ratio = ""
            if other is not None and label == mine[0]:
                ratio = (f"{wall / other[1]:.2f}x wall, {cpu / other[3]:.2f}x CPU, "
                         f"{rss / other[2]:.2f}x RSS")
            print(f"| {name} | {label} | {wall:.1f} s | {cpu:.1f} s | {rss:.0f} MB | {ratio} |",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a tree with an older src/ to compare with")
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--tests", type=int, default=267_000)
    ap.add_argument("--only", choices=("folder", "record"))
    ap.add_argument("--rounds", type=int, default=1, help="folder: runs of each, interleaved")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        if args.only in (None, "folder"):
            folder_case(work, args.files, args.against, args.rounds)
        if args.only in (None, "record"):
            record_case(work, args.tests, args.against)


if __name__ == "__main__":
    main()
