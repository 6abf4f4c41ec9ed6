#!/usr/bin/env bash
# tabled under a real systemd: PID 1 of a booted Debian 12 container (systemd-nspawn),
# installed by scripts/install.sh exactly as on a table, then checked by hil/systemd_check.py
# (READY=1, STATUS, the sandbox, the watchdog, restarts, a clean stop, a bad config).
#
#   sudo ./scripts/systemd-check.sh
#
# Needs root and the network: the Debian archive the host's apt uses (scripts/apt-mirror.sh;
# TABLED_DEBIAN_MIRROR overrides it) and PyPI. The first run builds the container's root
# file system with debootstrap (about 1.5 minutes); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOTFS=${TABLED_NSPAWN_ROOTFS:-/var/tmp/tabled-nspawn-bookworm}
if [ "$(id -u)" != 0 ]; then echo "run as root: systemd-nspawn needs it" >&2; exit 1; fi
command -v debootstrap >/dev/null && command -v systemd-nspawn >/dev/null ||
    apt-get install -y -qq --no-install-recommends debootstrap systemd-container >/dev/null

if [ ! -x "$ROOTFS/lib/systemd/systemd" ]; then
    # The Debian archive this host's apt uses: the check works wherever the host's apt does.
    MIRROR=$(scripts/apt-mirror.sh)
    echo "== debootstrap Debian 12 into $ROOTFS from $MIRROR"
    rm -rf "$ROOTFS.new"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,mosquitto,python3,python3-venv,procps \
        bookworm "$ROOTFS.new" "$MIRROR" >/dev/null
    # The container shares the host's network: its own broker would fight over 1883.
    # The check starts a private one on a free port instead.
    ln -sf /dev/null "$ROOTFS.new/etc/systemd/system/mosquitto.service"
    mv "$ROOTFS.new" "$ROOTFS"
fi

# The host's CA bundle: pip inside reaches PyPI the way the host does (through a proxy
# whose certificate the host trusts, where there is one).
cp /etc/ssl/certs/ca-certificates.crt "$ROOTFS/etc/ssl/certs/ca-certificates.crt"

echo "== this checkout into the container"
# A clean table each run: nothing installed, enabled or journalled by the last one.
rm -rf "$ROOTFS/src" "$ROOTFS/opt/tabled" "$ROOTFS/etc/tabled" "$ROOTFS/etc/credstore" \
    "$ROOTFS/var/lib/tabled" "$ROOTFS/etc/systemd/system/tabled.service"* \
    "$ROOTFS/etc/systemd/system/multi-user.target.wants/tabled.service" \
    "$ROOTFS/var/log/journal/"*
mkdir -p "$ROOTFS/src"
tar --exclude=./.venv --exclude=./.git -c . | tar -x -C "$ROOTFS/src"

echo "== boot it"
systemd-nspawn -q --register=no --keep-unit -D "$ROOTFS" -b --console=pipe \
    </dev/null >/dev/null 2>&1 &
NSPAWN=$!
cleanup() {
    [ -n "${PID1:-}" ] && nsenter -t "$PID1" -a systemctl poweroff 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$NSPAWN" 2>/dev/null || return 0; sleep 0.2; done
    kill "$NSPAWN" 2>/dev/null || true
}
trap cleanup EXIT
PID1=
for _ in $(seq 100); do
    PID1=$(pgrep -P "$NSPAWN" -x systemd || true)
    if [ -n "$PID1" ]; then
        state=$(nsenter -t "$PID1" -a systemctl is-system-running 2>/dev/null || true)
        case "$state" in running|degraded) break ;; esac
    fi
    sleep 0.3
done
[ -n "$PID1" ] || { echo "the container did not boot" >&2; exit 1; }
echo "   systemd is PID 1 of the container (host pid $PID1): $state"

inside() { nsenter -t "$PID1" -a "$@"; }
echo "== install (scripts/install.sh)"
inside bash -c 'cd /src && ./scripts/install.sh' | sed 's/^/   /'
echo "== check"
inside /opt/tabled/current/bin/python -m hil.systemd_check
