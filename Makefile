# memd: `make serve` sets up and runs the daemon; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install-hooks bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "memd needs Python 3.11 or newer"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/memd serve

test: $(STAMP)
	$(BIN)/ruff check memd tests bench
	$(BIN)/ruff format --check memd tests bench
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check memd tests bench
	$(BIN)/mypy memd

install-hooks: $(STAMP)
	$(BIN)/memd install

clean:
	rm -rf $(VENV) build *.egg-info
