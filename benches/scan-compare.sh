#!/usr/bin/env bash
# benches/scan-compare.sh — scan throughput of mediadex side by side with a bare
# walk-and-stat (`find`) and with `b3sum` over the same files (issue 3, "Benchmarks").
#
# For each generated library (many small photos; a few large videos; a couple of hundred
# camera-sized photos) it measures, in one run:
#   walk+stat      find LIB -type f -printf '%s %T@ %i\n'            (the rescan floor)
#   b3sum          find LIB -type f -print0 | xargs -0 b3sum          (b3sum defaults: mmap
#                  for files >= 16 KiB, multi-threaded within a file; files one after another)
#   b3sum-nommap   the same with --no-mmap (read(2) like mediadex does for files < 4 MiB)
#   b3sum-P<cores> the same split over <cores> b3sum processes (xargs -P), so small files are
#                  hashed on every core as mediadex's rayon pool does
#   library add    mediadex --data FRESH library add LIB        (creates the database; no file read)
#   first index    mediadex --data FRESH scan NAME --wait        (after an untimed library add)
#   rescan         mediadex --data SAME scan NAME --wait   (nothing changed: nothing is opened)
#   rescan, 0 files  the same over an empty library: the fixed cost of one scan process
#   process start  mediadex --version, and find over an empty directory: what starting each
#                  program costs before it does any work (subtracted in the "above start" ratio)
#   ..., cold      b3sum and a first index again with the page cache dropped before each run
#                  (only where /proc/sys/vm/drop_caches is writable, i.e. as root): the disk
#                  is then read, as on a library seen for the first time
# and prints files/s, MB/s (MB = 10^6 bytes), peak RSS and the two ratios of issue 3:
#   rescan / walk+stat      target <= 1.5
#   first index / b3sum     target <= 1.0   (at least as fast as b3sum)
#
# Numbers are WARM unless the row says cold: every input tool gets one untimed warm-up pass
# and every figure is a median of REPS runs over files already in memory. This measures CPU
# and syscall cost, not reading the disk (the database's own writes and fsyncs do still go to
# the disk of target/bench-data).
#
# Environment: SMALL_FILES (100000), LARGE_FILES (40), LARGE_MB (64), PHOTO_FILES (200),
#              PHOTO_MB (4), REPS (3), LIBS ("small large photos": which libraries to run),
#              COLD (1 where the page cache can be dropped; 0 = skip the cold rows),
#              B3SUM_VERSION (~1.8),
#              BUILD (1; 0 = measure target/release/mediadex as it is, e.g. one built with
#              CARGO_PROFILE_RELEASE_STRIP=false for perf, which a rebuild would undo).
# Generated libraries are cached under target/bench-data/ and rebuilt only when their
# parameters change (the generator is deterministic: same parameters, same bytes).
#
# Last figures (2026-11-30 03:47-03:53 UTC at 06b3e9b, and 03:59-04:05 UTC at 5940fee:
# guarded maps, memchr entropy scan, prefetch of the next file; load average 1.3-2.5). Two
# runs, median of 3 each; cold = page cache dropped before each run:
#   small (100,000 JPEGs, 1.70 GB)   seconds           files/s         RSS MiB   cpu s
#     walk+stat (find)           0.343 / 0.397                                   0.33 / 0.38
#     b3sum (mmap, default)      4.752 / 4.680                                   6.51 / 6.56
#     mediadex first index       3.832 / 3.678   26096 / 27186    78.6           6.59 / 6.30
#     mediadex rescan            0.379 / 0.394  263907 / 253737   29.8           0.59 / 0.62
#     b3sum, cold               29.967 / 28.632
#     mediadex first index, cold 14.780 / 15.423
#     first index / b3sum = 0.81 / 0.79 MET (cold 0.49 / 0.54); rescan / walk+stat = 1.10 / 0.99 MET
#   large (40 MP4s of 64 MiB, 2.68 GB)
#     b3sum (mmap, default)      0.600 / 0.569                                   1.15 / 1.07
#     mediadex first index       0.663 / 0.560                   142.5           1.17 / 1.05
#     mediadex rescan            0.031 / 0.025 (find 0.008 / 0.008; mediadex --version alone
#                                0.011 / 0.009, find over an empty dir 0.010 / 0.007)
#     b3sum, cold / first index, cold   2.805 / 2.451  against  2.907 / 2.636
#     first index / b3sum = 1.10 / 0.98 (cpu 1.02 / 0.98; cold 1.04 / 1.08): parity, the same
#     blake3 over the same mapped bytes. rescan / walk+stat = 3.75 / 3.19 MISSED: 1.5x find
#     is 12 ms, and mediadex --version alone takes 9-11 ms in this harness.
#   photos (200 JPEGs of 4.2 MB, 0.84 GB; not one of issue 3's libraries)
#     b3sum (mmap, default)      0.252 / 0.370                                   0.45 / 0.50
#     mediadex first index       0.493 / 0.586                    27.0           0.87 / 0.99
#     b3sum, cold / first index, cold   1.215 / 1.441  against  0.884 / 1.150
#     first index / b3sum = 1.96 / 1.59 (cpu 1.93 / 1.98; cold 0.73 / 0.80): two blake3 digests
#     of nearly every byte (checksum and content hash, DESIGN section 6) against one.
#
# Before (2026-11-30 01:11-01:13 UTC, main at 7c46086: no temporary b-tree per file
# insert, plain file INSERT/UPDATE, 16 KiB pages; load average 1.3-2.2). Two runs, median
# of 3 each; `library add` untimed (its own row: 26-39 ms):
#   small (100,000 JPEGs, 1.70 GB)   seconds           files/s        MB/s   RSS MiB  cpu s
#     walk+stat (find)           0.404 / 0.398                                         0.39 / 0.38
#     b3sum (mmap, default)      4.619 / 4.445                                         6.93 / 5.54
#     mediadex first index       4.107 / 3.772   24349 / 26511   415 / 452    78.6   6.84 / 6.43
#     mediadex rescan            0.355 / 0.341  281926 / 293344                 29.4   0.55 / 0.54
#     mediadex rescan, 0 files   0.023 / 0.023
#     first index / b3sum = 0.89 / 0.85 MET (cpu 0.99 / 1.16); rescan / walk+stat = 0.88 / 0.86 MET
#   large (40 MP4s of 64 MiB, 2.68 GB)
#     b3sum (mmap, default)      0.717 / 0.724                    3744 / 3708          1.30 / 1.33
#     mediadex first index       0.756 / 0.790                    3552 / 3398  141.6   1.36 / 1.44
#     mediadex rescan            0.049 / 0.034                                  14.1   0.02 / 0.02
#     mediadex rescan, 0 files   0.043 / 0.027
#     first index / b3sum = 1.05 / 1.09 MISSED (cpu 1.05 / 1.08): both hash the mapped files
#     with blake3 on rayon; the gap is within the run-to-run spread (same binary, add timed
#     with the scan, 01:08-01:10 UTC: 1.05 / 1.03; 00:56-00:59 UTC at 6335dba: 0.93 / 0.99).
#     rescan / walk+stat = 6.12 / 5.21 MISSED: 40 files cost `find` 6-8 ms in all; the
#     rescan is the 23-43 ms fixed cost of a scan process (process start, database open,
#     admission, completion: the 0-files row) plus ~7 ms.
#   The same runs before this session's changes (main at f74fb50, add timed with the scan):
#   small first index / b3sum 1.19-1.34, large 1.16.
#
# Earlier (2026-11-29 22:57-23:01 UTC, main with 4096-file batches and the writer's
# wal_autocheckpoint at 8192 pages; load < 1.5). Two runs, median of 3 each:
#   small (100,000 JPEGs, 1.70 GB)   seconds  files/s   MB/s  peak RSS MiB  cpu s
#     b3sum (mmap, default)     4.514 / 4.589                              6.43 / 6.97
#     mediadex first index      5.381 / 6.130   18584 / 16314    81.9      8.76 / 9.24
#     mediadex rescan           0.355 / 0.333                    30.4      0.58 / 0.57
#     first index / b3sum = 1.19 / 1.34 (cpu 1.36 / 1.33) MISSED; rescan / walk+stat = 0.87 /
#     1.03 MET. (wal_autocheckpoint 32768 instead: first index 6.898 s, 1.60: no better.)
#   large (40 MP4s of 64 MiB, 2.68 GB), same binary, 23:04 UTC:
#     b3sum (mmap, default)            0.527       76   5093    66.7          1.01
#     mediadex first index             0.614       65   4373   142.3          1.14
#     mediadex rescan                  0.033     1225      -    13.7          0.01
#     first index / b3sum = 1.16 MISSED (0.53 at stop 7 was b3sum slowed by load: 2.4 s)
#
# With 4096-file batches only (22:47-22:50 UTC; load 0.4-1.5).
#   small (100,000 JPEGs, 1.70 GB)   seconds  files/s   MB/s  peak RSS MiB  cpu s
#     walk+stat (find)                 0.309   323809   5515     3.0          0.29
#     b3sum (mmap, default)            4.302    23246    396     3.8          6.58
#     b3sum --no-mmap                  2.284    43781    746     3.7          2.40
#     b3sum xargs -P2                  1.392    71861   1224     3.7          2.69
#     mediadex first index             6.378    15678    267    81.7          9.80
#     mediadex rescan                  0.382   261540   4455    31.9          0.61
#     rescan / walk+stat = 1.24 (cpu 2.10)  MET;  first index / b3sum = 1.48 (cpu 1.49) MISSED
#
# The run before (22:25-22:29 UTC, main at cd112b1, 1024-file batches: the read_dir walker of
# scanperf2 plus a scan that no longer loads the face model; quiet machine, load average
# 0.3-1.9). Median of 3, warm page cache.
#   small (100,000 JPEGs, 1.70 GB)   seconds  files/s   MB/s  peak RSS MiB  cpu s
#     walk+stat (find)                 0.387   258459   4402     3.1          0.37
#     b3sum (mmap, default)            4.392    22768    388     3.8          6.36
#     b3sum --no-mmap                  2.302    43433    740     3.7          2.40
#     b3sum xargs -P2                  1.630    61354   1045     3.7          3.09
#     mediadex first index             7.640    13089    223    78.0         10.72
#     mediadex rescan                  0.375   266772   4544    29.9          0.63
#     rescan / walk+stat = 0.97 (cpu 1.70)  MET;  first index / b3sum = 1.74 (cpu 1.69) MISSED
#
# Figures under load (same day 21:45-21:52 UTC, branch scanperf2: read_dir walker, chunked walk
# channel, no savepoint for an op alone in its writer batch). b3sum 1.2.0 from Debian (no time
# to build 1.8 here). Load average 9.1-11.2 during the run (2 cores; three engineers building
# tract at once), so wall times are inflated 2-4x for every tool; the cpu columns are steadier.
# Median of 3, warm page cache.
#   small (100,000 JPEGs, 1.70 GB)   seconds  files/s   MB/s  peak RSS MiB  cpu s
#     walk+stat (find)                 1.245    80338   1368     3.0          0.30
#     b3sum (mmap, default)           12.764     7835    133     3.7          3.01
#     b3sum --no-mmap                  9.949    10052    171     3.7          2.25
#     b3sum xargs -P2                 10.190     9813    167     3.7          3.30
#     mediadex first index            32.375     3089     53    96.7         11.15
#     mediadex rescan                  2.454    40757    694    46.1          0.77
#     rescan / walk+stat = 1.97 (cpu 2.56)  MISSED;  first index / b3sum = 2.54 (cpu 3.70) MISSED
# Where the time goes now (perf record, this binary unstripped):
#   rescan (0.77 cpu s): walker thread 39% (34% kernel: getdents + statx relative to the
#     directory fd, dentry lookup; its user side is 2%), diff/reader thread 29% (SQLite reads
#     of the per-directory known lists, the hash map), main thread 19% (process start-up:
#     loading the ONNX face model with tract, ~0.15 s cpu, although a scan never uses it),
#     writer 10% (the few fsync'd commits: claim, heartbeat, completion).
#   first index (11 cpu s): writer thread 55% (the critical path: SQLite VDBE and B-tree
#     inserts, malloc; pwrite of WAL frames and checkpoints ~10% of all cpu, fsync ~4%),
#     reader + rayon 35% (read, blake3, content hash, metadata), main thread 7% (model load).
#     No sub-journal work is left in the profile.
#
# Previous figures (2026-11-29, branch scanperf at 98cc9c7; 2 cores shared with three other
# engineers' builds, load average 7-11 during the runs, so wall times swing by up to 2x
# between runs; the cpu columns are steadier). Median of 3, warm page cache.
#   small (100,000 JPEGs, 1.70 GB)   seconds  files/s   MB/s  peak RSS MiB  cpu s
#     walk+stat (find)                 0.422   236957   4036     3.0          0.30
#     b3sum (mmap, default)            4.496    22240    379     3.7          2.90
#     mediadex first index            15.472     6463    110    51.3         10.57
#     mediadex rescan                  0.808   123712   2107    23.9          0.58
#     rescan / walk+stat = 1.92 (cpu 1.93); an earlier run the same hour: 0.762 / 0.501 = 1.52
#     first index / b3sum = 3.44 (cpu 3.64); was 4.99 before this branch (and 9x with the
#       quadratic sub-journal, below)
#   large (40 MP4s of 64 MiB, 2.68 GB)
#     b3sum (mmap, default)            2.425      16   1107    66.7          1.32
#     mediadex first index             1.291      31   2080   134.5          1.23
#     mediadex rescan                  0.057     696      -     7.9          0.01
#     first index / b3sum = 0.53 (met); rescan / walk+stat = 3.17 is 57 ms of process
#       start-up against find's 18 ms for 40 files (0.01 s cpu), not per-file cost.
# Where the time goes (perf, release build with symbols):
#   first index: the writer thread is 66% of all cpu (sqlite B-tree inserts for 4 statements
#     per new file, and the per-op savepoint's statement sub-journal written to a temp file:
#     ~48% of all samples are kernel, mostly that writing and reading the files); the reading
#     side (read once, blake3, metadata) is 29%. Before 0c81bd4 an in-memory sub-journal
#     (temp_store=MEMORY) was truncated by a linked-list walk on every statement: 59% of cpu.
#   rescan: the walker thread is 58% (walkdir stats each file by full path: path lookup in
#     the kernel, where find uses fstatat on the directory fd), the diff thread 33%
#     (per-directory known lists from SQLite, path comparisons, the channel), no writes.
set -euo pipefail
cd "$(dirname "$0")/.."

SMALL_FILES=${SMALL_FILES:-100000}
LARGE_FILES=${LARGE_FILES:-40}
LARGE_MB=${LARGE_MB:-64}
REPS=${REPS:-3}
PHOTO_FILES=${PHOTO_FILES:-200}
PHOTO_MB=${PHOTO_MB:-4}
LIBS=${LIBS:-small large photos}
DROP_CACHES=/proc/sys/vm/drop_caches
if [ -z "${COLD:-}" ]; then
    COLD=0
    { [ -w "$DROP_CACHES" ] && sync && echo 1 >"$DROP_CACHES"; } 2>/dev/null && COLD=1
fi
B3SUM_VERSION=${B3SUM_VERSION:-~1.8}   # the blake3 1.8 line, as in Cargo.lock; builds on Rust 1.95
CORES=$(nproc)

DATA=$PWD/target/bench-data
TOOLS=$PWD/target/bench-tools
MEDIADEX=$PWD/target/release/mediadex
B3SUM=$TOOLS/bin/b3sum
mkdir -p "$DATA" "$TOOLS"

log() { printf '>> %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------
# 1. Tools: the release binary, b3sum from crates.io, GNU time for peak RSS.
# ---------------------------------------------------------------------------------------
if [ "${BUILD:-1}" = 1 ]; then
    log "cargo build --release"
    cargo build --release --quiet
else
    log "BUILD=0: using the release binary as it is"
fi

if [ ! -x "$B3SUM" ]; then
    log "installing b3sum $B3SUM_VERSION from crates.io into $TOOLS"
    cargo install b3sum --locked --version "$B3SUM_VERSION" --root "$TOOLS" --quiet
fi
log "using $("$B3SUM" --version)"

if ! command -v /usr/bin/time >/dev/null 2>&1; then
    log "GNU time missing: installing it (apt-get install time)"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq time
fi

# ---------------------------------------------------------------------------------------
# 2. Libraries, generated once and cached (deterministic; python3 standard library only).
#    small: SMALL_FILES JPEGs in YYYY/MM/DD folders of 100-300 files. Each is one real tiny
#           JPEG (64x48, EXIF make/model/date) followed by 0-32 KiB of pseudo-random bytes
#           after its end marker: still decodable, and goes through the real sniff + size +
#           EXIF path. Files are distinct except the few whose trailer length came out 0 (they
#           equal the seed: byte-identical duplicates, as real libraries have).
#    large: LARGE_FILES MP4s of LARGE_MB MiB: one real 1 s H.264 MP4 (moov first) followed by
#           a top-level `free` box of pseudo-random bytes, so each is a valid, distinct video.
# ---------------------------------------------------------------------------------------
# 64x48 JPEG (ImageMagick gradient, EXIF Make/Model/DateTimeOriginal/OffsetTimeOriginal by exiftool)
SEED_JPEG_B64='
/9j/4AAQSkZJRgABAQAAAQABAAD/4QECRXhpZgAATU0AKgAAAAgACAEPAAIAAAAJAAAAbgEQAAIAAAAIAAAAeAESAAMA
AAABAAEAAAEaAAUAAAABAAAAgAEbAAUAAAABAAAAiAEoAAMAAAABAAEAAAITAAMAAAABAAEAAIdpAAQAAAABAAAAkAAA
AABCZW5jaENhbQAAQmVuY2ggMQAAAAABAAAAAQAAAAEAAAABAAaQAAAHAAAABDAyMzKQAwACAAAAFAAAAN6QEQACAAAA
BwAAAPKRAQAHAAAABAECAwCgAAAHAAAABDAxMDCgAQADAAAAAf//AAAAAAAAMjAyMTowNjoxNSAxMDoyMDozMAArMDI6
MDAAAP/bAEMACgcHCAcGCggICAsKCgsOGBAODQ0OHRUWERgjHyUkIh8iISYrNy8mKTQpISIwQTE0OTs+Pj4lLkRJQzxI
Nz0+O//bAEMBCgsLDg0OHBAQHDsoIig7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7
Ozs7O//AABEIADAAQAMBIgACEQEDEQH/xAAWAAEBAQAAAAAAAAAAAAAAAAAAAwb/xAAVEAEBAAAAAAAAAAAAAAAAAAAA
Ev/EABcBAQEBAQAAAAAAAAAAAAAAAAAGBAf/xAAWEQEBAQAAAAAAAAAAAAAAAAAAFGH/2gAMAwEAAhEDEQA/AMnZaFls
UeOp1L2WhZZHhUvZaFlkeFS9loWWR4VI2WhZavjxL1L2WhZZHhUvZaFlkeFS9loWWR4VI2WjZaujS1S1lo2WRlS1lo2W
RlS1lo2WRlT/2Q=='
# 32x24, 1 s, H.264 MP4 with faststart and creation_time (ffmpeg testsrc)
SEED_MP4_B64='
AAAAIGZ0eXBpc29tAAACAGlzb21pc28yYXZjMW1wNDEAAAMXbW9vdgAAAGxtdmhkAAAAANzuL27c7i9uAAAD6AAAA+gA
AQAAAQAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
AAAAAAAAAAAAAgAAAkF0cmFrAAAAXHRraGQAAAAD3O4vbtzuL24AAAABAAAAAAAAA+gAAAAAAAAAAAAAAAAAAAAAAAEA
AAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAACAAAAAYAAAAAAAkZWR0cwAAABxlbHN0AAAAAAAAAAEAAAPo
AAAAAAABAAAAAAG5bWRpYQAAACBtZGhkAAAAANzuL27c7i9uAABAAAAAQABVxAAAAAAALWhkbHIAAAAAAAAAAHZpZGUA
AAAAAAAAAAAAAABWaWRlb0hhbmRsZXIAAAABZG1pbmYAAAAUdm1oZAAAAAEAAAAAAAAAAAAAACRkaW5mAAAAHGRyZWYA
AAAAAAAAAQAAAAx1cmwgAAAAAQAAASRzdGJsAAAAwHN0c2QAAAAAAAAAAQAAALBhdmMxAAAAAAAAAAEAAAAAAAAAAAAA
AAAAAAAAACAAGABIAAAASAAAAAAAAAABFUxhdmM1OS4zNy4xMDAgbGlieDI2NAAAAAAAAAAAAAAAGP//AAAANmF2Y0MB
ZAAK/+EAGWdkAAqs2Ul+XARAAAADAEAAAAMAg8SJZYABAAZo6+PLIsD9+PgAAAAAEHBhc3AAAAABAAAAAQAAABRidHJ0
AAAAAAAAIsgAACLIAAAAGHN0dHMAAAAAAAAAAQAAAAEAAEAAAAAAHHN0c2MAAAAAAAAAAQAAAAEAAAABAAAAAQAAABRz
dHN6AAAAAAAABFkAAAABAAAAFHN0Y28AAAAAAAAAAQAAA0cAAABidWR0YQAAAFptZXRhAAAAAAAAACFoZGxyAAAAAAAA
AABtZGlyYXBwbAAAAAAAAAAAAAAAAC1pbHN0AAAAJal0b28AAAAdZGF0YQAAAAEAAAAATGF2ZjU5LjI3LjEwMAAAAAhm
cmVlAAAEYW1kYXQAAAKtBgX//6ncRem95tlIt5Ys2CDZI+7veDI2NCAtIGNvcmUgMTY0IHIzMDk1IGJhZWU0MDAgLSBI
LjI2NC9NUEVHLTQgQVZDIGNvZGVjIC0gQ29weWxlZnQgMjAwMy0yMDIyIC0gaHR0cDovL3d3dy52aWRlb2xhbi5vcmcv
eDI2NC5odG1sIC0gb3B0aW9uczogY2FiYWM9MSByZWY9MyBkZWJsb2NrPTE6MDowIGFuYWx5c2U9MHgzOjB4MTEzIG1l
PWhleCBzdWJtZT03IHBzeT0xIHBzeV9yZD0xLjAwOjAuMDAgbWl4ZWRfcmVmPTEgbWVfcmFuZ2U9MTYgY2hyb21hX21l
PTEgdHJlbGxpcz0xIDh4OGRjdD0xIGNxbT0wIGRlYWR6b25lPTIxLDExIGZhc3RfcHNraXA9MSBjaHJvbWFfcXBfb2Zm
c2V0PS0yIHRocmVhZHM9MSBsb29rYWhlYWRfdGhyZWFkcz0xIHNsaWNlZF90aHJlYWRzPTAgbnI9MCBkZWNpbWF0ZT0x
IGludGVybGFjZWQ9MCBibHVyYXlfY29tcGF0PTAgY29uc3RyYWluZWRfaW50cmE9MCBiZnJhbWVzPTMgYl9weXJhbWlk
PTIgYl9hZGFwdD0xIGJfYmlhcz0wIGRpcmVjdD0xIHdlaWdodGI9MSBvcGVuX2dvcD0wIHdlaWdodHA9MiBrZXlpbnQ9
MjUwIGtleWludF9taW49MSBzY2VuZWN1dD00MCBpbnRyYV9yZWZyZXNoPTAgcmNfbG9va2FoZWFkPTQwIHJjPWNyZiBt
YnRyZWU9MSBjcmY9MjMuMCBxY29tcD0wLjYwIHFwbWluPTAgcXBtYXg9NjkgcXBzdGVwPTQgaXBfcmF0aW89MS40MCBh
cT0xOjEuMDAAgAAAAaRliIQBf+jYIRYYI9/A8fI1b2Xy90zACQSsCykB5ZehlwiZlaWx6/SZhwAAOvq3WxWrogEN0UMA
hb3f8bBoJVSah2geOvBAGWV0VWjong+YtZ4F5QjKuo4NYdGu1qTxZ1dLBcFev0Bh6T9Uf/4FyH8FAAyItNMpuRRkhygU
OxTAJ34OhyK2w0f3Ft2dIWlnsy+YqBOxPiUdS87EvgC5ZJD0BQ8Pe3lPFZT1sCKCvk2DipXDoxn31NRMxDAgZfdcfw6c
ZBJ4WJjz6XVMJLVwWbb3dELJdQKfp0m9A+HIfzdOE5jVi2EFRmKHggndQ+aqV8nCMNpfF18Z8Gtu85Jv3uStPjBpxElH
gash9PY69RaOq5cLKGIAQxLoSLnccMNBrLcLztGn9jy0AU2VYD9GYCIVu5bPk5Phjk2l2VjzXz5a3/Gjoa93Sl1MHvhA
1D5FaUMIFAYoPdGhEyCWLIqC0iuMKL7Gm4GClz39uvmbXeW7v0eJeViygw2+T3ojQoz/OnHRx7csWYEhHHWYnpnk1lSe
ugsATXKdBEhZI3JdBbw1eobpsT8='

gen_library() { # gen_library KIND DIR COUNT [MB]
    local kind=$1 dir=$2 count=$3 mb=${4:-0}
    local params="v1 $kind count=$count mb=$mb"
    if [ -f "$dir.params" ] && [ "$(cat "$dir.params")" = "$params" ]; then
        log "library $kind: cached ($params)"
        return
    fi
    log "library $kind: generating ($params) in $dir"
    rm -rf "$dir" "$dir.params"
    mkdir -p "$dir"
    KIND=$kind DIR=$dir COUNT=$count MB=$mb SEED_JPEG=$SEED_JPEG_B64 SEED_MP4=$SEED_MP4_B64 \
        python3 - <<'PY'
import base64, datetime, os, random, struct
kind, root, count, mb = os.environ["KIND"], os.environ["DIR"], int(os.environ["COUNT"]), int(os.environ["MB"])
jpeg = base64.b64decode(os.environ["SEED_JPEG"])
mp4 = base64.b64decode(os.environ["SEED_MP4"])
rng = random.Random(f"mediadex-bench-{kind}")      # one seeded stream: same params, same bytes
day = datetime.datetime(2015, 1, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)
made = 0
while made < count:
    folder = os.path.join(root, day.strftime("%Y/%m/%d"))
    os.makedirs(folder, exist_ok=True)
    in_folder = {"small": rng.randint(100, 300), "photos": rng.randint(10, 40)}.get(kind) or rng.randint(1, 3)
    for k in range(min(in_folder, count - made)):
        made += 1
        if kind == "small":
            path = os.path.join(folder, f"IMG_{made:06d}.jpg")
            body = jpeg + rng.randbytes(rng.randint(0, 32 * 1024))
        elif kind == "photos":
            # A camera-sized JPEG: the seed's headers and EXIF, then MB of entropy-coded
            # data (random, every FF stuffed with 00 as an encoder does) and the EOI. Not
            # decodable, but parsed and hashed like a real one.
            path = os.path.join(folder, f"DSC_{made:05d}.jpg")
            sos = jpeg.index(b"\xff\xda")
            header = jpeg[: sos + 2 + struct.unpack(">H", jpeg[sos + 2 : sos + 4])[0]]
            scan = rng.randbytes(mb * 1024 * 1024).replace(b"\xff", b"\xff\x00")
            body = header + scan + b"\xff\xd9"
        else:
            path = os.path.join(folder, f"VID_{made:04d}.mp4")
            payload = mb * 1024 * 1024 - len(mp4) - 8
            body = mp4 + struct.pack(">I", payload + 8) + b"free" + rng.randbytes(payload)
        with open(path, "wb") as f:
            f.write(body)
        t = (day + datetime.timedelta(seconds=37 * k)).timestamp()
        os.utime(path, (t, t))
    day += datetime.timedelta(days=1)
PY
    echo "$params" >"$dir.params"   # beside the library, not in it: written only when complete
}

# ---------------------------------------------------------------------------------------
# 3. Measuring: REPS timed runs per command; wall time from bash's clock, peak RSS (largest
#    single process of the command, GNU time's %M) from /usr/bin/time. Median of each.
# ---------------------------------------------------------------------------------------
RESULTS=()   # rows: tool|files|bytes|seconds|rss_mib|lib|cpu_seconds

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure LIB LABEL FILES BYTES SETUP CMD: runs SETUP (untimed) then CMD (timed), REPS times.
measure() {
    local lib=$1 label=$2 files=$3 bytes=$4 setup=$5 cmd=$6
    local secs=() rss=() cpu=() i t0 t1 out=$DATA/time.out
    for ((i = 1; i <= REPS; i++)); do
        bash -c "$setup"
        t0=$EPOCHREALTIME
        /usr/bin/time -f '%M %U %S' -o "$out" bash -c "$cmd"
        t1=$EPOCHREALTIME
        secs+=("$(echo "$t1 - $t0" | bc -l)")
        rss+=("$(tail -n1 "$out" | awk '{print $1}')")
        cpu+=("$(tail -n1 "$out" | awk '{printf "%.2f", $2 + $3}')")
        log "  $label run $i: ${secs[-1]} s, cpu ${cpu[-1]} s, peak RSS ${rss[-1]} KiB"
    done
    RESULTS+=("$label|$files|$bytes|$(median "${secs[@]}")|$(median "${rss[@]}" | awk '{printf "%.1f", $1/1024}')|$lib|$(median "${cpu[@]}")")
}

# Checks the newest run of a data dir ended `completed` and prints its reasons/progress.
check_run() { # check_run DATA_DIR WHAT
    RUNS=$("$MEDIADEX" --data "$1" runs --limit 1 --json 2>/dev/null) WHAT=$2 python3 - <<'PY'
import json, os, sys
run = json.loads(os.environ["RUNS"])[0]
print(f">>   {os.environ['WHAT']}: state={run['state']} reasons={run.get('reasons')} "
      f"progress={run.get('progress')}", file=sys.stderr)
sys.exit(0 if run["state"] == "completed" else 1)
PY
}

bench_library() { # bench_library NAME DIR
    local name=$1 lib=$2 files bytes mdx=$DATA/mediadex-$1
    files=$(find "$lib" -type f -not -name '.*' | wc -l)
    bytes=$(find "$lib" -type f -not -name '.*' -printf '%s\n' | awk '{s+=$1} END {printf "%.0f", s}')
    log "library $name: $files files, $bytes bytes"
    local list="find '$lib' -type f -not -name '.*' -print0"

    log "warm-up (page cache)"
    bash -c "$list | xargs -0 cat >/dev/null"

    measure "$name" "walk+stat (find)" "$files" "$bytes" : \
        "find '$lib' -type f -printf '%s %T@ %i\n' >/dev/null"
    measure "$name" "b3sum (mmap, default)" "$files" "$bytes" : \
        "$list | xargs -0 '$B3SUM' >/dev/null"
    measure "$name" "b3sum --no-mmap" "$files" "$bytes" : \
        "$list | xargs -0 '$B3SUM' --no-mmap >/dev/null"
    measure "$name" "b3sum xargs -P$CORES" "$files" "$bytes" : \
        "$list | xargs -0 -P$CORES -n $(( (files + CORES - 1) / CORES )) '$B3SUM' >/dev/null"
    # A fresh database for every first index (`library add`, untimed: it creates the
    # database and reads no file; its own cost is the next row); the files are warm.
    local add="'$MEDIADEX' --data '$mdx' library add '$lib' --name '$name' >/dev/null 2>>'$mdx.log'"
    measure "$name" "mediadex library add" "0" "0" "rm -rf '$mdx'" "$add"
    measure "$name" "mediadex first index" "$files" "$bytes" "rm -rf '$mdx' && $add" \
        "'$MEDIADEX' --data '$mdx' scan '$name' --wait >/dev/null 2>>'$mdx.log'"
    check_run "$mdx" "first index"
    measure "$name" "mediadex rescan" "$files" "$bytes" : \
        "'$MEDIADEX' --data '$mdx' scan '$name' --wait >/dev/null 2>>'$mdx.log'"
    check_run "$mdx" "rescan"
    # The fixed cost of one `scan --wait` (process start, database, admission, completion):
    # a rescan of an empty library. For a library of 40 files it is most of the rescan.
    local empty=$DATA/empty-library mde=$DATA/mediadex-empty
    mkdir -p "$empty"
    [ -d "$mde" ] || "$MEDIADEX" --data "$mde" library add "$empty" --name empty >/dev/null 2>&1
    measure "$name" "mediadex rescan, 0 files" "0" "0" : \
        "'$MEDIADEX' --data '$mde' scan empty --wait >/dev/null 2>>'$mde.log'"
    measure "$name" "mediadex process start" "0" "0" : "'$MEDIADEX' --version >/dev/null"
    measure "$name" "find process start" "0" "0" : "find '$empty' >/dev/null"
    [ "$COLD" = 1 ] || return 0
    local drop="sync && echo 3 >$DROP_CACHES"
    measure "$name" "b3sum, cold" "$files" "$bytes" "$drop" "$list | xargs -0 '$B3SUM' >/dev/null"
    measure "$name" "mediadex first index, cold" "$files" "$bytes" "rm -rf '$mdx' && $add && $drop" \
        "'$MEDIADEX' --data '$mdx' scan '$name' --wait >/dev/null 2>>'$mdx.log'"
    check_run "$mdx" "first index, cold"
}

# ---------------------------------------------------------------------------------------
# 4. Run and report.
# ---------------------------------------------------------------------------------------
for name in $LIBS; do
    case $name in
        small) gen_library small "$DATA/small-$SMALL_FILES" "$SMALL_FILES" ;;
        large) gen_library large "$DATA/large-${LARGE_FILES}x$LARGE_MB" "$LARGE_FILES" "$LARGE_MB" ;;
        photos) gen_library photos "$DATA/photos-${PHOTO_FILES}x$PHOTO_MB" "$PHOTO_FILES" "$PHOTO_MB" ;;
        *) echo "unknown library $name" >&2; exit 2 ;;
    esac
done
for name in $LIBS; do
    case $name in
        small) bench_library small "$DATA/small-$SMALL_FILES" ;;
        large) bench_library large "$DATA/large-${LARGE_FILES}x$LARGE_MB" ;;
        photos) bench_library photos "$DATA/photos-${PHOTO_FILES}x$PHOTO_MB" ;;
    esac
done

report() {
    local name row tool files bytes secs rss lib cpu
    local find_s b3_s first_s rescan_s find_c b3_c first_c rescan_c mstart fstart b3cold firstcold
    echo
    echo "mediadex scan-compare — $(date -u +%FT%TZ), $CORES cores, $(uname -r), warm page cache, median of $REPS"
    echo "mediadex $(git rev-parse --short HEAD), $("$B3SUM" --version), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    for name in $LIBS; do
        echo
        echo "library: $name"
        b3cold='' firstcold='' mstart=0 fstart=0
        printf '| %-24s | %8s | %14s | %9s | %10s | %9s | %13s | %8s |\n' \
            tool files bytes seconds files/s MB/s 'peak RSS MiB' 'cpu s'
        printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' -------------------------- ---------- ---------------- \
            ----------- ------------ ----------- --------------- ----------
        for row in "${RESULTS[@]}"; do
            IFS='|' read -r tool files bytes secs rss lib cpu <<<"$row"
            [ "$lib" = "$name" ] || continue
            printf '| %-24s | %8d | %14d | %9.3f | %10.0f | %9.1f | %13.1f | %8.2f |\n' "$tool" \
                "$files" "$bytes" "$secs" "$(echo "$files / $secs" | bc -l)" \
                "$(echo "$bytes / $secs / 1000000" | bc -l)" "$rss" "$cpu"
            case $tool in
                "walk+stat (find)") find_s=$secs find_c=$cpu ;;
                "b3sum (mmap, default)") b3_s=$secs b3_c=$cpu ;;
                "mediadex first index") first_s=$secs first_c=$cpu ;;
                "mediadex rescan") rescan_s=$secs rescan_c=$cpu ;;
                "mediadex process start") mstart=$secs ;;
                "find process start") fstart=$secs ;;
                "b3sum, cold") b3cold=$secs ;;
                "mediadex first index, cold") firstcold=$secs ;;
            esac
        done
        local r1 r2
        r1=$(echo "$rescan_s / $find_s" | bc -l)
        r2=$(echo "$first_s / $b3_s" | bc -l)
        printf 'rescan / walk+stat       = %6.2f  (target <= 1.5: %s)\n' "$r1" \
            "$(echo "$r1 <= 1.5" | bc -l | sed 's/1/met/;s/0/MISSED/')"
        printf 'first index / b3sum      = %6.2f  (target <= 1.0: %s)\n' "$r2" \
            "$(echo "$r2 <= 1.0" | bc -l | sed 's/1/met/;s/0/MISSED/')"
        # Each program's own start-up taken out of both sides: what the tree costs each.
        # Only where the walk itself is long enough to measure against a few ms of noise.
        if [ "$(echo "$find_s - $fstart > 0.05" | bc -l)" = 1 ]; then
            printf 'above start: rescan / walk+stat = %6.2f  ((%.3f - %.3f) / (%.3f - %.3f))\n' \
                "$(echo "($rescan_s - $mstart) / ($find_s - $fstart)" | bc -l)" \
                "$rescan_s" "$mstart" "$find_s" "$fstart"
        else
            printf 'above start: walk+stat is within 50 ms of find starting (%.3f / %.3f s); no ratio\n' \
                "$find_s" "$fstart"
        fi
        [ -n "$b3cold" ] && printf 'cold: first index / b3sum = %6.2f\n' \
            "$(echo "$firstcold / $b3cold" | bc -l)"
        # CPU seconds (user + sys) are far less disturbed by other load on the machine than
        # wall time; they show the work done, not the parallelism gained.
        printf 'cpu: rescan / walk+stat  = %6.2f   first index / b3sum = %6.2f\n' \
            "$(echo "$rescan_c / ($find_c + 0.001)" | bc -l)" \
            "$(echo "$first_c / ($b3_c + 0.001)" | bc -l)"
    done
}
report | tee "$DATA/report-$(date -u +%Y%m%dT%H%M%SZ).txt"
