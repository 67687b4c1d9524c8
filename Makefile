# make setup: .venv from requirements.txt; make demo: the main job on a small built-in default;
# make test: the test suite (what CI runs); make bench: the benchmarks (prints tables).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench
setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

demo: setup
	$(PY) demo.py

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) benchmarks/bench_embed.py
