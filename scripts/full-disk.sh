#!/usr/bin/env bash
# A full disk against the real binary (issue 13, part 3). Each scenario puts a disk on a
# size-limited tmpfs, fills it with a filler file, and checks what the user is promised:
#   a. the data dir fills during a scan: a clear error naming the disk, integrity_check ok,
#      nothing indexed before is lost, and the scan carries on by itself once space is freed;
#   b. the thumbnail cache meets its reserve: it stops there (the database stays writable,
#      status says thumbnails are paused), and makes the rest once space is back;
#   c. the library disk is full during a trash (CLI and the page's API): a clear error, the
#      asset stays live, every file stays where it was, and trash works once space is freed.
# Prints one line per scenario and `full-disk: N scenarios, M violations`; exits 1 when
# M > 0. Needs root to mount tmpfs: without it (or where mounting is refused) it says why
# and exits 0. Budget: about a minute after the debug build (every wait is bounded).
# Usage: scripts/full-disk.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
    echo "full-disk: SKIPPED: $*"
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "needs root to mount a size-limited tmpfs (running as $(id -un))"
missing=()
for tool in python3 curl; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

WORK="${1:-$(mktemp -d)}"
mkdir -p "$WORK"
MOUNTS=()
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
    if [ "${KEEP:-0}" = 0 ]; then rm -rf "$WORK"; else echo "full-disk: kept $WORK" >&2; fi
}
trap cleanup EXIT

probe="$WORK/probe"
mkdir -p "$probe"
if ! out=$(mount -t tmpfs -o size=1m tmpfs "$probe" 2>&1); then
    skip "cannot mount a tmpfs here: $out"
fi
umount "$probe"

cargo build -q --release --bin mediadex --example sample-library
BIN="$PWD/target/release/mediadex"
GEN="$PWD/target/release/examples/sample-library"
export MEDIADEX_WATCH=off MEDIADEX_LEASE_TTL_MS=6000 RUST_LOG=info
SCENARIOS=0
VIOLATIONS=0

# mount_tmpfs DIR SIZE
mount_tmpfs() {
    mkdir -p "$1"
    mount -t tmpfs -o "size=$2" tmpfs "$1"
    MOUNTS+=("$1")
}

# fill DIR LEAVE_BYTES: a filler file that leaves about LEAVE_BYTES free on DIR's disk.
fill() {
    python3 - "$1" "$2" <<'PY'
import os, sys
d, leave = sys.argv[1], int(sys.argv[2])
s = os.statvfs(d)
n = max(0, s.f_bavail * s.f_frsize - leave)
with open(os.path.join(d, "filler"), "wb") as f:
    try:
        while n > 0:
            f.write(b"\0" * min(n, 1 << 20)); n -= 1 << 20
        f.flush(); os.fsync(f.fileno())
    except OSError:
        pass
PY
}

free_bytes() { python3 -c 'import os,sys; s=os.statvfs(sys.argv[1]); print(s.f_bavail*s.f_frsize)' "$1"; }

# bulk DIR N: N unique small JPEGs (one picture, made unique by 8 trailing bytes each).
bulk() {
    "$GEN" "$WORK/seed" 1 >/dev/null
    python3 - "$(find "$WORK/seed" -name '*.JPG' | head -1)" "$1" "$2" <<'PY'
import os, sys
base, out, n = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
for i in range(n):
    open(os.path.join(out, f"B_{i:06d}.jpg"), "wb").write(base + i.to_bytes(8, "little"))
PY
}

# assets DATA: "id checksum" per live asset, sorted.
assets() {
    "$BIN" --data "$1" assets --json 2>/dev/null | python3 -c '
import json, sys
for a in json.load(sys.stdin):
    print(a["id"], a["checksum"])' | sort
}

integrity() {
    python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$1/mediadex.db"
}

# wait_for SECONDS COMMAND...: true once COMMAND succeeds, false after SECONDS.
wait_for() {
    local until=$((SECONDS + $1)); shift
    while [ "$SECONDS" -lt "$until" ]; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    return 1
}

PORT=$((17000 + $$ % 2000))
# serve DATA LOG: starts the service in the background.
serve() {
    "$BIN" --data "$1" serve --bind "127.0.0.1:$PORT" >"$2" 2>&1 &
    PIDS+=("$!")
    wait_for 20 curl -fsS "http://127.0.0.1:$PORT/healthz"
}
stop_serve() {
    local pid="${PIDS[-1]}"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset 'PIDS[-1]'
}

# report NAME VIOLATION...: one line per scenario.
report() {
    local name="$1"; shift
    SCENARIOS=$((SCENARIOS + 1))
    if [ "$#" -eq 0 ]; then
        echo "full-disk: $name: ok"
    else
        VIOLATIONS=$((VIOLATIONS + $#))
        local v
        for v in "$@"; do echo "full-disk: $name: VIOLATION: $v"; done
    fi
}

runs_json() { "$BIN" --data "$1" runs --json 2>/dev/null; }
completed_with() {
    [ "$(assets "$1" | wc -l)" -ge "$2" ] && runs_json "$1" | python3 -c '
import json, sys
runs = json.load(sys.stdin)
sys.exit(0 if runs and runs[0]["state"] == "completed" else 1)'
}

# indexed DATA LIB N: a library of N sample photos at LIB, added to the index at DATA and
# scanned to the end.
indexed() {
    "$GEN" "$2" "$3" >/dev/null
    "$BIN" --data "$1" library add "$2" >/dev/null 2>&1
    "$BIN" --data "$1" scan --wait >/dev/null 2>&1
}

# ---- a. the data dir fills during a scan ----------------------------------------------
scenario_a() {
    local data="$WORK/a/data" lib="$WORK/a/lib" v=()
    mount_tmpfs "$data" 8m
    indexed "$data" "$lib" 100
    local before; before=$(assets "$data")
    bulk "$lib/bulk" 1200
    # Room for the service to start (about 300 KiB) and its boot scan to begin, not for the
    # scan's batch (1,200 new files): the scan itself fills the disk.
    fill "$data" $((768 * 1024))
    serve "$data" "$WORK/a/serve.log" || v+=("serve did not start")
    # The run's own row says so when the disk still takes that one small write; on a disk
    # with nothing left, the log and status say it, and the retired run's successor carries on.
    wait_for 60 grep -q "the disk holding $data is full.*paused the scan of library" \
        "$WORK/a/serve.log" || v+=("the log does not say the data dir's disk is full")
    "$BIN" --data "$data" status 2>/dev/null | grep -q "the disk holding $data is full" ||
        v+=("status does not say the data dir's disk is full")
    [ "$(integrity "$data")" = ok ] || v+=("integrity_check after the full disk: $(integrity "$data")")
    comm -23 <(echo "$before") <(assets "$data") | grep -q . &&
        v+=("assets indexed before the full disk were lost")
    rm -f "$data/filler"
    wait_for 90 completed_with "$data" 1300 ||
        v+=("the scan did not carry on by itself once space was freed ($(assets "$data" | wc -l) of 1300 assets)")
    stop_serve
    [ "$(integrity "$data")" = ok ] || v+=("integrity_check at the end: $(integrity "$data")")
    comm -23 <(echo "$before") <(assets "$data") | grep -q . && v+=("assets lost by the end")
    report "a. data dir full during a scan" "${v[@]}"
}

# ---- b. the thumbnail cache fills the disk ---------------------------------------------
thumbs_count() { { find "$1/thumbs" -name '*.jpg' 2>/dev/null || true; } | wc -l; }
thumbs_done() {
    [ "$(thumbs_count "$1")" -ge "$2" ] && "$BIN" --data "$1" jobs --json 2>/dev/null |
        python3 -c '
import json, sys
jobs = [j for j in json.load(sys.stdin) if j["kind"] == "thumbs"]
sys.exit(0 if jobs and all(j["state"] == "done" for j in jobs) else 1)'
}
scenario_b() {
    local data="$WORK/b/data" lib="$WORK/b/lib" v=() reserve=$((4 * 1024 * 1024))
    mount_tmpfs "$data" 12m
    "$GEN" "$lib" 60 >/dev/null
    "$BIN" --data "$data" library add "$lib" >/dev/null 2>&1
    # Room for the database, its reserve and a few dozen thumbnails, not 60.
    fill "$data" $((reserve + 1024 * 1024))
    export MEDIADEX_DISK_RESERVE=$reserve
    serve "$data" "$WORK/b/serve.log" || v+=("serve did not start")
    "$BIN" --data "$data" scan >/dev/null 2>&1 || v+=("the scan request was refused")
    wait_for 90 grep -q "paused the thumbnails" "$WORK/b/serve.log" ||
        v+=("the log never says the thumbnails are paused")
    local made; made=$(thumbs_count "$data")
    [ "$made" -lt 60 ] || v+=("all 60 thumbnails were cached on a disk at its reserve")
    "$BIN" --data "$data" status 2>/dev/null | grep -q "paused the thumbnails" ||
        v+=("status does not say the thumbnails are paused")
    # The database is still writable: new pictures are indexed; and nothing more is cached.
    bulk "$lib/more" 10
    "$BIN" --data "$data" scan >/dev/null 2>&1 || v+=("a scan request failed at the reserve")
    wait_for 90 completed_with "$data" 70 || v+=("a scan at the reserve did not complete")
    [ "$(thumbs_count "$data")" -eq "$made" ] ||
        v+=("thumbnails were cached below the reserve ($made, then $(thumbs_count "$data"))")
    [ "$(integrity "$data")" = ok ] || v+=("integrity_check: $(integrity "$data")")
    rm -f "$data/filler"
    wait_for 90 thumbs_done "$data" 70 ||
        v+=("thumbnails not made once space was back ($(thumbs_count "$data") of 70 cached)")
    stop_serve
    unset MEDIADEX_DISK_RESERVE
    report "b. thumbnail cache at its reserve ($made made before the pause)" "${v[@]}"
}

# ---- c. the library disk is full during a trash ----------------------------------------
files_of() { (cd "$1" && find . -path ./filler -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
live() { assets "$1" | grep -q "^$2 "; }
scenario_c() {
    local data="$WORK/c/data" lib="$WORK/c/lib" v=()
    mount_tmpfs "$lib" 4m
    indexed "$data" "$lib" 20
    local ids; ids=$(assets "$data" | awk '{print $1}' | head -2)
    local one two; one=$(echo "$ids" | sed -n 1p); two=$(echo "$ids" | sed -n 2p)
    fill "$lib" 0
    local files; files=$(files_of "$lib")
    local err
    if err=$("$BIN" --data "$data" trash "$one" 2>&1); then
        v+=("mediadex trash succeeded on a full library disk")
    fi
    echo "$err" | grep -q "the disk holding $lib.* is full" || v+=("unclear CLI error: $err")
    serve "$data" "$WORK/c/serve.log" || v+=("serve did not start")
    local token; token=$("$BIN" --data "$data" token 2>/dev/null)
    local page
    page=$(curl -sS -X POST -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$PORT/api/assets/$two/trash" -w ' %{http_code}')
    case "$page" in *"is full"*507) ;; *) v+=("unclear API error: $page") ;; esac
    live "$data" "$one" || v+=("asset $one is not live after the failed CLI trash")
    live "$data" "$two" || v+=("asset $two is not live after the failed API trash")
    [ "$(files_of "$lib")" = "$files" ] || v+=("files moved on a failed trash")
    [ -e "$lib/.mediadex-trash" ] && v+=("a trash folder was left behind")
    rm -f "$lib/filler"
    "$BIN" --data "$data" trash "$one" >/dev/null 2>&1 || v+=("CLI trash failed once space was freed")
    curl -fsS -X POST -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$PORT/api/assets/$two/trash" >/dev/null 2>&1 ||
        v+=("API trash failed once space was freed")
    live "$data" "$one" && v+=("asset $one still live after its trash")
    live "$data" "$two" && v+=("asset $two still live after its trash")
    stop_serve
    [ "$(integrity "$data")" = ok ] || v+=("integrity_check: $(integrity "$data")")
    report "c. library disk full during a trash" "${v[@]}"
}

start=$SECONDS
for s in ${FULL_DISK_ONLY:-a b c}; do "scenario_$s"; done
echo "full-disk: $SCENARIOS scenarios, $VIOLATIONS violations ($((SECONDS - start)) s)"
[ "$VIOLATIONS" -eq 0 ] || { KEEP=1; exit 1; }
