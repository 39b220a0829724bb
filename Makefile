# The two commands people and CI use: `make run` (the main job) and `make test`.
# Both create/update the virtual environment in .venv first; `make install` does only that.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_VERBOSITY ?= error
export HF_HUB_DISABLE_PROGRESS_BARS ?= 1
export ANONYMIZED_TELEMETRY ?= False
export MLFLOW_DISABLE_TELEMETRY ?= true
export RAGAS_DO_NOT_TRACK ?= true
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: install run test test-fast quality tune-suite bench baseline clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11)"; exit 2; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: the local CPU wheel; the constraints keep every later resolve on it
	$(PY) -m pip install -q torch==2.13.0
# setuptools' editable install (a meta-path finder, needed by the ragrig.* package-dir mapping) always emits an
# information-only "Editable installation" notice; the filter drops that one message, nothing else
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -c constraints.txt -e ".[test]"
	@$(PY) -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torchvision') is not None)" \
		|| { echo "torchvision got installed: it breaks sentence-transformers on CPU torch"; exit 1; }
	touch $(STAMP)

run: install
	$(VENV)/bin/ragrig run

# The whole suite, every test, on TEST_WORKERS parallel pytest-xdist workers (default: the CPU count, at most 4;
# each worker holds its own model, Prefect test server and temp dirs, and torch's OpenMP pool gets its share of the
# cores: tests/conftest.py). One file's tests stay on one worker (--dist loadfile: its module fixtures are built
# once). 265-305 s of pytest from a fresh clone (1,387 tests) on a 2-core machine (2026-11-30; README has
# the figures). Three workers on 2 cores (to fill the waits on servers and subprocesses):
# 306-415 s against two workers' 351-411 s, alternated in the same hour: no steady gain, so not the default.
# TEST_WORKERS=0 runs in-process.
# `make test-fast`: the unit tests only (not marked slow), 77 s on that AVX-512 machine, for the edit-test loop.
TEST_WORKERS ?= $(shell $(PY) -c "import os; print(min(4, os.cpu_count() or 1))" 2>/dev/null || echo 2)
PYTEST_XDIST = $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# The project gates itself inside the suite: tests/flows/test_gate_sample.py runs `ragrig gate --baseline
# datasets/baselines/sample.json --policy configs/gate/default.yaml` on the default config first (a BLOCK fails
# `make test`); as a command of its own before pytest it added 17 s of wall, run in the suite it shares a worker.
test: install
	$(PY) -m pytest -q $(PYTEST_XDIST)

test-fast: install
	$(PY) -m pytest -q -m "not slow" $(PYTEST_XDIST)

# The development suite (docs/quality.md): the default config over the sample, SRD 5.1, pydantic-docs and SciFact
# test (the last three from ../shared), one table per corpus and kind, against the figures before issue 22. Builds
# each corpus's index on first use (SciFact ~5 min), then a few minutes. QUALITY_ARGS="--label NAME --set k=v"
# runs an experiment instead (benchmarks/results/quality-NAME.json; docs/experiments.md logs them).
QUALITY_ARGS ?=
quality: install
	$(PY) benchmarks/quality.py --compare benchmarks/results/quality-before.json $(QUALITY_ARGS)

# Issue 28's must-shows: `ragrig tune` on each dev corpus with its space (configs/tune/<corpus>.yaml: fusion x
# vector weight, depth, hops, section view, rerank at two weights, bge-small, 128-token chunks), nested 5-fold CV.
# Long: each corpus builds two more indexes (bge-small; 128-token chunks), SciFact's ~25 min each on 2 cores, and
# the rerank candidates score 20 pairs per case. A winner is written to configs/tuned-<corpus>.yaml only when
# its held-out gain is significant; the JSON goes to benchmarks/results/tune-<corpus>.json.
TUNE_CORPORA ?= pydantic-docs srd scifact
tune-suite: install
	for c in $(TUNE_CORPORA); do \
		$(VENV)/bin/ragrig tune configs/tune/$$c.yaml --write configs/tuned-$$c.yaml \
			--output-json benchmarks/results/tune-$$c.json || exit 1; \
	done

# Every benchmark of docs/results.md, then benchmarks/results/README.md (tables, goals, plots). Needs ../shared
# (SciFact, SRD). About an hour on 2 cores the first time (SciFact: a cold ingest and two raw encodes,
# ~16 min; the 1M-chunk synthetic index ~17 min to build, reused afterwards); BENCH_SIZES=100000 for a
# quicker pass.
BENCH_SIZES ?= 100000 1000000
bench: install
	$(PY) benchmarks/ingest_vs_encode.py --config configs/srd.yaml
	$(PY) benchmarks/ingest_vs_encode.py --config configs/scifact.yaml
	$(VENV)/bin/ragrig ingest -c configs/scifact.yaml --no-prefect --quiet > /dev/null
	$(PY) benchmarks/retrieval_latency.py --sizes $(BENCH_SIZES)
	$(PY) benchmarks/bm25_engines.py
	$(PY) benchmarks/eval_vs_raw.py
	$(PY) benchmarks/sweep_vs_eval.py configs/sweeps/scifact-fusion.yaml
	$(PY) benchmarks/report.py

baseline: install
	$(VENV)/bin/ragrig gate --baseline datasets/baselines/sample.json --update-baseline

clean:
	rm -rf .ragrig
