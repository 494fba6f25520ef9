# One-command set-up: `make run` starts the app on the demo project, `make test` runs the tests.
# Both create .venv and install the project from its own files on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_GUI  := $(VENV)/.marginalia-gui
STAMP_TEST := $(VENV)/.marginalia-test

.PHONY: install run test test-fast wheel-check bench-deps bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# each install also compiles the numerical kernels once (both cores), so the first window and command are quick
$(STAMP_GUI): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[gui]'
	$(BIN)/marginalia-cli prepare
	@touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/marginalia-cli prepare
	@touch $@ $(STAMP_GUI)

install: $(STAMP_GUI)

run: $(STAMP_GUI)
	$(BIN)/python -m marginalia.app --demo

# the whole suite, then the wheel as a user installs it (no GUI, no Dask) in a fresh environment
test: $(STAMP_TEST)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory wheel-check

test-fast: $(STAMP_TEST)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m "not slow"

wheel-check: $(STAMP_TEST)
	$(BIN)/python tests/wheel_check.py

bench-deps: $(STAMP_TEST)
	$(BIN)/python -m pip install -q -e '.[test,bench]'

bench: bench-deps
	$(BIN)/python benchmarks/decoders.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist
