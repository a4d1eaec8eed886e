#!/usr/bin/env bash
# Fetch SentEval's evaluation data (STS12-16, STS-B, SICK, MR, CR, SUBJ, MPQA, SST, TREC, MRPC) into
# data/senteval (git-ignored), where the app's Evaluate tab and `python -m core eval` read it.
#
#   bash scripts/fetch_senteval.sh              # into data/senteval
#   bash scripts/fetch_senteval.sh DIR          # into DIR (then list DIR in $DEFSENT_EVALUATION_DATA for the app)
#   bash scripts/fetch_senteval.sh --dry-run    # say what would be done; no network
#
# Needs a network connection, and what SentEval's own download script needs: bash, curl, git (it clones
# the Moses tokenizer), unzip, tar, perl and sed. It downloads the SentEval repository's archive, runs
# its data/downstream/get_transfer_data.bash without the SNLI and COCO parts (the Evaluate tab uses
# neither; COCO's image features are gigabytes), and copies the task folders into place. The data sets
# keep their own licences and hosts: a host that has moved makes its task fail, and the script lists
# what is missing at the end. The data are not shipped with DefSent Studio.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
archive="${SENTEVAL_ARCHIVE:-https://github.com/facebookresearch/SentEval/archive/refs/heads/main.zip}"
tasks=(STS SICK MR CR SUBJ MPQA SST TREC MRPC)
dry_run=0
if [[ "${1:-}" == "--dry-run" ]]; then dry_run=1; shift; fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,15p' "$0"; exit 0; fi
dest="${1:-$repo_root/data/senteval}"

if (( dry_run )); then
    echo "would download $archive"
    echo "would run data/downstream/get_transfer_data.bash from it, without its SNLI and COCO parts"
    echo "would copy ${tasks[*]} into $dest"
    exit 0
fi
for tool in curl git unzip tar perl sed; do
    command -v "$tool" >/dev/null || { echo "fetch_senteval: needs $tool" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "Downloading the SentEval repository ($archive)..."
curl -fsSL "$archive" -o "$work/senteval.zip"
unzip -q "$work/senteval.zip" -d "$work"
downstream="$(find "$work" -maxdepth 4 -type d -path '*/data/downstream' | head -n 1)"
[[ -n "$downstream" ]] || { echo "fetch_senteval: no data/downstream folder in the archive" >&2; exit 1; }
cd "$downstream"
# SentEval's script, minus the SNLI and COCO sections (everything from "### download SNLI" up to "### download MRPC").
sed '/^### download SNLI/,/^### download MRPC/{/^### download MRPC/!d;}' get_transfer_data.bash > get_tasks.bash
echo "Running SentEval's download script (minutes; it tokenizes with Moses)..."
bash get_tasks.bash || echo "fetch_senteval: SentEval's script reported an error; checking what arrived" >&2

mkdir -p "$dest"
missing=()
for task in "${tasks[@]}"; do
    if [[ -d "$task" ]] && [[ -n "$(ls -A "$task")" ]]; then
        rm -rf "${dest:?}/$task"
        cp -r "$task" "$dest/$task"
    else
        missing+=("$task")
    fi
done
echo "SentEval data in $dest: $(ls "$dest" | tr '\n' ' ')"
if (( ${#missing[@]} )); then
    echo "fetch_senteval: not fetched (a host may have moved; see SentEval's data/downstream script): ${missing[*]}" >&2
    exit 1
fi
