# Two commands, nothing installed by hand: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench java zookeeper chromium clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kmc needs Python >= 3.11; set PYTHON=/path/to/python3.11 and re-run make")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# The Spark engine runs on the JVM: install a Java runtime if there is none.
java:
	@bash scripts/ensure-java

# The cluster tests run a real ZooKeeper ensemble (Debian's zookeeper package).
zookeeper: java
	@bash scripts/ensure-zookeeper

# The browser tests drive headless Chromium (Debian's chromium and chromium-driver).
chromium:
	@bash scripts/ensure-chromium

# The run report (configuration, a plot per BFS level, every property's verdict, action
# coverage) goes to build/run-report.html, replaced on every run.
run: $(STAMP) java
	@mkdir -p build
	$(BIN)/kmc check --preset default --engine spark --report build/run-report.html --force

# Two workers, one a core; a test file stays on one worker (its module fixtures are built
# once, and the docs blocks that share the checkout's files run in order).  The files
# are handed out longest first (tests/conftest.py), not by their number of tests.
JOBS ?= 2

test: $(STAMP) java zookeeper chromium
	$(BIN)/python -m pytest -m "" -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=60 --doctest-modules checker spec impl tests

bench: $(STAMP)
	$(BIN)/python benchmarks/presets.py

clean:
	rm -rf $(VENV) build *.egg-info
