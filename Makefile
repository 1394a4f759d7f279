# Developer tasks for autograd_dag.  Every target below creates .venv on first
# use, installs the project into it, and makes sure Graphviz's `dot` exists.
# Works non-interactively on a fresh Debian machine run as root.

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export DEBIAN_FRONTEND := noninteractive

.PHONY: all setup test demo bench gallery clean

all: test

# pyvenv.cfg is a real file written once per venv (bin/python is a symlink
# whose mtime is the interpreter's), so it is the target that marks the venv.
$(VENV)/pyvenv.cfg:
	@if ! $(PYTHON) -c 'import venv, ensurepip' >/dev/null 2>&1; then \
		if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "make: python venv module missing; installing python3-venv with apt-get"; \
			apt-get -o DPkg::Lock::Timeout=300 update -q && \
			apt-get -o DPkg::Lock::Timeout=300 install -y -q python3-venv || exit 1; \
		else \
			echo "make: '$(PYTHON) -m venv' is unavailable. Run: sudo apt-get install python3-venv" >&2; \
			exit 1; \
		fi; \
	fi
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# Reinstall only when pyproject.toml changes (or the venv is recreated).
$(STAMP): pyproject.toml $(VENV)/pyvenv.cfg
	$(VPY) -m pip install -q -e '.[dev,examples,onnx]'
	@touch $@

# JAX and PyTorch (CPU builds, ~1.5 GB in the venv) only for the tests: make demo never needs them.
INTEROP := $(VENV)/.installed-interop
$(INTEROP): pyproject.toml $(STAMP)
	$(VPY) -m pip install -q -e '.[dev,examples,onnx,jax,torch,test-interop]'
	@touch $@

setup: $(STAMP)
	@bash scripts/ensure_dot.sh
	@bash scripts/ensure_browser.sh

test: setup $(INTEROP)
	$(VPY) -m pytest -n 2 tests

demo: setup
	$(VPY) -m examples.demo

bench: setup
	$(VPY) -m pip install -q -e '.[bench]'
	@set -e; for f in benchmarks/bench_*.py; do \
		[ -e "$$f" ] || { echo "make: no benchmarks/bench_*.py scripts found" >&2; exit 1; }; \
		echo "== $$f"; \
		$(VPY) "$$f"; \
	done

gallery: setup
	$(VENV)/bin/autograd-dag gallery

clean:
	rm -rf $(VENV) build dist out .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
