#!/usr/bin/env bash
# People queries at scale (issue 28 item 4: "who is in this photo" and "all photos of X" with
# p99 < 50 ms at 1M assets): p50/p99 of sequential requests to the person routes of the API on
# an index of ASSETS synthetic assets, a face on every 8th, in PEOPLE people (the first in
# every other photo of them), made through the store's own writes by examples/bench_fill.rs
# (BENCH_PEOPLE). No files are read.
#
# Needs: curl, python3. Usage: benches/people-latency.sh [ASSETS] [PEOPLE] [REQUESTS]
#   defaults 1000000, 1000 and 200. KEEP=DIR keeps the filled index in DIR and measures it
#   again on a later run with the same ASSETS and PEOPLE (the fill of 1M takes 5-15 min).
set -euo pipefail
ASSETS=${1:-1000000}
PEOPLE=${2:-1000}
REQUESTS=${3:-200}
PORT=${PORT:-7498}
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin mediadex --example bench_fill
WORK=${KEEP:-$(mktemp -d)}
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

FILLED="$WORK/filled-$ASSETS-$PEOPLE"
if [ ! -e "$FILLED" ]; then
  rm -rf "$WORK/data" "$WORK/bench" "$WORK"/filled-*
  mkdir -p "$WORK/bench"
  BENCH_PEOPLE=$PEOPLE target/release/examples/bench_fill "$WORK/data" "$WORK/bench" "$ASSETS"
  touch "$FILLED"
fi
MEDIADEX_WATCH=off target/release/mediadex serve --data "$WORK/data" --bind "127.0.0.1:$PORT" \
  --no-browser 2>"$WORK/serve.log" &
SERVER=$!
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 300); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done

latency() { # latency LABEL PATH: p50/p99 of REQUESTS sequential requests (one connection), ms
  local args=() i out
  for ((i = 0; i <= REQUESTS; i++)); do args+=(-o /dev/null "$URL$2"); done
  out=$(curl -s -w '%{http_code} %{time_total}\n' "${args[@]}")
  if grep -vq '^200 ' <<<"$out"; then
    echo "GET $2 answered $(grep -v '^200 ' <<<"$out" | head -n1)" >&2
    exit 1
  fi
  # The first request warms the connection and the page cache: left out.
  tail -n +2 <<<"$out" | awk '{ print $2 * 1000 }' | sort -g | awk -v label="$1" '
    { a[NR] = $1 } END { printf "%-40s p50 %6.1f ms  p99 %6.1f ms\n", label,
                         a[int(NR * 0.50 + 0.999)], a[int(NR * 0.99 + 0.999)] }'
}

json() { curl -sf "$URL$1" | python3 -c "import json, sys; d = json.load(sys.stdin); print($2)"; }
FIRST=$(json "/api/people" "d[0]['id']")
LAST=$(json "/api/people" "d[-1]['id']")
CURSOR=$(json "/api/people/$FIRST?limit=100" "d['next_cursor'] or ''")
PHOTO=$(json "/api/people/$LAST?limit=1" "d['items'][0]['id']")

echo "== $ASSETS assets, $((ASSETS / 8)) faces in $PEOPLE people, $REQUESTS requests each"
latency "people (the list)" "/api/people"
latency "a person and their first 100 photos" "/api/people/$FIRST?limit=100"
latency "a person's second page (cursor)" "/api/people/$FIRST?limit=100&cursor=$CURSOR"
latency "the last person's photos" "/api/people/$LAST?limit=100"
latency "assets?person= (the timeline filter)" "/api/assets?person=$FIRST&limit=100"
latency "who is in this photo" "/api/assets/$PHOTO/people"
