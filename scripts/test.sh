#!/usr/bin/env bash
# The whole check, as CI runs it: set up, lint, type-check, docs drift, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
echo "== ruff";   .venv/bin/ruff check .
echo "== mypy";   .venv/bin/mypy
echo "== docs";   .venv/bin/tabled rules docs --check && .venv/bin/tabled protocols docs --check
# Two workers: most tests wait on processes, brokers and timers, not the CPU, so two at
# once nearly halve the time even on two cores. Every test has its own broker, port and
# temp dir. -n 0 (or TABLED_TEST_WORKERS=0) runs them one by one.
echo "== pytest"; .venv/bin/pytest -n "${TABLED_TEST_WORKERS:-2}" --dist loadgroup "$@"
