#!/usr/bin/env bash
# README's main command: set up, then run a whole simulated table end to end.
# The simulated shuffler (behind the pyusb backend) and shoe (behind a pty) are opened
# by the daemon through its real transports; a private Mosquitto carries the results;
# a simulated dealer works the table over MQTT. Extra arguments go to 'tabled simulate'
# (e.g. --game tiger-baccarat --layout A --rounds 50).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v mosquitto >/dev/null && [ ! -x /usr/sbin/mosquitto ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq mosquitto >/dev/null
    else
        echo "mosquitto is missing: sudo apt-get install mosquitto" >&2; exit 1
    fi
fi
exec .venv/bin/tabled simulate "$@"
