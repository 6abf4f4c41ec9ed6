#!/usr/bin/env bash
# Prints the Debian archive this host's apt uses (the URI of its first plain "SUITE/main"
# package index: not -security, -updates or -backports), for debootstrap to use the same.
#
#   scripts/apt-mirror.sh             # from 'apt-cache policy'
#   apt-cache policy | scripts/apt-mirror.sh -
#
# TABLED_DEBIAN_MIRROR overrides it. Exits 1, saying so, when apt has no such source.
set -euo pipefail
if [ -n "${TABLED_DEBIAN_MIRROR:-}" ]; then echo "$TABLED_DEBIAN_MIRROR"; exit 0; fi
if [ "${1:-}" = - ]; then policy=$(cat); else policy=$(apt-cache policy 2>/dev/null || true); fi
# Lines like: " 500 URI SUITE/main ARCH Packages"
mirror=$(awk '$NF == "Packages" && NF >= 5 {
                 split($3, s, "/")
                 if (s[1] !~ /-/ && s[2] == "main") { print $2; exit }
             }' <<<"$policy")
if [ -z "$mirror" ]; then
    echo "no Debian archive in this host's apt sources (apt-cache policy); set" \
         "TABLED_DEBIAN_MIRROR=URI" >&2
    exit 1
fi
echo "$mirror"
