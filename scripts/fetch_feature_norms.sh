#!/usr/bin/env bash
# Fetch the feature norms (Buchanan, Valentine & Maxwell 2019; GPL-3.0) that the everyday adapter is trained
# on (python -m core everyday-adapter) and build data/cache/feature-norms/feature-norms.tsv (git-ignored), the
# file ../shared/data/feature-norms holds on development machines, from the authors' public repository.
#
#   bash scripts/fetch_feature_norms.sh             # into data/cache/feature-norms
#   bash scripts/fetch_feature_norms.sh --dry-run   # say what would be done; no network
#
# Needs a network connection, curl, unzip and python. The repository's LICENSE (GPL-3.0) is copied beside
# the file; cite the paper (core/lexicon/norms.py, NORMS_SOURCE) with anything trained on it.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="${NORMS_COMMIT:-ad7a771}"
archive="${NORMS_ARCHIVE:-https://github.com/doomlab/Word-Norms-2/archive/$commit.zip}"
dest="$repo_root/data/cache/feature-norms"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,10p' "$0"; exit 0; fi
if [[ "${1:-}" == "--dry-run" ]]; then
    echo "would download $archive"
    echo "would build $dest/feature-norms.tsv from its folder '1.5 raw words no wiki/_fixed', and copy its LICENSE"
    exit 0
fi
for tool in curl unzip python; do
    command -v "$tool" >/dev/null || { echo "fetch_feature_norms: needs $tool" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "Downloading the norms' repository at $commit ($archive)..."
curl -fsSL "$archive" -o "$work/norms.zip"
unzip -q "$work/norms.zip" -d "$work"
folder="$(find "$work" -type d -path '*1.5 raw words no wiki/_fixed' | head -n 1)"
[[ -n "$folder" ]] || { echo "fetch_feature_norms: no '1.5 raw words no wiki/_fixed' folder in the archive" >&2; exit 1; }
mkdir -p "$dest"
cp "$(find "$work" -maxdepth 2 -name LICENSE | head -n 1)" "$dest/LICENSE"
cd "$repo_root"
python -c "import sys; from pathlib import Path; from core.lexicon.norms import build_norms_file; \
print(build_norms_file(Path(sys.argv[1]), Path(sys.argv[2])), 'rows written to', sys.argv[2])" "$folder" "$dest/feature-norms.tsv"
