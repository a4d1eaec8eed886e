#!/usr/bin/env bash
# Fetch WordNet 3.0 (Debian package wordnet-base) and unpack it into data/cache/wordnet-deb (gitignored).
# Idempotent: does nothing when the data files are already there. Set WORDNET_DEB_DIR to unpack elsewhere.
# The data files end up in $WORDNET_DEB_DIR/usr/share/wordnet, the licence in .../usr/share/doc/wordnet-base/copyright.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${WORDNET_DEB_DIR:-$repo_root/data/cache/wordnet-deb}"

if [[ -f "$dest/usr/share/wordnet/data.noun" && -f "$dest/usr/share/doc/wordnet-base/copyright" ]]; then
    echo "WordNet already unpacked in $dest"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download wordnet-base); then
    echo "apt-get download wordnet-base failed (try: apt-get update)" >&2
    exit 1
fi
# Unpack beside the destination, then move it in one step, so an interrupted run leaves no half-filled folder.
dpkg -x "$tmp"/wordnet-base_*.deb "$tmp/unpacked"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/unpacked" "$dest"
echo "WordNet unpacked in $dest"
