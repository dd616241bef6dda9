#!/usr/bin/env bash
# The page in a real browser: starts `mediadex serve` on a generated library and drives the
# embedded page with headless Chromium (tests/browser/page.test.mjs, then the viewer's
# tests/browser/viewer.test.mjs, then layout.test.mjs), and a second server on a library of
# real faces (sample-library --faces) for tests/browser/people.test.mjs. Screenshots land in
# target/browser-shots/. Installs Debian's chromium and nodejs when missing (needs root or
# sudo), and playwright-core from the npm registry (tests/browser/package-lock.json).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${BROWSER_TEST_PHOTOS:-2500}"

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if ((${#missing[@]})); then
    echo "browser-test: installing ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

cargo build --release --bin mediadex --example sample-library
WORK="$(mktemp -d)"
SERVER=""
FACES=""
cleanup() {
    [ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    [ -n "$FACES" ] && kill -TERM "$FACES" 2>/dev/null && wait "$FACES" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
target/release/examples/sample-library "$WORK/library" "$COUNT"
target/release/examples/sample-library "$WORK/sparse" 60 --sparse
# The landscapes all look alike (one big Similar group): three near copies of another picture
# make the small group whose Keep the layout test presses.
target/release/examples/sample-library "$WORK/library/Similar" 3 --similar
# A problem for the run list to open: a link out of the library (never followed, no tile).
ln -s / "$WORK/sparse/outside"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# People: the astronaut four times and a rocket, on a server of their own started now, so
# that its face and embedding walks run while the other tests do (people.test.mjs waits for
# the person through the API).
PEOPLE_PHOTOS=4
target/release/examples/sample-library "$WORK/faces" "$PEOPLE_PHOTOS" --faces
FACES_PORT="$(free_port)"
FACES_URL="http://127.0.0.1:$FACES_PORT/"
MEDIADEX_DATA="$WORK/faces-data" MEDIADEX_WATCH=off target/release/mediadex serve \
    --bind "127.0.0.1:$FACES_PORT" --library "$WORK/faces" --no-browser >"$WORK/faces.log" 2>&1 &
FACES=$!
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT/"
MEDIADEX_DATA="$WORK/data" MEDIADEX_WATCH=off target/release/mediadex serve \
    --bind "127.0.0.1:$PORT" --library "$WORK/library" --library "$WORK/sparse" --no-browser \
    >"$WORK/server.log" 2>&1 &
SERVER=$!

# Up, and both libraries indexed (serve requests a scan of every library at start).
for _ in $(seq 600); do
    if [ "$(curl -fsS "${URL}api/scans?limit=2" 2>/dev/null | grep -o '"state":"completed"' | wc -l)" -eq 2 ]; then
        break
    fi
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log"; echo "browser-test: the server died"; exit 1; }
    sleep 0.2
done

# A photo in a trash folder that the index knows nothing of (the trash of an index set aside),
# planted after the start's scans: the Activity view's Check lists it and Repair adopts it.
target/release/examples/sample-library "$WORK/extra" 61 --sparse >/dev/null
STRAY="$(find "$WORK/extra" -name IMG_6060.JPG)"
mkdir -p "$WORK/sparse/.mediadex-trash/999/kept"
cp "$STRAY" "$WORK/sparse/.mediadex-trash/999/kept/stray.jpg"

(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
mkdir -p target/browser-shots
status=0
MEDIADEX_URL="$URL" SHOTS="$PWD/target/browser-shots" node tests/browser/page.test.mjs || status=$?
MEDIADEX_URL="$URL" SHOTS="$PWD/target/browser-shots" node tests/browser/viewer.test.mjs || status=$?
# The layout at 390, 768 and 1440 px, on the same server (after the page test's trash and scan).
MEDIADEX_URL="$URL" SHOTS="$PWD/target/browser-shots" node tests/browser/layout.test.mjs || status=$?
PEOPLE_PHOTOS="$PEOPLE_PHOTOS" MEDIADEX_URL="$FACES_URL" SHOTS="$PWD/target/browser-shots" \
    node tests/browser/people.test.mjs || { status=$?; echo "--- people server log (last 50 lines) ---"; tail -50 "$WORK/faces.log"; }
if [ "$status" -ne 0 ]; then
    echo "--- server log (last 50 lines) ---"; tail -50 "$WORK/server.log"
fi
exit "$status"
