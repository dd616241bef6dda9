#!/usr/bin/env bash
# A labelled set of faces for the people rule (issue 28 item 7), made from pictures that
# registry packages ship with known identities; nothing of it is committed (see the
# licences below). Usage: scripts/people-set.sh OUTDIR [CORPUS_LIB]
#
# Writes OUTDIR/labels.tsv (`path<TAB>person[<TAB>x<TAB>y]`, paths relative to OUTDIR, the
# point picking one face of several in displayed pixels) beside the pictures, for
# `cargo run --release --example people_eval OUTDIR/labels.tsv`. CORPUS_LIB is a make-corpus
# library built with CORPUS_EXTRAS=1; without it one is built (SCALE 20) in OUTDIR/corpus.
#
# Sources (each pinned by version and sha256; fetched once with `pip download`, cached in
# ${PEOPLE_CACHE:-$HOME/.cache/media-corpus/people-v1}):
# - the make-corpus library (../shared/corpus): scikit-image's astronaut (NASA, public domain)
#   and cameraman, ultralytics' zidane.jpg and bus.jpg (AGPL package: never committed), as
#   its README and manifest (role `person`) name them;
# - PyPI face_recognition==1.3.0 sdist (MIT), tests/test_images/: White House photographs of
#   Barack Obama (obama.jpg, obama2.jpg, obama3.jpg and two crops of obama.jpg) and of Joe
#   Biden (biden.jpg), official US government photographs (public domain);
# - PyPI insightface==2.1 sdist (code MIT; its sample pictures carry no licence of their
#   own, so they are used here and never committed): Tom_Hanks_54745.png, one face of a
#   person no other picture shows.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: scripts/people-set.sh OUTDIR [CORPUS_LIB]}"
LIB="${2:-}"
CACHE="${PEOPLE_CACHE:-$HOME/.cache/media-corpus/people-v1}"
mkdir -p "$OUT" "$CACHE"

fetch() { # name==version sha256 file
    local spec="$1" sum="$2" file="$3"
    if [ ! -f "$CACHE/$file" ]; then
        pip download --quiet --no-deps --no-binary :all: -d "$CACHE" "$spec"
    fi
    echo "$sum  $CACHE/$file" | sha256sum --check --quiet
}
fetch face_recognition==1.3.0 \
    5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec face_recognition-1.3.0.tar.gz
fetch insightface==2.1 \
    776cbd36b70f5f2ae1a026101cfb80387f0b2280a0dbaf073f8d3ed69f554e01 insightface-2.1.tar.gz

if [ -z "$LIB" ]; then
    . scripts/corpus-tools.sh
    corpus_tools
    LIB="$OUT/corpus/lib"
    [ -d "$LIB" ] || CORPUS_EXTRAS=1 bash "$SCRIPT" "$LIB" 20
fi
[ -d "$LIB/Extras/People" ] || { echo "$LIB has no Extras/People: build it with CORPUS_EXTRAS=1" >&2; exit 1; }

mkdir -p "$OUT/packages"
tar -xzf "$CACHE/face_recognition-1.3.0.tar.gz" -C "$OUT/packages" \
    face_recognition-1.3.0/tests/test_images
tar -xzf "$CACHE/insightface-2.1.tar.gz" -C "$OUT/packages" \
    insightface-2.1/insightface/data/images/Tom_Hanks_54745.png
ln -sfn "$(cd "$LIB" && pwd)" "$OUT/lib"

FR=packages/face_recognition-1.3.0/tests/test_images
P=lib/Albums/People
X=lib/Extras/People
{
    echo "# path	person	[x	y]: issue 28 item 7's labelled set (scripts/people-set.sh)"
    for f in astronaut_1600.jpg astronaut_512.jpg astronaut_192.jpg astronaut_face_crop.jpg \
        astronaut_gray.png astronaut_rotated.jpg astronaut_384.avif; do
        printf '%s\tastronaut\n' "$P/$f"
    done
    for f in astronaut_tilted.jpg astronaut_mirrored.jpg astronaut_wide.jpg; do
        printf '%s\tastronaut\n' "$X/$f"
    done
    for f in zidane_left.jpg zidane_left_face.jpg; do printf '%s\tzidane_left\n' "$X/$f"; done
    for f in zidane_right.jpg zidane_right_face.jpg; do printf '%s\tzidane_right\n' "$X/$f"; done
    # zidane.jpg (1280x720) and its copies at 25% and 50%: the two men's face centres.
    printf '%s\tzidane_left\t603\t347\n%s\tzidane_right\t984\t186\n' "$P/zidane.jpg" "$P/zidane.jpg"
    printf '%s\tzidane_left\t151\t87\n%s\tzidane_right\t246\t47\n' "$P/zidane_320.jpg" "$P/zidane_320.jpg"
    printf '%s\tzidane_left\t301\t173\n%s\tzidane_right\t492\t93\n' "$P/zidane_640.webp" "$P/zidane_640.webp"
    # bus.jpg (810x1080) and its half-size HEIC: the two sunglassed passengers.
    printf '%s\tbus_left\t134\t443\n%s\tbus_right\t287\t448\n' "$P/bus.jpg" "$P/bus.jpg"
    printf '%s\tbus_left\t67\t221\n%s\tbus_right\t143\t224\n' "$P/bus_half.heic" "$P/bus_half.heic"
    # The collage: astronaut, zidane.jpg and bus.jpg side by side at 512 px high.
    printf '%s\tastronaut\t226\t120\n' "$P/group_collage.jpg"
    printf '%s\tzidane_left\t941\t246\n%s\tzidane_right\t1212\t132\n' "$P/group_collage.jpg" "$P/group_collage.jpg"
    printf '%s\tbus_left\t1485\t210\n%s\tbus_right\t1558\t212\n' "$P/group_collage.jpg" "$P/group_collage.jpg"
    printf '%s\tcameraman\n%s\tcameraman\n' "$P/cameraman.png" lib/Exports/camera_progressive_gray.jpg
    for f in obama.jpg obama2.jpg obama3.jpg obama_partial_face.jpg obama_partial_face2.jpg; do
        printf '%s\tobama\n' "$FR/$f"
    done
    printf '%s\tbiden\n' "$FR/biden.jpg"
    printf '%s\ttom_hanks\n' packages/insightface-2.1/insightface/data/images/Tom_Hanks_54745.png
} >"$OUT/labels.tsv"
echo "people-set: $(grep -vc '^#' "$OUT/labels.tsv") labelled faces in $OUT/labels.tsv"
