#!/usr/bin/env bash
# Crash torture of the real binary (examples/torture.rs): a library of make-corpus output
# plus bulk small JPEGs made unique (TORTURE_FILES in all, default 20000), then
# TORTURE_KILLS (default 100) SIGKILLed service lives with seed TORTURE_SEED, then
# TORTURE_TWO_ENGINES_SECS (default 60) of the desktop mode and `serve` on one data dir with
# one of them SIGSTOPped past the lease ttl in turn, then the checks.
# Usage: scripts/torture.sh [WORKDIR]. Needs the corpus tools (scripts/corpus-tier.sh
# installs them); without make-corpus the library is the bulk files alone, said loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="${TORTURE_FILES:-20000}"
KILLS="${TORTURE_KILLS:-100}"
TWO_ENGINES="${TORTURE_TWO_ENGINES_SECS:-60}"
SEED="${TORTURE_SEED:-$(date +%s)}"
WORK="${1:-}"
if [ -z "$WORK" ]; then
    # A work dir of its own is removed after a clean run, kept (and named) after a failure.
    WORK="$(mktemp -d)"
    trap 'if [ $? -eq 0 ]; then rm -rf "$WORK"; else echo "torture: kept $WORK" >&2; fi' EXIT
fi
mkdir -p "$WORK"
LIB="$WORK/library"
rm -rf "$LIB" "$WORK/data" "$WORK/reference"

cargo build --release --bin mediadex --example torture --example sample-library

. scripts/corpus-tools.sh
if corpus_tools && bash "$SCRIPT" "$LIB" "${TORTURE_CORPUS_SCALE:-100}" >/dev/null; then
    echo "torture: make-corpus library built"
else
    echo "torture: WARNING: no make-corpus output (script missing or failed); bulk files only" >&2
    mkdir -p "$LIB"
fi

# Bulk: one small JPEG, made unique by 8 trailing bytes per copy (a JPEG ends at its EOI;
# what follows changes the checksum, not the picture).
target/release/examples/sample-library "$WORK/seed" 1 >/dev/null
BASE="$(find "$WORK/seed" -name '*.JPG' | head -1)"
have=$(find "$LIB" -type f | wc -l)
python3 scripts/bulk-jpegs.py "$BASE" "$LIB/bulk" $((FILES > have ? FILES - have : 0))
echo "torture: library of $(find "$LIB" -type f | wc -l) files, seed $SEED, $KILLS kills"

target/release/examples/torture --bin target/release/mediadex --library "$LIB" \
    --work "$WORK" --seed "$SEED" --kills "$KILLS" --two-engines "$TWO_ENGINES"
