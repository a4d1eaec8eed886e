#!/usr/bin/env bash
# Usage: scripts/fetch_deb.sh PACKAGE DEST FILE...
# Fetch a Debian package (apt-get download) and unpack it (dpkg -x) into DEST. Idempotent: does nothing when
# every FILE (a path relative to DEST) is already there. An interrupted run leaves no half-filled DEST.
set -euo pipefail

package="$1" dest="$2"
shift 2
missing=0
for file in "$@"; do [[ -f "$dest/$file" ]] || missing=1; done
if [[ $missing == 0 ]]; then
    echo "$package already unpacked in $dest"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download "$package"); then
    echo "apt-get download $package failed (try: apt-get update)" >&2
    exit 1
fi
# Unpack beside the destination, then move it in one step.
dpkg -x "$tmp"/"$package"_*.deb "$tmp/unpacked"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/unpacked" "$dest"
echo "$package unpacked in $dest"
