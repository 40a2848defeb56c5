# Everything runs from .venv, which the first target that needs it creates.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: all install docs test lint typecheck unit test-compat test-compat-smoke demo bench bench-healthy bench-locate bench-report bench-isolate bench-hunt bench-backfill bench-verdicts bench-real golden gpu-check chromium gcc mutation clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests of pollution.html (Playwright drives it; it never
# downloads a browser of its own).  Under CI=true a failed install stops here: the browser
# tests would fail anyway (tests/ci_skips.py), and this says why first.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || { echo "chromium could not be installed: browser tests will be skipped"; \
	           if [ "$$CI" = true ]; then echo "CI=true: failing" >&2; exit 1; fi; }; \
	  else echo "not root: install Debian's chromium package to run the browser tests"; \
	       if [ "$$CI" = true ]; then exit 1; fi; fi; \
	fi

# gcc builds the stand-in NVML library of the nvml tests (tests/nvml_stub/).
gcc:
	@if ! command -v gcc >/dev/null && ! command -v cc >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null) \
	      || { echo "gcc could not be installed: nvml tests will be skipped"; \
	           if [ "$$CI" = true ]; then echo "CI=true: failing" >&2; exit 1; fi; }; \
	  else echo "not root: install gcc to run the nvml tests"; \
	       if [ "$$CI" = true ]; then exit 1; fi; fi; \
	fi

# ruff, then the layers: import-linter fails on an import that goes up a layer (pyproject.toml,
# [tool.importlinter]; docs/ARCHITECTURE.md says which layer may import which).
lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The user guide (mkdocs.yml), into build/site/.  --strict: a broken link, a missing anchor or
# a page left out of the navigation is an error.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

# The unit suite runs on pytest-xdist's workers, as many as CI has cores (2): each scene has
# its own tmp_path and pid namespace, and the venvs are make's, built before.  UNIT_WORKERS=0 runs
# it in one process (for --pdb, or to read one test's output in order).
UNIT_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/python -m pytest -p no:randomly -q -n $(UNIT_WORKERS)

test: $(STAMP) chromium gcc lint typecheck docs unit test-compat-smoke

# pyproject claims pytest>=8.0: the plugin's end-to-end tests run under the oldest claimed
# pytest in a venv of its own (plugins pinned to versions that support it), and under the
# newest in .venv.  CI (make test) runs a smoke subset under the oldest.
COMPAT_OLDEST := 8.0.2
COMPAT_VENV   := .venv-compat-8.0
COMPAT_PINS   := pytest==$(COMPAT_OLDEST) pytest-xdist==3.8.0 pytest-randomly==5.1.0 \
                 pytest-rerunfailures==16.1 pytest-forked==1.7.5
COMPAT_STAMP  := $(COMPAT_VENV)/.installed-stamp
COMPAT_TESTS  := tests/plugin tests/replay tests/verify
COMPAT_SMOKE  := tests/replay/test_replayargs.py tests/plugin/test_outcomes.py \
                 tests/plugin/test_quiet_teardown.py \
                 "tests/replay/test_replay_invocations.py::test_a_replay_adds_no_cache_dir_without_the_cacheprovider"

$(COMPAT_STAMP): pyproject.toml
	$(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/pip install -q --upgrade pip
	$(COMPAT_VENV)/bin/pip install -q -e . $(COMPAT_PINS)
	touch $@

test-compat: $(STAMP) $(COMPAT_STAMP)
	$(COMPAT_VENV)/bin/python -m pytest --version
	$(COMPAT_VENV)/bin/python -m pytest -p no:randomly -q $(COMPAT_TESTS)
	$(BIN)/python -m pytest --version
	$(BIN)/python -m pytest -p no:randomly -q $(COMPAT_TESTS)

test-compat-smoke: $(COMPAT_STAMP)
	$(COMPAT_VENV)/bin/python -m pytest -p no:randomly -q $(COMPAT_SMOKE)

# The bundled demo suite really pollutes state; statesnap names the polluters.
demo: $(STAMP)
	@$(BIN)/python scripts/demo.py

# Instruction counts (deterministic, unlike CPU time on a shared machine) where valgrind is.
COUNT_INSTRUCTIONS := $(if $(shell command -v valgrind 2>/dev/null),--instructions,)

bench: $(STAMP)
	$(BIN)/python bench/bench_overhead.py --pairs 9 $(COUNT_INSTRUCTIONS)
	$(BIN)/python bench/bench_overhead.py --pairs 9 $(COUNT_INSTRUCTIONS) --bytecode off \
		--out bench/results/overhead-nocache.md
	$(BIN)/python bench/bench_fixed.py --pairs 9 $(COUNT_INSTRUCTIONS)
	$(if $(COUNT_INSTRUCTIONS),$(BIN)/python bench/bench_fixed_breakdown.py)

# click, jinja2 and more-itertools from their PyPI sdists (cached in bench/.cache/), with and
# without statesnap: tests reported leaking, CPU ratio.
bench-healthy: $(STAMP)
	$(BIN)/python bench/bench_healthy.py --rounds 3

bench-locate: $(STAMP)
	$(BIN)/python bench/bench_locate.py

bench-report: $(STAMP)
	$(BIN)/python bench/bench_report.py

bench-isolate: $(STAMP)
	$(BIN)/python bench/bench_isolate.py

bench-hunt: $(STAMP)
	$(BIN)/python bench/bench_hunt.py

# The demo's verdicts in the session and read back by every reader (runs the demo once).
bench-verdicts: $(STAMP)
	$(BIN)/python tests/cli/demo_verdicts.py --out bench/results/demo-verdicts.md

# Mutation testing (cosmic-ray) of the modules whose bugs mislead users or leak secrets; too
# slow for `make test`.  MODULES="redact minimize" runs some (scripts/mutation.py lists them).
mutation: $(STAMP)
	$(BIN)/pip install -q -e '.[mutation]'
	$(BIN)/python scripts/mutation.py $(MODULES)
	$(BIN)/python scripts/assemble_benchmarks.py

# Real order-dependent tests from public projects (bench/realworld/cases.toml): each case's
# sdist and venv go to ~/.cache/statesnap-bench-real (STATESNAP_BENCH_CACHE); needs PyPI.
bench-real: $(STAMP)
	$(BIN)/python bench/bench_real.py

bench-backfill: $(STAMP)
	$(BIN)/python bench/bench_backfill.py

# Golden records and reports under snapshots/ (volatile fields scrubbed).
golden: $(STAMP)
	$(BIN)/python tests/report/report_golden.py

# On a machine with an NVIDIA GPU: torch CUDA flags and NVML per-process memory, for real.
# Uses the machine's own python3 (with its CUDA build of torch), statesnap from src/.
gpu-check:
	PYTHONPATH=src python3 scripts/gpu_check.py --out gpu-check-out

clean:
	rm -rf $(VENV) $(COMPAT_VENV) build dist src/*.egg-info .pytest_cache pollution.html
