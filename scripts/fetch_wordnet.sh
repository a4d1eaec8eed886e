#!/usr/bin/env bash
# Fetch WordNet 3.0 (Debian package wordnet-base) and unpack it into data/cache/wordnet-deb (gitignored).
# Set WORDNET_DEB_DIR to unpack elsewhere. The data files end up in $WORDNET_DEB_DIR/usr/share/wordnet,
# the licence in .../usr/share/doc/wordnet-base/copyright.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$repo_root/scripts/fetch_deb.sh" wordnet-base "${WORDNET_DEB_DIR:-$repo_root/data/cache/wordnet-deb}" \
    usr/share/wordnet/data.noun usr/share/doc/wordnet-base/copyright
