# One-command set-up: `make run` starts the app on the demo project, `make test` runs the tests (with the
# documentation's examples and a check of the wheel), `make docs` builds the documentation into docs/_build/html.
# Each creates .venv and installs the project from its own files on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_GUI  := $(VENV)/.marginalia-gui
STAMP_TEST := $(VENV)/.marginalia-test
STAMP_DOCS := $(VENV)/.marginalia-docs

.PHONY: install run lint test test-fast wheel-check docs-deps docs screenshots bench-deps bench clean

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

# the linter (configured in pyproject.toml; `ruff check --fix` repairs most of what it finds)
lint: $(STAMP_TEST)
	$(BIN)/ruff check .

# the linter, the whole suite, then the wheel as a user installs it (no GUI, no Dask) in a fresh environment
test: lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory wheel-check

# the linter and every test not marked slow (about a minute)
test-fast: lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m "not slow"

wheel-check: $(STAMP_TEST)
	$(BIN)/python tests/wheel_check.py

$(STAMP_DOCS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[docs]'
	@touch $@

docs-deps: $(STAMP_DOCS)

# offline (no intersphinx, nothing fetched); warnings are errors
docs: docs-deps
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# the README's and the docs' screenshots, from the real app (offscreen) on the data in ../shared/data
screenshots: $(STAMP_TEST)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m benchmarks.images.screenshots

bench-deps: $(STAMP_TEST)
	$(BIN)/python -m pip install -q -e '.[test,bench]'

bench: bench-deps
	$(BIN)/python -m benchmarks.speed.decoders --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache build dist docs/_build
