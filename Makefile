# Two commands on a fresh clone: `make demo` and `make test`. Both install into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The suite runs in TEST_WORKERS pytest processes (pytest-xdist), a module per worker at a
# time (module fixtures share their pipeline runs). A pipeline run keeps about one core
# busy (the driver plans query after query), so two workers fill a two-core machine; each
# worker starts a Spark JVM of LAKESTREAMS_DRIVER_MEMORY (tests: 4g).
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: demo test test-all faults bench bench-rules bench-conflicts bench-incremental bench-one-file bench-many-tables bench-run-cost bench-run-profile bench-formats bench-claims bench-replica-merge bench-dv-reads bench-floor lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/lakestreams demo

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PYTEST)

# The core tests and the extended end-to-end variations, the fault suite at every point.
test-all: $(STAMP)
	$(VENV)/bin/ruff check .
	LAKESTREAMS_TESTS=all LAKESTREAMS_FAULT_POINTS=all $(PYTEST)

faults: $(STAMP)
	LAKESTREAMS_TESTS=all LAKESTREAMS_FAULT_POINTS=all $(PY) -m pytest -q tests/test_faults.py tests/test_runlock.py

bench: $(STAMP)
	$(PY) bench/e2e.py $(BENCH_ARGS)

bench-rules: $(STAMP)
	$(PY) bench/rules.py $(BENCH_ARGS)

bench-conflicts: $(STAMP)
	$(PY) bench/conflicts.py $(BENCH_ARGS)

bench-incremental: $(STAMP)
	$(PY) bench/incremental.py $(BENCH_ARGS)

# The 1% run alone, from a history saved once (BENCH_ARGS=--prepare saves it).
bench-one-file: $(STAMP)
	$(PY) bench/one_file.py $(BENCH_ARGS)

bench-many-tables: $(STAMP)
	$(PY) bench/many_tables.py $(BENCH_ARGS)

bench-run-cost: $(STAMP)
	$(PY) bench/run_cost.py $(BENCH_ARGS)

bench-run-profile: $(STAMP)
	$(PY) bench/run_profile.py $(BENCH_ARGS)

bench-formats: $(STAMP)
	$(PY) bench/formats.py $(BENCH_ARGS)

bench-claims: $(STAMP)
	$(PY) bench/claims.py $(BENCH_ARGS)

bench-replica-merge: $(STAMP)
	$(PY) bench/replica_merge.py $(BENCH_ARGS)

bench-dv-reads: $(STAMP)
	$(PY) bench/dv_reads.py $(BENCH_ARGS)

# The 1% share of the least apply (one bronze append, one MERGE per table) of the same stream.
bench-floor: $(STAMP)
	$(PY) bench/floor.py $(BENCH_ARGS)

clean:
	rm -rf .lakestreams spark-warehouse
