#!/usr/bin/env bash
# The whole check, as CI runs it: set up, lint, type-check, docs drift, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
echo "== ruff";   .venv/bin/ruff check .
echo "== mypy";   .venv/bin/mypy
echo "== docs";   .venv/bin/tabled rules docs --check && .venv/bin/tabled protocols docs --check
echo "== pytest"; .venv/bin/pytest "$@"
