#!/usr/bin/env bash
# Sourced by the corpus tier and the torture: finds make-corpus (MEDIA_CORPUS_SCRIPT, or the
# workplace's ../shared) into $SCRIPT and installs the Debian tools it needs when missing.
# Returns non-zero (the caller says what it skips) when either is unavailable.
# python3-venv, gcc and python3-dev: the Extras tier pip-installs pidng (and numpy) into a venv.
PKGS=(ffmpeg libimage-exiftool-perl imagemagick libheif-examples webp python3-pip python3-venv gcc python3-dev)
SCRIPT=""
for candidate in "${MEDIA_CORPUS_SCRIPT:-}" shared/corpus/make-corpus ../shared/corpus/make-corpus \
    /work/shared/corpus/make-corpus; do
    [ -n "$candidate" ] && [ -f "$candidate" ] && SCRIPT="$candidate" && break
done
corpus_tools() {
    [ -n "$SCRIPT" ] || { echo "make-corpus not found (set MEDIA_CORPUS_SCRIPT)" >&2; return 1; }
    local missing=() tool
    for tool in exiftool ffprobe /usr/bin/convert heif-enc cwebp pip3 gcc; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    python3 -c 'import ensurepip, sysconfig, os; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' \
        2>/dev/null || missing+=(python3-venv/python3-dev)
    ((${#missing[@]})) || return 0
    echo "installing the corpus tools (missing: ${missing[*]})"
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${PKGS[@]}"; } ||
        { echo "could not install ${PKGS[*]}" >&2; return 1; }
}
