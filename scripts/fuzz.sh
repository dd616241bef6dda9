#!/usr/bin/env bash
# Hostile files (issue 13, part 5): examples/fuzz in release mode, FUZZ_SECS (default 15)
# per target, its seeds tests/fixtures plus a small make-corpus library (SCALE 20, about
# 12 s) when the corpus tools are there (scripts/corpus-tools.sh installs them). The seed
# is printed; FUZZ_SEED replays it. Findings are saved under tests/fixtures/fuzz/<target>/
# and fail the step. Usage: scripts/fuzz.sh (FUZZ_TARGETS=a,b picks targets).
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZ_SECS="${FUZZ_SECS:-15}"
export FUZZ_SEED="${FUZZ_SEED:-$(date +%s)}"

cargo build --release --example fuzz

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. scripts/corpus-tools.sh
if corpus_tools && bash "$SCRIPT" "$WORK/corpus" "${FUZZ_CORPUS_SCALE:-20}" >/dev/null; then
    export FUZZ_CORPUS="$WORK/corpus${FUZZ_CORPUS:+:$FUZZ_CORPUS}"
else
    echo "fuzz: WARNING: no make-corpus output (script missing or failed); seeds are tests/fixtures alone" >&2
fi

# The driver bounds each input itself; this bounds the whole run (up to 20 targets).
start=$(date +%s)
timeout --signal=KILL $((FUZZ_SECS * 20 + 60)) target/release/examples/fuzz
echo "fuzz: done in $(( $(date +%s) - start )) s"
