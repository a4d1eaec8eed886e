#!/usr/bin/env bash
# Fetch GCIDE (Debian package dict-gcide, GPL-3) and unpack it into data/cache/deb/gcide (gitignored; the
# Vec2Sent corpus builder unpacks it there too), for
# extra training definitions: python -m core gcide. The dictd files end up in .../usr/share/dictd.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$repo_root/scripts/fetch_deb.sh" dict-gcide "${GCIDE_DEB_DIR:-$repo_root/data/cache/deb/gcide}" \
    usr/share/dictd/gcide.index usr/share/dictd/gcide.dict.dz usr/share/doc/dict-gcide/copyright
