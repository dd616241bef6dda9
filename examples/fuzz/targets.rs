//! The fuzz targets, one per parser of `src/media/` and the HTTP Range parser, and the
//! bounds every input must keep: a panic, a broken invariant, more than the time limit or
//! more than the memory limit is a finding. Shared by the driver (`main.rs`) and by the
//! regression test over `tests/fixtures/fuzz/<target>/` (tests/it/media_extract.rs includes
//! this file by path), so a saved finding is replayed through exactly what found it.

use mediadex::http::range::{self, Plan};
use mediadex::media::{self, content_hash, fuzz, motion, sidecar, takeout};
use mediadex::model::{MediaFacts, TakenAtSource};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One input over this long is a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);
/// One input allocating more than this (net, on its thread) is a blow-up.
pub const MEMORY_LIMIT: usize = 256 << 20;

pub struct Target {
    pub name: &'static str,
    /// Whether a seed file of this sniffed MIME type ("" for none) feeds the target.
    pub wants: fn(&str) -> bool,
    /// One input (and the MIME type of the seed it came from); `Err` is a broken invariant.
    pub run: fn(&[u8], &str) -> Result<(), String>,
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "sniff",
        wants: any,
        run: sniff,
    },
    Target {
        name: "essence",
        wants: any,
        run: essence,
    },
    Target {
        name: "read_size",
        wants: image,
        run: read_size,
    },
    Target {
        name: "jpeg_end_check",
        wants: jpeg,
        run: jpeg_end_check,
    },
    Target {
        name: "read_exif",
        wants: image,
        run: read_exif,
    },
    Target {
        name: "xmp",
        wants: xmp_carrier,
        run: xmp,
    },
    Target {
        name: "xmp_text",
        wants: text,
        run: xmp_text,
    },
    Target {
        name: "sidecar",
        wants: text,
        run: sidecar,
    },
    Target {
        name: "takeout",
        wants: text,
        run: takeout,
    },
    Target {
        name: "motion_photo",
        wants: jpeg,
        run: motion_photo,
    },
    Target {
        name: "maker_note",
        wants: any,
        run: maker_note,
    },
    Target {
        name: "video_track",
        wants: video,
        run: video_track,
    },
    Target {
        name: "read_track",
        wants: video,
        run: read_track,
    },
    Target {
        name: "extract",
        wants: any,
        run: extract,
    },
    Target {
        name: "raw_picture",
        wants: camera_raw,
        run: raw_picture,
    },
    Target {
        name: "filename_date",
        // Its seeds are file names (the driver's `name_seeds`), not files.
        wants: none,
        run: filename_date,
    },
    Target {
        name: "range",
        wants: none,
        run: range,
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn any(_: &str) -> bool {
    true
}
fn none(_: &str) -> bool {
    false
}
fn image(mime: &str) -> bool {
    mime.starts_with("image/")
}
fn jpeg(mime: &str) -> bool {
    mime == "image/jpeg"
}
fn video(mime: &str) -> bool {
    // HEIF/AVIF are ISO-BMFF too: the box walker must survive them.
    mime.starts_with("video/") || matches!(mime, "image/heic" | "image/heif" | "image/avif")
}
fn camera_raw(mime: &str) -> bool {
    media::raw::RAW_MIMES.contains(&mime)
}
fn xmp_carrier(mime: &str) -> bool {
    matches!(
        mime,
        "image/jpeg" | "image/png" | "image/heic" | "image/heif" | "image/avif"
    )
}
fn text(mime: &str) -> bool {
    matches!(mime, "" | "text/xml" | "application/xml")
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

fn sniff(bytes: &[u8], _: &str) -> Result<(), String> {
    let (kind, mime) = media::sniff(&bytes[..bytes.len().min(media::HEAD_LEN)]);
    check(kind.is_some() != bytes.is_empty(), || {
        format!("kind {kind:?} (mime {mime:?}) for {} bytes", bytes.len())
    })
}

/// The kept ranges are what the content hash reads: in order, disjoint, inside the file.
fn essence(bytes: &[u8], _: &str) -> Result<(), String> {
    if let Some(ranges) = content_hash::essence(bytes) {
        let mut at = 0;
        for r in &ranges {
            check(
                r.start >= at && r.start < r.end && r.end <= bytes.len(),
                || format!("essence range {r:?} after {at} in {} bytes", bytes.len()),
            )?;
            at = r.end;
        }
    }
    content_hash::hashes(bytes);
    Ok(())
}

fn read_size(bytes: &[u8], _: &str) -> Result<(), String> {
    match fuzz::read_size(bytes) {
        Ok((w, h)) => check(w > 0 && h > 0, || format!("size {w}x{h} accepted")),
        Err(_) => Ok(()),
    }
}

fn jpeg_end_check(bytes: &[u8], _: &str) -> Result<(), String> {
    let (reader, in_memory) = fuzz::jpeg_end_check(bytes);
    check(reader.is_ok() == in_memory.is_ok(), || {
        format!("end check: reader {reader:?}, in memory {in_memory:?}")
    })
}

fn read_exif(bytes: &[u8], mime: &str) -> Result<(), String> {
    facts_hold(&fuzz::read_exif(bytes, mime).0)
}

fn xmp(bytes: &[u8], mime: &str) -> Result<(), String> {
    facts_hold(&fuzz::xmp_packet(bytes, mime))
}

/// The packet's text reader on its own (the packets of the files are its seeds).
fn xmp_text(bytes: &[u8], _: &str) -> Result<(), String> {
    facts_hold(&fuzz::xmp_text(bytes))
}

/// An XMP sidecar (issue 15): its facts keep the model's domains, a rating of -1..=5, and
/// tags that are text, each once.
fn sidecar(bytes: &[u8], _: &str) -> Result<(), String> {
    let Ok(f) = sidecar::parse(bytes) else {
        return Ok(());
    };
    // A sidecar's date is a sidecar date: the source the date chain will give it.
    let as_facts = MediaFacts {
        taken_local: f.taken_local.clone(),
        taken_offset_minutes: f.taken_offset_minutes,
        taken_at_source: f.taken_local.as_ref().map(|_| TakenAtSource::Sidecar),
        lat: f.lat,
        lon: f.lon,
        ..MediaFacts::default()
    };
    facts_hold(&as_facts)?;
    let tags_once = f
        .tags
        .iter()
        .enumerate()
        .all(|(i, t)| !f.tags[..i].contains(t));
    let texts = [f.title.as_deref(), f.description.as_deref()];
    check(
        f.rating.is_none_or(|r| (-1..=5).contains(&r))
            && tags_once
            && f.tags
                .iter()
                .map(String::as_str)
                .chain(texts.into_iter().flatten())
                .all(|t| !t.trim().is_empty()),
        || format!("sidecar facts out of their domain: {f:?}"),
    )
}

/// A Takeout JSON (issue 15): a time chrono can show, a place on the globe and never
/// Takeout's 0/0, and no empty text.
fn takeout(bytes: &[u8], _: &str) -> Result<(), String> {
    let Ok(f) = takeout::parse(bytes) else {
        return Ok(());
    };
    let place_ok = match (f.lat, f.lon) {
        (Some(lat), Some(lon)) => {
            lat.abs() <= 90.0 && lon.abs() <= 180.0 && (lat, lon) != (0.0, 0.0)
        }
        (None, None) => true,
        _ => false,
    };
    let texts = [f.title.as_deref(), f.description.as_deref()];
    check(
        f.taken_utc
            .is_none_or(|s| chrono::DateTime::from_timestamp(s, 0).is_some())
            && place_ok
            && texts.into_iter().flatten().all(|t| !t.is_empty()),
        || format!("takeout facts out of their domain: {f:?}"),
    )
}

/// A motion photo's trailer (issue 15): a video it finds is the file's tail and starts with
/// an `ftyp` box.
fn motion_photo(bytes: &[u8], mime: &str) -> Result<(), String> {
    let facts = fuzz::xmp_packet(bytes, mime);
    facts_hold(&facts)?;
    let Some(v) = facts.embedded_video else {
        return Ok(());
    };
    let at = usize::try_from(v.offset).unwrap_or(usize::MAX);
    check(
        v.offset.checked_add(v.length) == Some(bytes.len() as u64)
            && bytes.get(at.saturating_add(4)..at.saturating_add(8)) == Some(&b"ftyp"[..]),
        || format!("embedded video {v:?} in {} bytes", bytes.len()),
    )
}

/// An Apple MakerNote, the input taken as its bytes (seeds get the Apple header put in
/// front): an identifier it gives has the stored shape.
fn maker_note(bytes: &[u8], _: &str) -> Result<(), String> {
    let note = [&b"Apple iOS\0\0\x01MM"[..], bytes].concat();
    for input in [bytes, &note[..]] {
        let id = motion::apple_content_identifier(input);
        check(id.as_deref().is_none_or(identifier_shape), || {
            format!("identifier {id:?}")
        })?;
    }
    Ok(())
}

fn identifier_shape(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_graphic())
}

fn video_track(bytes: &[u8], _: &str) -> Result<(), String> {
    let rotation = fuzz::video_track(bytes).map_or(0, |(_, r)| r);
    check(rotation.is_multiple_of(90) && rotation < 360, || {
        format!("rotation {rotation}")
    })
}

fn read_track(bytes: &[u8], _: &str) -> Result<(), String> {
    facts_hold(&fuzz::read_track(bytes).0)
}

/// A camera RAW's picture (issue 15), which thumbnails and faces read outside `extract`'s
/// catch: a preview is a JPEG's bytes, and binned raw data is bounded and whole. A CR3 seed
/// (tests/fixtures/tiny.cr3) takes `geometry` and `picture` through its boxes (`cr3`).
fn raw_picture(bytes: &[u8], mime: &str) -> Result<(), String> {
    let mut reader = std::io::Cursor::new(bytes);
    let _ = media::raw::geometry(&mut reader);
    match media::raw::picture(&mut reader, mime) {
        Ok(media::raw::Picture::Jpeg(jpeg)) => check(jpeg.starts_with(&[0xFF, 0xD8]), || {
            "a preview that is no JPEG".into()
        }),
        Ok(media::raw::Picture::Rgb {
            width,
            height,
            pixels,
        }) => check(
            width <= media::raw::BIN_SIDE
                && height <= media::raw::BIN_SIDE
                && pixels.len() == width as usize * height as usize * 3,
            || format!("binned {width}x{height} with {} bytes", pixels.len()),
        ),
        Err(_) => Ok(()),
    }
}

/// `extract_from` catches a parser's panic (its last line of defence): here that is a
/// finding, since the module promises never to panic on what it reads.
fn extract(bytes: &[u8], mime: &str) -> Result<(), String> {
    let name = format!("fuzz.{}", mime.rsplit('/').next().unwrap_or("bin"));
    let facts = media::extract_from(Path::new(&name), Some(bytes));
    let error = facts.error.clone().unwrap_or_default();
    check(!error.contains("parser panicked"), || error.clone())?;
    facts_hold(&facts)
}

/// What the model promises of any facts, whatever the file: sizes above zero, the
/// displayed size a transposition at most, an orientation of the eight, coordinates on
/// the globe, a positive duration, and a capture time of the documented shape.
fn facts_hold(f: &MediaFacts) -> Result<(), String> {
    let size = (f.width, f.height);
    let shown = (f.display_width, f.display_height);
    let swapped = (f.height, f.width);
    let checks = [
        (f.width != Some(0) && f.height != Some(0), "a zero size"),
        (
            shown.0.is_none() || shown == size || shown == swapped,
            "a display size",
        ),
        (
            f.orientation.is_none_or(|o| (1..=8).contains(&o)),
            "an orientation",
        ),
        (f.lat.is_none_or(|l| l.abs() <= 90.0), "a latitude"),
        (f.lon.is_none_or(|l| l.abs() <= 180.0), "a longitude"),
        (f.duration_ms.is_none_or(|d| d > 0), "a duration"),
        (
            f.taken_local.as_deref().is_none_or(time_shape),
            "a capture time",
        ),
        (
            f.taken_local.is_some() == f.taken_at_source.is_some(),
            "a capture time's source",
        ),
        (
            f.taken_offset_minutes.is_none_or(|m| m.abs() < 24 * 60),
            "an offset",
        ),
        (
            f.content_identifier.as_deref().is_none_or(identifier_shape),
            "a content identifier",
        ),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, what)) => Err(format!("{what} out of its domain: {f:?}")),
        None => Ok(()),
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]`, the documented shape of a capture time.
fn time_shape(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 19
        && b.iter().enumerate().take(19).all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
        && (b.len() == 19 || (b[19] == b'.' && b[20..].iter().all(u8::is_ascii_digit)))
}

/// The file-name date parser, the input read as a name: a date it gives has the shape of a
/// capture time and a year the parser accepts.
fn filename_date(bytes: &[u8], _: &str) -> Result<(), String> {
    let name = String::from_utf8_lossy(bytes);
    let Some(date) = media::filename_date::date_in_name(&name) else {
        return Ok(());
    };
    let year: i32 = date.get(..4).and_then(|y| y.parse().ok()).unwrap_or(0);
    check(time_shape(&date) && (1971..=2099).contains(&year), || {
        format!("name {name:?} gave {date:?}")
    })
}

/// The input is the file length (8 bytes, little-endian) and then the header's value.
fn range(bytes: &[u8], _: &str) -> Result<(), String> {
    let (len, value) = range_input(bytes);
    let plan = range::parse(&value, len);
    check(
        match plan {
            Plan::Part { start, end } => start <= end && end < len,
            Plan::Full => true,
            Plan::Unsatisfiable => true,
        },
        || format!("{value:?} on {len} bytes planned {plan:?}"),
    )
}

pub fn range_input(bytes: &[u8]) -> (u64, String) {
    let mut len = [0u8; 8];
    let head = bytes.len().min(8);
    len[..head].copy_from_slice(&bytes[..head]);
    let value = String::from_utf8_lossy(bytes.get(8..).unwrap_or_default()).into_owned();
    (u64::from_le_bytes(len), value)
}

/// The size of the allocation that broke the memory limit (0 while none has).
pub static BLOWN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Net bytes allocated on this thread since `limit_memory`, and its limit (0: none).
    static USED: Cell<usize> = const { Cell::new(0) };
    static LIMIT: Cell<usize> = const { Cell::new(0) };
}

/// Counts what the current thread allocates from here on, up to `limit` (0: stop counting).
pub fn limit_memory(limit: usize) {
    USED.set(0);
    LIMIT.set(limit);
}

/// The global allocator of the driver and of the regression test: the system's, counting
/// each thread's net allocations. A thread going over its limit is parked for good inside
/// the allocator (returning null would abort the whole process; unwinding from an allocator
/// is undefined), and `BLOWN` tells the watchdog, which saves the input.
pub struct Counting;

fn charge(size: usize) {
    let limit = LIMIT.try_with(Cell::get).unwrap_or(0);
    if limit == 0 {
        return;
    }
    let used = USED.get().saturating_add(size);
    if used > limit {
        BLOWN.store(size.max(1), Ordering::SeqCst);
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    USED.set(used);
}

fn refund(size: usize) {
    let _ = USED.try_with(|u| u.set(u.get().saturating_sub(size)));
}

// SAFETY: every call is passed to `System` unchanged; only the bookkeeping is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        refund(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            charge(new_size - layout.size());
        } else {
            refund(layout.size() - new_size);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
