# make setup: .venv from requirements.txt; make demo: the main job on a small built-in default;
# make test: the test suite (what CI runs); make bench: the benchmarks (prints tables).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench
setup: $(VENV)/.installed

# The .pth file puts this checkout on the venv's path (what an editable install does), so the
# benchmarks and the launched test workers import our modules without editing sys.path.
$(VENV)/.installed: requirements.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -c "import site; open(site.getsitepackages()[0] + '/elmo-paddle.pth', 'w').write('$(CURDIR)\n')"
	touch $@

demo: setup
	$(PY) demo.py

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) benchmarks/bench_embed.py
