#!/usr/bin/env bash
# PostgreSQL tier (issue 30 item 2): the store's tests that need a real PostgreSQL server
# (`cargo test --lib on_postgres -- --ignored`: store::db's checks on PostgreSQL and the
# baseline schema against SQLite's), in release, on a throw-away cluster of Debian's
# `postgresql` (installed with apt-get when missing). The cluster lives in a temp dir with
# its own Unix socket and no TCP listener, and is stopped and removed on exit. Run as root
# (CI), initdb and pg_ctl run as the `postgres` user, which the package creates.
# Budget: under 3 minutes for the lib tests and 10 for the contract suite, after the build.
# Usage: scripts/pg-tier.sh [FILTER]: FILTER
# (default `on_postgres`) picks the ignored tests to run, e.g. `store::jobs::` for one
# family's checks; PG_TIER_PROFILE=debug builds and runs them in debug instead of release.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "pg-tier: $*" >&2; exit 1; }

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

if [ -z "$(bindir)" ] || [ ! -x "$(bindir)/initdb" ]; then
    command -v apt-get >/dev/null || die "no PostgreSQL and no apt-get to install it"
    echo "pg-tier: installing Debian's postgresql"
    apt-get update -qq >/dev/null
    # The package's own cluster is not wanted, and starting its service fails where there
    # is no init system (a CI container): invoke-rc.d is told not to start it, for the
    # install only.
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
        || { [ -z "$policy" ] || rm -f "$policy"; die "apt-get install postgresql failed"; }
    [ -z "$policy" ] || rm -f "$policy"
fi
BIN="$(bindir)"
[ -x "$BIN/initdb" ] || die "no initdb under /usr/lib/postgresql/*/bin"

WORK="$(mktemp -d)"
PORT=54329
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}
cleanup() {
    as_owner "$BIN/pg_ctl" -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "no postgres user (the postgresql package makes it)"
    chown postgres "$WORK"
fi

start=$(date +%s)
as_owner "$BIN/initdb" -D "$WORK/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 \
    >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
# fsync off: a throw-away cluster; the tests' durability is SQLite's, not this server's.
as_owner "$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w -t 60 \
    -o "-p $PORT -k $WORK -c listen_addresses= -c fsync=off" start >/dev/null \
    || { cat "$WORK/server.log" >&2; die "the server did not start"; }
"$BIN/createdb" -h "$WORK" -p "$PORT" -U postgres mediadex_test
echo "pg-tier: PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') up in $(( $(date +%s) - start )) s"

export MEDIADEX_TEST_PG_URL="host=$WORK port=$PORT user=postgres dbname=mediadex_test"
# The build is before the timer (CI built the lib tests in its `cargo test --release` step).
FILTER="${1:-on_postgres}"
PROFILE=(--release)
[ "${PG_TIER_PROFILE:-release}" = debug ] && PROFILE=()
cargo test "${PROFILE[@]}" --lib --no-run --quiet
start=$(date +%s)
timeout 180 cargo test "${PROFILE[@]}" --lib "$FILTER" -- --ignored
echo "pg-tier: the PostgreSQL tests took $(( $(date +%s) - start )) s"

# The contract suite: the integration tests of the modules whose every test runs on either
# engine, each `Env` in a scratch schema of this server (tests/it/support:
# MEDIADEX_TEST_ENGINE=postgres). A module joins the list once all of it passes there
# (`check`'s composition is not on PostgreSQL yet, and some tests read the SQLite file
# directly). Only with the default filter.
CONTRACT_MODULES=(lease_protocol:: simulation::)
if [ "$FILTER" = on_postgres ]; then
    cargo test "${PROFILE[@]}" --test it --no-run --quiet
    start=$(date +%s)
    MEDIADEX_TEST_ENGINE=postgres timeout 600 \
        cargo test "${PROFILE[@]}" --test it -- "${CONTRACT_MODULES[@]}"
    echo "pg-tier: the contract suite on PostgreSQL took $(( $(date +%s) - start )) s"
    # Moving an index to PostgreSQL and back (migrate --to), from a SQLite index.
    timeout 300 cargo test "${PROFILE[@]}" --test it engines:: -- --ignored
fi
