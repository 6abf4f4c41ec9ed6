#!/usr/bin/env bash
# Installs tabled on a table's single-board computer (Debian 12 or newer), as root:
#
#   sudo ./scripts/install.sh            # from a checkout or an unpacked source release
#
# Each install is a new release under /opt/tabled/releases/, and /opt/tabled/current
# points at it, so a rollback is one symlink (docs/operations.md). Never overwrites the
# config, the keys or the journal. --root DIR installs into DIR instead of / and skips
# systemctl and udevadm (for packaging and for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
ROOT=/
while [ $# -gt 0 ]; do
    case "$1" in
        --root) ROOT=$2; shift 2 ;;
        *) echo "usage: $0 [--root DIR]" >&2; exit 2 ;;
    esac
done
R=${ROOT%/}
live() { [ "$ROOT" = / ]; }
if live && [ "$(id -u)" != 0 ]; then echo "run as root (sudo $0)" >&2; exit 1; fi
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 11) else "tabled needs Python 3.11+")' \
    || { live && apt-get install -y -qq python3-venv >/dev/null; }

# libusb: the shuffler is opened with pyusb, which needs it ('tabled doctor' checks it).
if live && ! ldconfig -p | grep -q 'libusb-1\.0\.so'; then
    apt-get install -y -qq libusb-1.0-0 >/dev/null
fi

VERSION=$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
RELEASE=$VERSION-$(date -u +%Y%m%dT%H%M%SZ)
OPT=$R/opt/tabled
echo "== release $RELEASE into $OPT/releases/$RELEASE"
mkdir -p "$OPT/releases"
# The venv is built at the path it runs from (/opt/tabled/releases/...): venvs do not move.
"$PYTHON" -m venv "$OPT/releases/$RELEASE"
"$OPT/releases/$RELEASE/bin/python" -m pip install --quiet --upgrade pip
"$OPT/releases/$RELEASE/bin/python" -m pip install --quiet "$SRC"
mkdir -p "$OPT/releases/$RELEASE/docs"
cp -r docs/. "$OPT/releases/$RELEASE/docs/"
"$OPT/releases/$RELEASE/bin/tabled" rules docs --check --output "$OPT/releases/$RELEASE/docs/games.md"
ln -sfn "releases/$RELEASE" "$OPT/current.new" && mv -T "$OPT/current.new" "$OPT/current"

echo "== systemd unit, udev rules, user and directories"
install -D -m 0644 systemd/tabled.service "$R/etc/systemd/system/tabled.service"
install -D -m 0644 systemd/99-tabled.rules "$R/etc/udev/rules.d/99-tabled.rules"
install -D -m 0644 systemd/tabled.sysusers "$R/usr/lib/sysusers.d/tabled.conf"
install -D -m 0644 systemd/tabled.tmpfiles "$R/usr/lib/tmpfiles.d/tabled.conf"
install -D -m 0644 systemd/mosquitto/acl.example "$OPT/share/mosquitto-acl.example"
install -D -m 0644 systemd/prometheus/tabled-alerts.yml "$OPT/share/prometheus-alerts.example.yml"
systemd-sysusers --root="$ROOT" "$R/usr/lib/sysusers.d/tabled.conf"
systemd-tmpfiles --root="$ROOT" --create "$R/usr/lib/tmpfiles.d/tabled.conf"

# By number: with --root, the user exists in that tree's /etc/group, not this one's.
GID=$(awk -F: '$1 == "tabled" {print $3}' "$R/etc/group")
CONF=$R/etc/tabled/table.toml
if [ ! -e "$CONF" ]; then
    install -m 0640 -g "$GID" systemd/table.example.toml "$CONF"
    echo "   wrote the example config $CONF: edit it for this table; it trusts no"
    echo "   principal until you put a real public key in [commands.principals] (on the"
    echo "   supervisor's machine: tabled keys generate --out pit-supervisor-1), and"
    echo "   'config check' says so (docs/operations.md#security)"
fi
CRED=$R/etc/credstore/tabled
if [ ! -e "$CRED/signing-key" ]; then
    "$OPT/current/bin/tabled" keys generate --out "$CRED/signing" >/dev/null
    mv "$CRED/signing.pem" "$CRED/signing-key"
    install -m 0644 "$CRED/signing.pub" "$R/etc/tabled/signing.pub"
    rm "$CRED/signing.pub"
    echo "   made the table's signing key; give upstream its public half: /etc/tabled/signing.pub"
fi
if [ ! -e "$CRED/mqtt-password" ]; then
    install -m 0600 /dev/null "$CRED/mqtt-password"  # LoadCredential= needs the file
fi

if live; then
    # No udevd in a container: the rules then apply wherever udev runs, at the next boot.
    if udevadm control --reload 2>/dev/null; then
        udevadm trigger --subsystem-match=tty --subsystem-match=usb
    else
        echo "   udev is not running here: the device rules take effect when it does"
    fi
    systemctl daemon-reload
    systemctl enable tabled.service
    echo "== installed. Check the config, then start:"
    echo "   CREDENTIALS_DIRECTORY=/etc/credstore/tabled /opt/tabled/current/bin/tabled config check"
    echo "   /opt/tabled/current/bin/tabled doctor --credentials /etc/credstore/tabled"
    echo "   systemctl restart tabled && journalctl -u tabled -f"
fi
