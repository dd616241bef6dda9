#!/usr/bin/env bash
# Extended tier: build the make-corpus library at a small scale and compare media::extract
# with exiftool on every file (tests/it/corpus_metadata.rs). Usage: scripts/corpus-tier.sh [SCALE]
# Needs root (or the tools already installed) for apt-get; PyPI once for the corpus sources.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-${CORPUS_SCALE:-40}}"

# The extended tier needs ../shared (the workplace's corpus builder) and a few Debian tools.
# Where either is unavailable it is skipped loudly, never silently passed: `cargo test` does
# not depend on it.
skip() { echo "corpus-tier: SKIPPED: $*" >&2; exit 0; }

. scripts/corpus-tools.sh
corpus_tools || skip "the corpus tools are unavailable (see above)"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
# With the Extras tier (RAW, sidecars, Takeout, motion and Live Photos, dates in names) when it
# builds; without it, the Extras tests are skipped loudly and the rest still runs.
EXTRAS=1
if ! CORPUS_EXTRAS=1 bash "$SCRIPT" "$WORK/lib" "$SCALE"; then
    echo "corpus-tier: the Extras tier could not be built: its tests are SKIPPED" >&2
    EXTRAS=0
    rm -rf "$WORK/lib"
    bash "$SCRIPT" "$WORK/lib" "$SCALE" || skip "the corpus could not be built (see above)"
fi
echo "corpus-tier: corpus (SCALE=$SCALE, extras $EXTRAS) built in $(( $(date +%s) - start )) s"

MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_metadata:: -- --ignored --nocapture
MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_scan:: -- --ignored --nocapture
MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_walks:: -- --ignored --nocapture
if [ "$EXTRAS" = 1 ]; then
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_sidecars:: -- --ignored --nocapture
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_dates:: -- --ignored --nocapture
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_raw:: -- --ignored --nocapture
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_motion:: -- --ignored --nocapture
    # Similar photos against the Extras' ground truth (xnearN grouped, xscene1 not): ~10 s.
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it similar::the_corpus -- --ignored --nocapture
fi
# The tests that need one of the tools installed above (ignored in a plain `cargo test`).
cargo test --release --test it -- --ignored --exact \
    http::a_video_gets_a_poster_frame_when_ffmpeg_is_on_path \
    motion::an_hevc_live_clip_and_a_motion_photos_mp4_are_converted_to_h264_once \
    content_hash::an_exiftool_metadata_edit_keeps_the_content_hash_and_a_pixel_change_does_not
# The tests' synthetic CR3 as exiftool reads it (no real CR3 is in the corpus).
cargo test --release --test it -- --ignored --exact raw::exiftool_reads_the_builders_cr3_as_mediadex_does
# HEIC and AVIF through heif-dec (libheif-examples, installed above).
cargo test --release --test it -- --ignored --exact \
    thumbs::heic_and_avif_fixtures_get_real_jpeg_thumbnails \
    faces::heic_and_avif_faces_are_found_through_heif_dec
cargo test --release --lib -- --ignored --exact media::heif_dec::tests::heif_dec_decodes_the_fixtures_at_their_display_size
# Faces and people (issue 28 items 6 and 7): recall and false faces on the manifest's counts,
# and the corpus people (Extras/People) clustered as the people they are.
if [ "$EXTRAS" = 1 ]; then
    MEDIADEX_CORPUS="$WORK/lib" cargo test --release --test it corpus_people:: -- --ignored --nocapture
fi
