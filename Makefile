# memd: `make serve` sets up and runs the daemon; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# Quiet: pip says only what went wrong; setuptools' note on the strict editable install (a
# warning printed by the build backend, in pip's subprocess) is expected here, not news.
PIP := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip --quiet --disable-pip-version-check

.PHONY: serve test compile lint install-hooks bench clean

# memd is installed in setuptools' strict editable mode: a tree of links under build/, so
# neither site nor `memd-hook` pays for an import finder at start (12 ms of every hook call).
# New modules appear after a reinstall, hence the source directories as prerequisites.
# `make serve` installs the daemon's dependencies only; `make test` adds the test tools.
PACKAGE_DIRS := $(shell find memd -type d ! -name __pycache__)
$(STAMP): pyproject.toml $(PACKAGE_DIRS)
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "memd needs Python 3.11 or newer"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing memd into $(VENV) (the daemon's dependencies)"
	@$(PIP) install --upgrade pip
	@$(PIP) install -e . --config-settings editable_mode=strict
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	@echo "adding the test tools to $(VENV)"
	@$(PIP) install -e '.[test]' --config-settings editable_mode=strict
	@touch $(TEST_STAMP)

# Byte-compiled once here, so the hook and the CLI never compile at start, even under
# PYTHONDONTWRITEBYTECODE (up to date files are skipped: this takes about 0.1 s).
compile: $(STAMP)
	@$(BIN)/python -I -c 'import compileall, memd; compileall.compile_dir(memd.__path__[0], quiet=1)'

serve: compile
	$(BIN)/memd serve

test: compile $(TEST_STAMP)
	$(BIN)/ruff check memd tests bench
	$(BIN)/ruff format --check memd tests bench
	$(BIN)/mypy memd
	$(BIN)/pytest

lint: $(TEST_STAMP)
	$(BIN)/ruff check memd tests bench
	$(BIN)/mypy memd

install-hooks: $(STAMP)
	$(BIN)/memd install

clean:
	rm -rf $(VENV) build *.egg-info
