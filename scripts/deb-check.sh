#!/usr/bin/env bash
# The Debian package (issue 17 item 4): builds the .deb with cargo-deb (installed with
# `cargo install cargo-deb --locked` when missing, about 3 minutes on 2 cores), checks its
# control data (`dpkg-deb -I`: Depends, conffiles, maintainer scripts) and its file list
# (`dpkg-deb -c` against EXPECTED below), installs it into a throwaway root with a dpkg
# database of its own (`dpkg --root`, scripts run chrootless: sysusers makes the user in that
# root), runs the installed `mediadex --version`, lints every installed man page, upgrades
# over a "running" service (systemctl and deb-systemd-invoke stubbed: the service must stop
# before the new binary is unpacked and start after), then removes and purges it.
#
# CI builds it from the release binary, which CI builds anyway (the dist profile's fat LTO
# costs too much on 2 cores); the shipped package is `DEB_PROFILE=dist scripts/deb-check.sh`,
# the same steps on `cargo build --profile dist`. The .deb is left in target/debian/.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "deb-check: $*" >&2; exit 1; }
need() { # need COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null
    fi
    command -v "$1" >/dev/null 2>&1 || fail "$1 ($2) is missing"
}
need dpkg-deb dpkg
need man man-db
need groff groff-base
need systemd-sysusers systemd

if ! cargo deb --version >/dev/null 2>&1; then
    started=$SECONDS
    cargo install cargo-deb --locked --quiet
    echo "deb-check: installed cargo-deb in $((SECONDS - started)) s"
fi

profile=${DEB_PROFILE:-release}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
cargo build --quiet --profile "$profile" --bin mediadex
bin="target/$profile/mediadex"

# The derived assets Cargo.toml's [package.metadata.deb] names: the man pages from the binary
# being packaged, and the unit pointed at the package's binary.
rm -rf target/deb-assets
mkdir -p target/deb-assets/man
"$bin" manpage target/deb-assets/man
sed 's#^ExecStart=/usr/local/bin/mediadex #ExecStart=/usr/bin/mediadex #' \
    packaging/mediadex.service > target/deb-assets/mediadex.service
grep -q '^ExecStart=/usr/bin/mediadex ' target/deb-assets/mediadex.service \
    || fail "packaging/mediadex.service's ExecStart is not /usr/local/bin/mediadex"

rm -rf target/debian
cargo deb --no-build --profile "$profile" --quiet >/dev/null
deb=$(ls target/debian/mediadex_"$version"-*_*.deb)
echo "deb-check: built $deb ($(du -k "$deb" | cut -f1) KiB, from target/$profile)"

# Control data.
info=$(dpkg-deb -I "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
for dep in libc6 libheif-examples ffmpeg; do
    grep -Eq "(^|, )$dep( |,|$)" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/mediadex/mediadex.toml ] \
    || fail "conffiles is not exactly /etc/mediadex/mediadex.toml"
for script in preinst postinst prerm postrm; do
    grep -Eq "^ *[0-9]+ bytes, +[0-9]+ lines +\* +$script " <<<"$info" || fail "no executable $script"
done
ctl=$(mktemp -d)
WORK=$(mktemp -d)
trap 'rm -rf "$ctl" "$WORK"' EXIT
dpkg-deb -e "$deb" "$ctl"
grep -q 'systemd-sysusers .*mediadex.conf' "$ctl/postinst" || fail "postinst does not run sysusers"
grep -q 'systemd-tmpfiles --create mediadex.conf' "$ctl/postinst" || fail "postinst does not run tmpfiles"
grep -q 'deb-systemd-invoke stop mediadex.service' "$ctl/prerm" || fail "prerm does not stop the service"
# cargo-deb's enable = false fragment: keeps the unit enabled on upgrade only if it was.
grep -q 'deb-systemd-helper debian-installed mediadex.service' "$ctl/postinst" \
    && ! grep -q 'new installations run enable' "$ctl/postinst" || fail "postinst enables the unit on install"
echo "deb-check: Depends: $depends; conffile /etc/mediadex/mediadex.toml; maintainer scripts"

# Contents: every path the package must hold.
EXPECTED="
./usr/bin/mediadex
./usr/lib/systemd/system/mediadex.service
./usr/lib/sysusers.d/mediadex.conf
./usr/lib/tmpfiles.d/mediadex.conf
./etc/mediadex/mediadex.toml
./usr/share/applications/mediadex.desktop
./usr/share/icons/hicolor/scalable/apps/mediadex.svg
./usr/share/man/man1/mediadex.1.gz
./usr/share/man/man1/mediadex-serve.1.gz
./usr/share/man/man1/mediadex-library-add.1.gz
./usr/share/doc/mediadex/copyright
./usr/share/doc/mediadex/README.md
./usr/share/doc/mediadex/packaging.md
"
for doc in docs/*.md; do EXPECTED+=" ./usr/share/doc/mediadex/${doc#docs/}"; done
for page in target/deb-assets/man/*.1; do EXPECTED+=" ./usr/share/man/man1/${page##*/}.gz"; done
listing=$(dpkg-deb -c "$deb")
echo "deb-check: the package holds:"
awk '{print "  " $1, $3, $6}' <<<"$listing"
files=$(awk '{print $6}' <<<"$listing")
for path in $EXPECTED; do
    grep -qxF "$path" <<<"$files" || fail "the package lacks $path"
done

# An upgrade over a running service (the migration guard): systemd "runs" in the root
# ($ROOT/run/systemd/system, which the scripts look at through DPKG_ROOT), and the stubbed
# deb-systemd-invoke records each stop and start with the inode of the installed binary at
# that moment: the stop must see the old binary and the start the new one, so the old binary
# never runs beside the new one while it migrates. A stopped service stays stopped.
stub_systemd() {
    mkdir -p "$ROOT/run/systemd/system" "$WORK/stubs"
    cat >"$WORK/stubs/systemctl" <<STUB
#!/bin/sh
case "\$*" in
    *is-active*) [ "\$(cat "$WORK/state")" = active ] ;;
esac
STUB
    cat >"$WORK/stubs/deb-systemd-invoke" <<STUB
#!/bin/sh
echo "\$1 \$(stat -c %i "$ROOT/usr/bin/mediadex")" >>"$WORK/invoked"
case "\$1" in stop) echo inactive ;; start) echo active ;; esac >"$WORK/state"
STUB
    chmod 755 "$WORK"/stubs/*
}
with_stubs() { # with_stubs STATE DPKG-ARGS...: runs dpkg with the service in STATE
    echo "$1" >"$WORK/state"
    : >"$WORK/invoked"
    shift
    PATH="$WORK/stubs:$PATH" dpkg_root "$@" >"$WORK/dpkg.log" 2>&1 \
        || { cat "$WORK/dpkg.log" >&2; fail "dpkg $* failed"; }
}
check_upgrade() {
    stub_systemd
    local old new
    old=$(stat -c %i "$ROOT/usr/bin/mediadex")
    with_stubs active -i "$deb"
    new=$(stat -c %i "$ROOT/usr/bin/mediadex")
    [ "$old" != "$new" ] || fail "the upgrade did not replace the binary"
    [ "$(cat "$WORK/invoked")" = "stop $old"$'\n'"start $new" ] \
        || fail "upgrade over a running service: $(cat "$WORK/invoked") (want stop $old, start $new)"
    [ ! -e "$ROOT/run/mediadex.deb-restart" ] || fail "the restart marker was left behind"
    with_stubs inactive -i "$deb"
    [ ! -s "$WORK/invoked" ] || fail "upgrade over a stopped service: $(cat "$WORK/invoked")"
    echo "deb-check: upgrade: a running service stopped before the unpack, started after; a stopped one left stopped"
    with_stubs active -r mediadex
    grep -q '^stop ' "$WORK/invoked" || fail "remove did not stop the service"
    [ ! -e "$ROOT/usr/bin/mediadex" ] || fail "remove left the binary"
    [ -e "$ROOT/etc/mediadex/mediadex.toml" ] || fail "remove dropped the conffile"
    with_stubs inactive -P mediadex
    [ ! -e "$ROOT/etc/mediadex/mediadex.toml" ] || fail "purge left the conffile"
    echo "deb-check: remove stops the service and keeps the config; purge drops it"
}

# A real install into a throwaway root with its own dpkg database. Its dependencies are not
# in that database (checked by name above), hence --force-depends.
ROOT="$WORK/root"
mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates"
touch "$ROOT/var/lib/dpkg/status" "$ROOT/var/lib/dpkg/available"
dpkg_root() { dpkg --root="$ROOT" --force-script-chrootless --force-depends --force-not-root "$@"; }
dpkg_root -i "$deb" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; fail "dpkg -i failed"; }
dpkg --root="$ROOT" -s mediadex | grep -q '^Status: install ok installed' || fail "not installed"
installed=$("$ROOT/usr/bin/mediadex" --version)
[ "$(head -1 <<<"$installed")" = "mediadex $version" ] || fail "installed --version: $installed"
echo "deb-check: installed mediadex --version: $(tr '\n' ';' <<<"$installed")"
grep -q '^mediadex:' "$ROOT/etc/passwd" || fail "postinst made no mediadex user in the root"
grep -q 'installed, not started' "$WORK/install.log" || fail "postinst did not say how to start"

for page in "$ROOT"/usr/share/man/man1/*.1.gz; do
    warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "man page ${page##*/}: $warnings"
done
man -l "$ROOT/usr/share/man/man1/mediadex.1.gz" 2>/dev/null | grep -q 'mediadex-serve(1)' \
    || fail "man -l mediadex.1 does not list mediadex-serve(1)"
echo "deb-check: $(ls "$ROOT"/usr/share/man/man1 | wc -l) man pages render without a warning"

check_upgrade
echo "deb-check: all checks passed ($SECONDS s)"
