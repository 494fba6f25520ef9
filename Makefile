# One-command set-up: `make run` starts the app on the demo session, `make test` runs the tests (and the
# documentation's examples), `make docs` builds the documentation into docs/_build/html.
# Each creates .venv and installs the project from its own files on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.marginalia-installed

.PHONY: install run test docs-deps docs screenshots bench-deps bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m app.main --demo

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

DOCS_STAMP := $(VENV)/.marginalia-docs-installed

$(DOCS_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs-deps: $(DOCS_STAMP)

# offline (no intersphinx, nothing fetched); warnings are errors
docs: docs-deps
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# the README's and the docs' screenshots, from the real app (offscreen) on the data in ../shared/data
screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/screenshots.py

bench-deps: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,bench]'

bench: bench-deps
	$(BIN)/python benchmarks/decoders.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis docs/_build
