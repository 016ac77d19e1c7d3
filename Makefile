# Two commands for a newcomer: `make demo` and `make test`. Each builds .venv once with a
# Python that TensorFlow 2.15 supports and reinstalls only when pyproject.toml changes.
# `make test` also builds .venv-run, the newest TensorFlow on a newer Python, and runs every
# test that does not need tf.estimator there too.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CANDIDATES := 3.11 3.10 3.9
RUN_VENV := .venv-run
RUN_PY := $(RUN_VENV)/bin/python
RUN_CANDIDATES := 3.12 3.13 3.11 3.10

# The first interpreter of the given minor versions, in order: pythonX.Y on PATH when it runs,
# else one that pyenv installed (its shims run only with PYENV_VERSION, so the real binary).
find_python = $(shell for v in $(1); do 	if command -v python$$v >/dev/null 2>&1 && python$$v -c 'pass' >/dev/null 2>&1; then echo python$$v; break; fi; 	root=$$(pyenv root 2>/dev/null) && for p in $$(ls -d $$root/versions/$$v.* 2>/dev/null | sort -V -r); do 	  if [ -x $$p/bin/python$$v ]; then echo $$p/bin/python$$v; break 2; fi; done; 	done)
BASE_PYTHON := $(call find_python,$(CANDIDATES))
RUN_PYTHON := $(call find_python,$(RUN_CANDIDATES))

.PHONY: demo test prepare test-estimator test-run test-fast test-core bench lint browser clean fixtures-newtf protos opdefs
.DEFAULT_GOAL := demo

$(PY):
	@if [ -z "$(BASE_PYTHON)" ]; then echo "error: no Python 3.9-3.11 found (TensorFlow 2.15 supports only these); install python3.11" >&2; exit 1; fi
	$(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[estimator]'
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[estimator,dev,beam,spark]'
	@touch $@ $(VENV)/.installed-run

# The newest TensorFlow (the run extra) with numpy 2 and today's protobuf, and TF Serving's API of
# the same release for the tests that call the server with the official stubs.
$(RUN_PY):
	@if [ -z "$(RUN_PYTHON)" ]; then echo "error: no Python 3.10-3.13 found for the newest TensorFlow; install python3.12" >&2; exit 1; fi
	$(RUN_PYTHON) -m venv $(RUN_VENV)
	$(RUN_PY) -m pip install --quiet --upgrade pip

$(RUN_VENV)/.installed-dev: pyproject.toml | $(RUN_PY)
	$(RUN_PY) -m pip install --quiet -e '.[run,dev,beam,spark]' tensorflow-serving-api
	@touch $@

demo: $(VENV)/.installed-run
	$(VENV)/bin/tfship demo --workdir $(or $(WORKDIR),demo-workdir)

# tests/ and benchmarks/ are checked with relaxed rules (tests/mypy.ini), one run per import root
MYPY_TESTS = $(VENV)/bin/mypy --config-file tests/mypy.ini

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy
	MYPYPATH=src:tests $(MYPY_TESTS) tests --exclude '^tests/(exporters|inspect)/'
	MYPYPATH=src:tests/exporters:tests $(MYPY_TESTS) tests/exporters
	MYPYPATH=src:tests/inspect:tests $(MYPY_TESTS) tests/inspect
	MYPYPATH=src:benchmarks:tests:tests/inspect $(MYPY_TESTS) benchmarks
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# the tests open pages in a real headless Chromium (the promotion report, the docs site) and call
# servers with curl and jq (the Serving pages' examples), all from Debian's packages
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v curl >/dev/null 2>&1 && command -v jq >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl jq >/dev/null; }

# Both lanes: the whole suite on TensorFlow 2.15 (.venv) and every test not marked `estimator`
# on the newest TensorFlow (.venv-run), whose Estimator fixtures are built by .venv's Python
# (TFSHIP_ESTIMATOR_PYTHON). No test is skipped in either lane. The lanes run side by side, each
# printing its report when it ends; then the tests marked `timing`, which measure wall time
# against a bound and so must not share the CPU with a whole other lane, run in both lanes alone.
# The venvs, Chromium and protoc are installed side by side first: mostly downloads.
test: prepare lint
	$(MAKE) -j2 --output-sync=target test-estimator test-run MARKS='not timing' ONCE=1
	$(MAKE) test-estimator test-run MARKS=timing ONCE=1

prepare:
	$(MAKE) -j4 $(VENV)/.installed-dev $(RUN_VENV)/.installed-dev browser $(PROTOC_VENV)/.installed-$(GRPCIO_TOOLS)

# MARKS narrows a lane to the tests matching a pytest marker expression (all when empty). With
# ONCE, the estimator lane leaves the tests marked `core` (the TensorFlow-free install, the
# docs site: nothing of a lane's TensorFlow in them) to the run lane.
MARKS ?=
ONCE ?=
EST_MARKS = $(if $(ONCE),not core$(if $(MARKS), and ($(MARKS))),$(MARKS))
PYTEST := pytest -q -p no:cacheprovider --durations=20

# benchmarks/lanes.py (run by the benchmarks' test) measures both lanes from this one
test-estimator: $(VENV)/.installed-dev $(RUN_VENV)/.installed-dev
	$(VENV)/bin/$(PYTEST) $(if $(EST_MARKS),-m '$(EST_MARKS)')

test-run: $(RUN_VENV)/.installed-dev $(VENV)/.installed-dev
	TFSHIP_ESTIMATOR_PYTHON=$(abspath $(PY)) $(RUN_VENV)/bin/$(PYTEST) -m 'not estimator$(if $(MARKS), and ($(MARKS)))'

# The inner loop: the tests not marked slow, on the TensorFlow 2.15 lane. Never instead of `make test`.
test-fast: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -q -p no:cacheprovider -m 'not slow'

# The core install alone (`pip install .`, no TensorFlow) on Python 3.13, else 3.12, else .venv's,
# once with protobuf 6.x and once with 3.20.x, against exports and a server of the full install;
# part of `make test`. The venvs are .venv-core-py3.1x-install-protobuf*.
test-core: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/test_core_install.py

bench: $(VENV)/.installed-dev
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# SavedModels exported by the newest TensorFlow and Keras 3, with the outputs that TensorFlow
# computes, for the tests that run them under the pinned TF 2.15. Built in their own venv.
NEWTF_VENV := .venv-newtf
NEWTF_PACKAGES ?= tensorflow keras jax
NEWTF_PYTHON := $(shell for p in python3.12 python3.13 python3.11 python3.10 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(not (3,10) <= sys.version_info[:2] <= (3,13))' 2>/dev/null \
	&& { echo $$p; break; }; done)

fixtures-newtf:
	@if [ -z "$(NEWTF_PYTHON)" ]; then echo "error: no Python 3.10-3.13 on PATH for the newest TensorFlow" >&2; exit 1; fi
	test -x $(NEWTF_VENV)/bin/python || $(NEWTF_PYTHON) -m venv $(NEWTF_VENV)
	$(NEWTF_VENV)/bin/python -m pip install --quiet --upgrade pip $(NEWTF_PACKAGES)
	$(NEWTF_VENV)/bin/python tests/fixtures/newtf/build.py tests/fixtures/newtf

# tfship's message descriptors: the .proto sources under src/tfship/_wire/proto compiled by a
# pinned protoc (grpcio-tools, in its own venv) into the FileDescriptorSet the package ships.
# Run it after editing a .proto; tests/wire fails while the shipped file is stale.
PROTOC_VENV := .venv-protoc
GRPCIO_TOOLS := grpcio-tools==1.85.1
PROTO_DIR := src/tfship/_wire/proto
PROTOS_OUT ?= $(PROTO_DIR)/descriptors.pb

$(PROTOC_VENV)/.installed-$(GRPCIO_TOOLS):
	@if [ -z "$(BASE_PYTHON)" ]; then echo "error: no Python 3.9-3.11 on PATH" >&2; exit 1; fi
	test -x $(PROTOC_VENV)/bin/python || $(BASE_PYTHON) -m venv $(PROTOC_VENV)
	$(PROTOC_VENV)/bin/python -m pip install --quiet $(GRPCIO_TOOLS)
	@touch $@

protos: $(PROTOC_VENV)/.installed-$(GRPCIO_TOOLS)
	cd $(PROTO_DIR) && $(abspath $(PROTOC_VENV))/bin/python -m grpc_tools.protoc -I. --include_imports \
		--descriptor_set_out=$(abspath $(PROTOS_OUT)) $$(find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)

# The ops each lane's TensorFlow registers, with their attribute names and the newest XlaCallModule
# version it runs: the tables `inspect check` reads instead of importing TensorFlow, one per
# shipped TensorFlow (opdefs-<version>.json). Run it after changing either lane's TensorFlow;
# tests/inspect fails on each lane while its table is stale.
OPDEFS_DIR ?= src/tfship/inspect

opdefs: $(VENV)/.installed-run $(RUN_VENV)/.installed-dev
	$(PY) -m tfship.inspect._opdefs_gen $(OPDEFS_DIR)
	$(RUN_PY) -m tfship.inspect._opdefs_gen $(OPDEFS_DIR)

clean:
	rm -rf $(VENV) $(RUN_VENV) $(NEWTF_VENV) $(PROTOC_VENV) .venv-core-* .venv-v2-clients .venv-*.lock demo-workdir build site src/*.egg-info
