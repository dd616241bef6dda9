#!/usr/bin/env bash
# benches/walk-compare.sh — content-hash walk throughput next to b3sum over the same JPEGs, in
# one run (issue 4, "Benchmarks").
#
# The library: FILES JPEGs (default 10000) in folders of 200, each a structurally real
# baseline JPEG (SOI, JFIF APP0, an EXIF APP1 and a COM that differ per file, DQT, SOF0, DHT,
# SOS, KB +-50% KiB of entropy-coded bytes, EOI), generated deterministically by python3 (stdlib
# only) and cached under target/bench-data/. Set up once (untimed): `library add` and
# `scan --wait`, which already stamps every content hash.
#
# Timed, REPS times each (median shown), files warm in the page cache (one untimed read first;
# the cache cannot be dropped without root sysctl rights, so this measures CPU and syscalls,
# not the disk — the walk's database commits do go to the disk):
#   walk         mediadex walk content-hash --restart --wait   (every asset re-read and
#                re-stamped: both hashes from one read, a fenced commit per 1024 assets)
#   b3sum        find LIB -type f -print0 | xargs -0 b3sum      (files one after another)
#   b3sum-P<n>   the same over <n> = nproc b3sum processes (xargs -P), as the walk uses rayon
# and prints files/s, MB/s (MB = 10^6 bytes) and the ratio walk time / b3sum time.
#
# Environment: FILES (10000), KB (192), REPS (3), B3SUM (b3sum on PATH, else
# target/bench-tools/bin/b3sum; `apt-get install b3sum` or `cargo install b3sum`).
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=${FILES:-10000}
KB=${KB:-192}
REPS=${REPS:-3}
CORES=$(nproc)
LIB=$PWD/target/bench-data/walk-jpegs-$FILES-$KB
DB=$PWD/target/bench-data/walk-db-$FILES-$KB
MEDIADEX=$PWD/target/release/mediadex
B3SUM=${B3SUM:-$(command -v b3sum || echo "$PWD/target/bench-tools/bin/b3sum")}

log() { printf '>> %s\n' "$*" >&2; }
[ -x "$B3SUM" ] || { log "b3sum not found: apt-get install b3sum, or set B3SUM"; exit 1; }

log "cargo build --release"
cargo build --release --quiet

if [ ! -f "$LIB/.complete" ]; then
    log "generating $FILES JPEGs of about $KB KiB in $LIB"
    rm -rf "$LIB" && mkdir -p "$LIB"
    python3 - "$LIB" "$FILES" "$KB" <<'PY'
import os, random, struct, sys
root, files, kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(4)
def seg(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload
dqt = seg(0xDB, bytes([0]) + bytes(range(1, 65)))
sof = seg(0xC0, bytes([8]) + struct.pack(">HH", 3000, 4000) + bytes([1, 1, 0x11, 0]))
dht = seg(0xC4, bytes([0]) + bytes([0, 1] + [0] * 14) + bytes([0]))
sos = seg(0xDA, bytes([1, 1, 0, 0, 63, 0]))
for i in range(files):
    d = os.path.join(root, "%03d" % (i // 200))
    os.makedirs(d, exist_ok=True)
    n = int(kb * 1024 * rng.uniform(0.5, 1.5))
    scan = rng.randbytes(n).replace(b"\xff", b"\xfe")   # no markers inside the scan
    exif = b"Exif\0\0MM\0*\0\0\0\x08" + ("BenchCam %d" % i).encode()
    data = (b"\xff\xd8" + seg(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0") + seg(0xE1, exif)
            + seg(0xFE, b"frame %d" % i) + dqt + sof + dht + sos + scan + b"\xff\xd9")
    with open(os.path.join(d, "IMG_%05d.jpg" % i), "wb") as f:
        f.write(data)
PY
    touch "$LIB/.complete"
fi
BYTES=$(find "$LIB" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {print s}')
COUNT=$(find "$LIB" -type f -name '*.jpg' | wc -l)

if [ ! -f "$DB/.complete" ]; then
    log "indexing the library once (untimed)"
    rm -rf "$DB"
    "$MEDIADEX" --data "$DB" library add "$LIB" --name walkbench >/dev/null
    "$MEDIADEX" --data "$DB" scan walkbench --wait >/dev/null
    touch "$DB/.complete"
fi

log "warming the page cache"
find "$LIB" -type f -name '*.jpg' -print0 | xargs -0 cat >/dev/null

seconds() { # runs "$@" and prints its wall time in seconds
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
walk() { "$MEDIADEX" --data "$DB" walk content-hash --restart --wait; }
b3() { find "$LIB" -type f -name '*.jpg' -print0 | xargs -0 "$B3SUM"; }
b3p() { find "$LIB" -type f -name '*.jpg' -print0 | xargs -0 -n 200 -P "$CORES" "$B3SUM"; }

declare -A T
for name in walk b3 b3p; do
    T[$name]=$(for _ in $(seq "$REPS"); do seconds "$name"; done | median)
done
stamped=$("$MEDIADEX" --data "$DB" status --json | python3 -c \
    'import json,sys; w=json.load(sys.stdin)["walks"]["content-hash"]; print(w["scheme"], w["chain"])')

printf '\n%s JPEGs, %.1f MB, %s cores, median of %s (walk record after: %s)\n' \
    "$COUNT" "$(echo "$BYTES / 1000000" | bc -l)" "$CORES" "$REPS" "$stamped"
printf '%-14s %9s %11s %9s\n' what seconds files/s MB/s
for name in walk b3 b3p; do
    label=$name; [ "$name" = b3 ] && label=b3sum; [ "$name" = b3p ] && label="b3sum-P$CORES"
    t=${T[$name]}
    printf '%-14s %9.2f %11.0f %9.1f\n' "$label" "$t" "$(echo "$COUNT / $t" | bc -l)" \
        "$(echo "$BYTES / 1000000 / $t" | bc -l)"
done
printf 'walk / b3sum = %.2f   walk / b3sum-P%s = %.2f   (time ratios; lower is faster)\n' \
    "$(echo "${T[walk]} / ${T[b3]}" | bc -l)" "$CORES" "$(echo "${T[walk]} / ${T[b3p]}" | bc -l)"
