#!/usr/bin/env bash
# Extended tier: build the make-corpus library at a small scale and compare media::extract
# with exiftool on every file (tests/corpus_metadata.rs). Usage: scripts/corpus-tier.sh [SCALE]
# Needs root (or the tools already installed) for apt-get; PyPI once for the corpus sources.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-${CORPUS_SCALE:-40}}"
PKGS=(ffmpeg libimage-exiftool-perl imagemagick libheif-examples webp python3-pip)

# The extended tier needs ../shared (the workplace's corpus builder) and a few Debian tools.
# Where either is unavailable it is skipped loudly, never silently passed: `cargo test` does
# not depend on it.
skip() { echo "corpus-tier: SKIPPED: $*" >&2; exit 0; }

SCRIPT=""
for candidate in "${MEDIA_CORPUS_SCRIPT:-}" shared/corpus/make-corpus ../shared/corpus/make-corpus \
    /work/shared/corpus/make-corpus; do
    [ -n "$candidate" ] && [ -f "$candidate" ] && SCRIPT="$candidate" && break
done
[ -n "$SCRIPT" ] || skip "make-corpus not found (set MEDIA_CORPUS_SCRIPT)"

missing=()
for tool in exiftool ffprobe /usr/bin/convert heif-enc cwebp pip3; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "corpus-tier: installing tools (missing: ${missing[*]})"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${PKGS[@]}"; } ||
        skip "could not install ${PKGS[*]}"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
bash "$SCRIPT" "$WORK/lib" "$SCALE" || skip "the corpus could not be built (see above)"
echo "corpus-tier: corpus (SCALE=$SCALE) built in $(( $(date +%s) - start )) s"

MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test corpus_metadata -- --ignored --nocapture
MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test corpus_scan -- --ignored --nocapture
MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test corpus_walks -- --ignored --nocapture
