#!/usr/bin/env bash
# README's main command: set up, then run a simulated table end to end.
# Until the daemon lands (issue 4), this runs the rules engine on its own: the exact
# par sheet of a Tiger Buffalo table (layout P, 8 decks) and one settled round.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/tabled rules par-sheet --game tiger-buffalo --layout P --decks 8
echo "One round, dealt 2S 3H 3S 3D KC (Banker wins on a two-card six):"
.venv/bin/tabled rules settle --game tiger-buffalo --layout P 2S 3H 3S 3D KC
