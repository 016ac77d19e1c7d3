# Two commands for a newcomer: `make demo` and `make test`. Each builds .venv once with a
# Python that TensorFlow 2.15 supports and reinstalls only when pyproject.toml changes.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CANDIDATES := python3.11 python3.10 python3.9 python3 python

# The first interpreter on PATH whose version TensorFlow 2.15 wheels exist for (3.9 to 3.11).
BASE_PYTHON := $(shell for p in $(CANDIDATES); do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(not (3,9) <= sys.version_info[:2] <= (3,11))' 2>/dev/null \
	&& { echo $$p; break; }; done)

.PHONY: demo test bench lint clean
.DEFAULT_GOAL := demo

$(PY):
	@if [ -z "$(BASE_PYTHON)" ]; then echo "error: no Python 3.9-3.11 on PATH (TensorFlow 2.15 supports only these); install python3.11" >&2; exit 1; fi
	$(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev,beam]'
	@touch $@ $(VENV)/.installed-run

demo: $(VENV)/.installed-run
	$(VENV)/bin/tfship demo --workdir $(or $(WORKDIR),demo-workdir)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest -q -p no:cacheprovider

bench: $(VENV)/.installed-dev
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-workdir build src/*.egg-info
