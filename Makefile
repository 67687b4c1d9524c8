# make setup: .venv with the package installed editable and the extras the tests need;
# make demo: the main job on a small built-in default; make test: the test suite (what CI runs);
# make bench: the embedding benchmark (prints a table); make flags-table: docs/FLAGS.md's flag table
# from paddle_elmo/cli/glossary.py's FLAGS; make check-docs: the figures of README, BENCHMARKS, docs/ and
# the model cards against their raw files, the documents' links and commands, and benchmarks/results/
# kept as a lab (tests/test_results_tree.py).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench flags-table check-docs
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: setup
	$(VENV)/bin/paddle-elmo demo

# One pytest worker per CPU (pytest-xdist), each test module whole on one worker (its module
# fixtures built once), the slowest modules handed out first (conftest's SLOWEST_MODULES: xdist's
# own order, by number of tests, is turned off). Most tests run Paddle on one thread (their
# commands with OMP_NUM_THREADS=1).
test: setup
	$(PY) -m pytest -q -n auto --dist loadscope --no-loadscope-reorder tests

bench: setup
	$(PY) benchmarks/bench_embed.py

check-docs: setup
	$(PY) -m pytest -q tests/test_doc_figures.py tests/test_card_figures.py tests/test_docs.py tests/test_results_tree.py

flags-table: setup
	$(PY) -c 'from paddle_elmo.cli import update_flags_doc; update_flags_doc("docs/FLAGS.md")'
