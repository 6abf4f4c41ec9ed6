#!/usr/bin/env bash
# Creates .venv and installs tabled into it (with the dev tools when given "dev").
# Safe to run again: it only installs what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "tabled needs Python 3.11 or newer")'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "${1:-}" = "dev" ]; then
    .venv/bin/python -m pip install --quiet -e '.[dev]'
else
    .venv/bin/python -m pip install --quiet -e .
fi
