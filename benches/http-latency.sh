#!/usr/bin/env bash
# HTTP API latency (issue 5): p50/p99 of the asset-list page and of a thumbnail hit with
# 100,000 assets, measured with wrk on loopback, first on an idle server, then while a
# forced scan of another library (200 PNGs, 1 MiB each) runs over and over (the "under a concurrent scan" figure).
#
# The 100,000 assets are rows made through the store's own fenced ingest by
# examples/bench_fill.rs (no files read; scanning 100k real files would take longer than the
# measurement). The concurrent scan is real: a second library of noisy pictures, re-hashed by
# forced scans requested through the API in a loop.
#
# Needs: wrk (Debian: apt-get install wrk), curl. Usage:
#   benches/http-latency.sh [ASSETS] [SECONDS]      defaults 100000 and 15
set -euo pipefail
ASSETS=${1:-100000}
SECS=${2:-15}
PORT=${PORT:-7499}
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 2; }

cargo build --release --quiet --bin mediadex --example bench_fill
BIN=target/release/mediadex
WORK=$(mktemp -d)
SERVER=""
LOOP=""
cleanup() {
  [ -n "$LOOP" ] && kill "$LOOP" 2>/dev/null || true
  [ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/bench" "$WORK/scanlib"
echo "filling $ASSETS assets..." >&2
# Also 200 noisy PNGs of about 1 MiB in scanlib/ for the concurrent scan to hash.
target/release/examples/bench_fill "$WORK/data" "$WORK/bench" "$ASSETS" "$WORK/scanlib"

"$BIN" serve --data "$WORK/data" --bind "127.0.0.1:$PORT" 2>"$WORK/serve.log" &
SERVER=$!
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done

LIST="$URL/api/assets?limit=100"
THUMB_ID=$(curl -sf "$URL/api/assets?limit=1" | sed -n 's/.*"items":\[{"id":\([0-9]*\).*/\1/p')
THUMB="$URL/api/assets/$THUMB_ID/thumbnail"
curl -sf -o /dev/null "$THUMB"   # the first request makes and caches it; the rest are hits

measure() { # label url
  local out
  out=$(wrk -t2 -c8 -d"${SECS}s" --latency "$2")
  local p50 p99 rps
  p50=$(awk '/Latency Distribution/{f=1} f&&$1=="50%"{print $2; exit}' <<<"$out")
  p99=$(awk '/Latency Distribution/{f=1} f&&$1=="99%"{print $2; exit}' <<<"$out")
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  printf '%-34s p50 %-9s p99 %-9s %s req/s\n' "$1" "$p50" "$p99" "$rps"
}

echo "== idle server, $ASSETS assets"
measure "asset list page (100)" "$LIST"
measure "thumbnail hit" "$THUMB"

LIB=$(curl -sf -X POST -H 'X-Mediadex: 1' -H 'content-type: application/json' \
  -d "{\"path\":\"$WORK/scanlib\"}" "$URL/api/libraries" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
hashed() { curl -sf "$URL/metrics" | awk '$1=="mediadex_files_hashed_total"{print $2}'; }
BEFORE=$(hashed)
( while true; do
    curl -sf -o /dev/null -X POST -H 'X-Mediadex: 1' -H 'content-type: application/json' \
      -d '{"force":true}' "$URL/api/libraries/$LIB/scans" || true
    sleep 0.3
  done ) &
LOOP=$!
sleep 1
echo "== under a concurrent forced scan (200 PNGs x 1 MiB, re-hashed in a loop)"
measure "asset list page (100)" "$LIST"
measure "thumbnail hit" "$THUMB"
AFTER=$(hashed)
echo "files hashed by the concurrent scans meanwhile: $((${AFTER%.*} - ${BEFORE%.*}))"
echo "scan runs of that library: $(curl -sf "$URL/api/scans?library=$LIB&limit=500" | grep -o "\"state\":\"[a-z]*\"" | sort | uniq -c | tr -s " \n" " ")"
