#!/usr/bin/env bash
# The README's set-up from a fresh clone (issue 27 item 9): `cargo build --release` (what
# `cargo run --release` builds), then `cargo test --release --tests --no-run`, in a clone of
# HEAD with an empty target dir, each under /usr/bin/time and `--timings`. Prints each step's
# wall and CPU seconds (user + sys: a shared machine's load stretches the wall time, much less
# the CPU time), the units that took longest, and the critical path: the longest chain of
# dependencies, with cargo's pipelining (a library's dependents start at its metadata, a
# build script and the final link wait for the whole), from the report's unit times.
#
#   benches/cold-build.sh [WORKDIR]        # default: a temporary directory, removed after
#   benches/cold-build.sh --report WORKDIR # the report again, from a finished run
#
# It does not run the tests (the suite takes about 3 minutes on 2 cores, beside the build).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

report() {
    local work=$1
    for step in build test; do
        python3 - "$work" "$step" <<'PY'
import json, re, subprocess, sys, glob
work, step = sys.argv[1], sys.argv[2]
t = open(f"{work}/time-{step}").read()
field = lambda name: re.search(rf"{re.escape(name)}: (\S+)", t).group(1)
wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
secs = sum(float(p) * 60 ** i for i, p in enumerate(reversed(wall)))
cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
html = sorted(glob.glob(f"{work}/target/cargo-timings/cargo-timing-*.html"))[0 if step == "build" else -1]
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", open(html).read(), re.S).group(1))
print(f"== {step}: wall {secs:.0f} s, CPU {cpu:.0f} s (user + sys), {len(units)} units; longest:")
for u in sorted(units, key=lambda u: -u["duration"])[:8]:
    print(f"   {u['duration']:7.1f} s  {u['name']}{u['target']}")
if step != "build":
    sys.exit()
meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1",
    "--offline", "--filter-platform", subprocess.check_output(["rustc", "-vV"], text=True)
    .split("host: ")[1].split()[0]], cwd=f"{work}/src"))
pk = {p["id"]: p for p in meta["packages"]}
lib, fe, script = {}, {}, {}
for u in units:
    k = (u["name"], u["version"])
    front = dict(u.get("sections") or []).get("frontend", {}).get("end", u["duration"])
    if u["target"] == "":
        lib[k], fe[k] = u["duration"], front
    elif u["target"].startswith(" build-script"):
        script[k] = script.get(k, 0) + u["duration"]
    else:
        last = u["duration"]  # the binary's link
deps = {n["id"]: [(d["pkg"], {dk["kind"] for dk in d["dep_kinds"]}) for d in n["deps"]]
        for n in meta["resolve"]["nodes"]}
memo = {}
def ready(pid, whole):
    if (pid, whole) in memo:
        return memo[(pid, whole)]
    k = (pk[pid]["name"], pk[pid]["version"])
    start, why = 0.0, None
    for d, kinds in deps[pid]:
        if not kinds & {None, "build"}:
            continue
        need = "build" in kinds or pk[d]["targets"][0]["kind"] == ["proc-macro"]
        t = ready(d, need)[0]
        if t > start:
            start, why = t, (d, need)
    start += script.get(k, 0)
    memo[(pid, whole)] = (start + (lib.get(k, 0) if whole else fe.get(k, 0)), why, start)
    return memo[(pid, whole)]
def closure(pid, seen):
    for d, _ in deps[pid]:
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen
root = meta["workspace_members"][0]
tail = max(closure(root, {root}), key=lambda d: ready(d, True)[0])
print(f"== critical path: {ready(tail, True)[0] + last:.0f} s (the report's wall seconds), the link after:")
chain, cur = [], (tail, True)
while cur:
    chain.append(cur)
    cur = ready(*cur)[1]
for pid, whole in reversed(chain):
    end, _, start = ready(pid, whole)
    if end - start >= 1:
        print(f"   {start:7.0f} -> {end:7.0f} s  {pk[pid]['name']} ({'whole' if whole else 'metadata'})")
PY
    done
}

if [ "${1:-}" = --report ]; then
    report "$2"
    exit
fi
WORK=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$WORK"' EXIT
git clone -q "$REPO" "$WORK/src"
export CARGO_TARGET_DIR=$WORK/target
(cd "$WORK/src" && /usr/bin/time -v -o "$WORK/time-build" cargo build --release --timings)
(cd "$WORK/src" && /usr/bin/time -v -o "$WORK/time-test" cargo test --release --tests --no-run --timings)
uptime
report "$WORK"
