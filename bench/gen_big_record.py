"""Write a big, realistic record: a real run's record scaled up to hundreds of thousands of tests.

Takes a record a real ``pytest -p statesnap`` run wrote (its header, collection, findings and
footer, and its tests: a polluter and its victim among them) and writes a record with
``--tests`` tests: the real tests at the end, kept as they were, and before them generated
tests in modules that do not exist, each with its ``start`` line and gauges, one in
``--leak-every`` leaving an ``env`` key and a file behind, as a long suite's record holds
them.  A replay (``explain --verify``) only runs the real tests: the generated ones never
leak the victim's key.

    python bench/gen_big_record.py REAL.jsonl OUT.jsonl --tests 267000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("real", type=Path, help="a record a real run wrote")
    ap.add_argument("out", type=Path)
    ap.add_argument("--tests", type=int, default=267_000)
    ap.add_argument("--leak-every", type=int, default=40)
    args = ap.parse_args()
    lines = args.real.read_text(encoding="utf-8").splitlines()
    objs = [json.loads(ln) for ln in lines if ln.strip()]
    header = objs[0]
    real_tests = [o for o in objs if o.get("type") in ("start", "test")]
    rest = [o for o in objs[1:] if o.get("type") not in ("start", "test")]
    collection = [o for o in rest if o.get("type") == "collection"]
    tail = [o for o in rest if o.get("type") != "collection"]
    real_count = sum(1 for o in real_tests if o["type"] == "test")
    fill = max(args.tests - real_count, 0)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dumps(header) + "\n")
        for o in collection:
            f.write(dumps(o) + "\n")
        for i in range(fill):
            mod = f"tests/integration/suite_{i // 400:04d}/test_generated_module_{i // 40:05d}.py"
            nodeid = (f"{mod}::TestGeneratedBehaviourOfTheServiceLayerUnderLoad::"
                      f"test_generated_case_with_a_long_descriptive_name"
                      f"[param-{i}-variant-{i % 7}]")
            f.write(dumps({"type": "start", "index": i, "nodeid": nodeid}) + "\n")
            changes = []
            if i % args.leak_every == 5:
                changes = [
                    {"probe": "env", "key": f"GENERATED_FLAG_{i}", "change": "added",
                     "before": None, "after": "x" * 120, "phase": "call", "severity": 2},
                    {"probe": "files", "key": f"build/generated/out_{i}.json", "change": "added",
                     "before": None, "after": {"size": 512 + i % 100,
                                               "mtime_ns": 1_796_000_000_000_000_000 + i},
                     "phase": "call", "severity": 2},
                ]
            line = {"type": "test", "index": i, "nodeid": nodeid, "worker": "main",
                    "outcome": "passed",
                    "phases": {"setup": "passed", "call": "passed", "teardown": "passed"},
                    "duration": round(0.001 + (i % 97) / 10000, 6), "changes": changes,
                    "gauges": {"threads": 2.0, "native threads": 0.0,
                               "fds": float(14 + i % 3), "children": 0.0}}
            f.write(dumps(line) + "\n")
        for o in real_tests:
            o = dict(o)
            o["index"] = int(o["index"]) + fill
            f.write(dumps(o) + "\n")
        for o in tail:
            if o.get("type") == "footer":
                o = dict(o)
                o["tests"] = fill + real_count
            f.write(dumps(o) + "\n")


if __name__ == "__main__":
    main()
