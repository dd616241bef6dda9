#!/usr/bin/env bash
# PostgreSQL tier (issue 30 item 2): the store's tests that need a real PostgreSQL server
# (`cargo test --lib on_postgres -- --ignored`: store::db's checks on PostgreSQL and the
# baseline schema against SQLite's), then the contract suite and the engines' tests, on a
# throw-away cluster of Debian's `postgresql` (scripts/pg-cluster.sh: installed when
# missing, its own socket, removed on exit).
# Budget: under 3 minutes for the lib tests and 10 for the contract suite, after the build.
# Usage: scripts/pg-tier.sh [FILTER]: FILTER
# (default `on_postgres`) picks the ignored tests to run, e.g. `store::jobs::` for one
# family's checks; PG_TIER_PROFILE=debug builds and runs them in debug instead of release.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/pg-cluster.sh
pg_cluster_start 54329
export MEDIADEX_TEST_PG_URL="$PG_URL"
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
