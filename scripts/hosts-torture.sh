#!/usr/bin/env bash
# Multi-host torture on one PostgreSQL (issue 30 item 6): examples/torture.rs's hosts phase.
# HOSTS_TORTURE_HOSTS (default 3) `serve` processes, each with its own data dir and host
# id and the library reached through a symlink of its own, host 1's clock HOSTS_TORTURE_SKEW
# off (libfaketime, default +300s), for HOSTS_TORTURE_SECS (default 90) under a stream of
# scans, walks, trashes and restores sent to any host; one host at a time SIGKILLed and
# started again or SIGSTOPped past the lease ttl, and the PostgreSQL server restarted
# mid-work. Then a quiet life, and the checks against a fresh SQLite index of the same
# files: every file indexed once, the library invariant (live files readable, the trash
# folder's files trashed assets'), one chain per walk kind and one running scan per
# library at every observation, fence rejections counted. The library: HOSTS_TORTURE_FILES
# (default 3000) small JPEGs of sample-library, made unique.
# Usage: scripts/hosts-torture.sh [WORKDIR]. Installs postgresql and libfaketime when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="${HOSTS_TORTURE_FILES:-3000}"
SECS="${HOSTS_TORTURE_SECS:-90}"
HOSTS="${HOSTS_TORTURE_HOSTS:-3}"
SKEW="${HOSTS_TORTURE_SKEW:-+300s}"
SEED="${HOSTS_TORTURE_SEED:-$(date +%s)}"

faketime_lib() { ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -n 1; }
if [ -z "$(faketime_lib)" ]; then
    echo "hosts-torture: installing libfaketime"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfaketime >/dev/null
fi
FAKETIME_LIB="$(faketime_lib)"
[ -n "$FAKETIME_LIB" ] || { echo "hosts-torture: no libfaketimeMT.so.1" >&2; exit 1; }
. scripts/pg-cluster.sh
pg_cluster_start 54330
WORK="${1:-$PG_WORK/torture}"
mkdir -p "$WORK"
LIB="$WORK/library"
rm -rf "$LIB" "$WORK"/data* "$WORK/reference" "$WORK"/view-host* "$WORK/processes.log"

cargo build --release --bin mediadex --example torture --example sample-library
target/release/examples/sample-library "$LIB/photos" 200 >/dev/null
BASE="$(find "$LIB/photos" -name '*.JPG' -print -quit)"
python3 scripts/bulk-jpegs.py "$BASE" "$LIB/bulk" "$FILES"
echo "hosts-torture: $HOSTS hosts, a library of $(find "$LIB" -type f | wc -l) files, seed $SEED"
start=$(date +%s)
timeout 900 target/release/examples/torture --bin target/release/mediadex --library "$LIB" \
    --work "$WORK" --seed "$SEED" --kills 0 --two-engines 0 --database "$PG_URL" \
    --hosts "$HOSTS" --hosts-secs "$SECS" --skew "$SKEW" --faketime-lib "$FAKETIME_LIB" \
    --pg-restart "$(pg_cluster_restart_command)" \
    || { tail -n 40 "$WORK/processes.log" >&2; exit 1; }
echo "hosts-torture: took $(( $(date +%s) - start )) s"
