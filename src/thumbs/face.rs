//! A face's crop, for the People view's cards: cut from its picture's preview (already
//! upright and decoded by whatever the preview needed: HEIF, RAW, EXIF orientation), the box
//! turned as the preview was, widened by a margin to a square, shrunk to `FACE_SIZE` and
//! cached beside the thumbnails as `<checksum>-face<id>-v<FACE_VERSION>.jpg` (named after the
//! checksum, so the sweep's `forget` takes it with its asset's other pictures; a face id is
//! never reused for another box, so a cached crop never goes stale). Knows nothing of the
//! store or of HTTP: the caller hands it the box and the preview's bytes.

use super::{Thumb, Thumbs, jpeg};
use crate::model::FaceBox;
use image::metadata::Orientation;
use std::path::PathBuf;

/// The side of a face crop, in pixels: a card at twice its CSS size on a phone.
pub const FACE_SIZE: u32 = 256;

/// Bumped when a crop is cut another way, so old ones are not served under new tags.
pub const FACE_VERSION: u32 = 1;

/// Around the box, on each side, this fraction of its longer side: hair, chin and ears show,
/// as the face lists of other photo managers show them.
const MARGIN: f32 = 0.35;

/// The picture a box was found in: its stored size and the EXIF orientation still to apply
/// (`media::turn`), which the preview has applied.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub orientation: Option<u16>,
}

impl Thumbs {
    /// Where face `face_id`'s crop of the picture `checksum_hex` is cached.
    pub fn face_path(&self, checksum_hex: &str, face_id: i64) -> PathBuf {
        let shard = checksum_hex.get(..2).unwrap_or("00");
        let name = format!("{checksum_hex}-face{face_id}-v{FACE_VERSION}.jpg");
        self.dir.join(shard).join(name)
    }

    /// The cached crop of that face, if one was cut before.
    pub fn face_cached(&self, checksum_hex: &str, face_id: i64) -> Option<Thumb> {
        let path = self.face_path(checksum_hex, face_id);
        let bytes = std::fs::read(&path).ok()?;
        if self.cap.is_some() {
            super::cap::touch(&path);
        }
        Some(jpeg(bytes))
    }

    /// Cuts `face` out of `preview` (the JPEG of its picture, upright) and caches the crop;
    /// `None` when the preview does not decode or the box misses it.
    pub fn face_crop(
        &self,
        checksum_hex: &str,
        face: &FaceBox,
        stored: Stored,
        preview: &[u8],
    ) -> Option<Thumb> {
        let img = image::load_from_memory(preview).ok()?;
        let (x, y, side) = square(face, stored, (img.width(), img.height()))?;
        let mut crop = img.crop_imm(x, y, side, side);
        // Never enlarged, as thumbnails are not: the browser scales a small face as well.
        if side > FACE_SIZE {
            crop = crop.thumbnail(FACE_SIZE, FACE_SIZE);
        }
        let bytes = super::encode(&crop)?;
        self.write_cache(self.face_path(checksum_hex, face.face_id), &bytes);
        Some(jpeg(bytes))
    }
}

/// A box in stored pixels as the upright picture shows it (`faces::box_to_shown`, the
/// geometry the face walk maps its landmarks by), with the upright picture's size.
fn upright(f: &FaceBox, (sw, sh): (f32, f32), o: u16) -> ([f32; 4], (f32, f32)) {
    let orientation = u8::try_from(o)
        .ok()
        .and_then(Orientation::from_exif)
        .unwrap_or(Orientation::NoTransforms);
    let (x, y, w, h) = crate::faces::box_to_shown(orientation, (sw, sh), (f.x, f.y, f.w, f.h));
    let size = if matches!(o, 5..=8) {
        (sh, sw)
    } else {
        (sw, sh)
    };
    ([x, y, w, h], size)
}

/// The square of the preview (`pw` × `ph`) to cut: the box, turned and scaled to the
/// preview, widened by the margin, moved inside the picture and no larger than it. `None`
/// for a box outside the picture or of no size.
fn square(f: &FaceBox, stored: Stored, (pw, ph): (u32, u32)) -> Option<(u32, u32, u32)> {
    let (pwf, phf) = (pw as f32, ph as f32);
    // Without a stored size the box is taken as in the preview's own pixels.
    let size = stored.width.zip(stored.height);
    let size = size.map_or((pwf, phf), |(w, h)| (w as f32, h as f32));
    let ([x, y, w, h], (uw, uh)) = upright(f, size, stored.orientation.unwrap_or(1));
    let (sx, sy) = (pwf / uw, phf / uh);
    let (cx, cy) = ((x + w / 2.0) * sx, (y + h / 2.0) * sy);
    let long = (w * sx).max(h * sy);
    let inside = (0.0..pwf).contains(&cx) && (0.0..phf).contains(&cy);
    if !inside || !long.is_finite() || long < 1.0 {
        return None;
    }
    let side = (long * (1.0 + 2.0 * MARGIN)).min(pwf).min(phf).max(1.0);
    let left = (cx - side / 2.0).clamp(0.0, pwf - side);
    let top = (cy - side / 2.0).clamp(0.0, phf - side);
    // Truncation keeps the square inside: left + side <= pw.
    Some((left as u32, top as u32, side as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn face(x: f32, y: f32, w: f32, h: f32) -> FaceBox {
        FaceBox {
            face_id: 1,
            asset_id: 1,
            x,
            y,
            w,
            h,
        }
    }

    fn stored(w: u32, h: u32, o: u16) -> Stored {
        Stored {
            width: Some(w),
            height: Some(h),
            orientation: Some(o),
        }
    }

    #[test]
    fn the_square_is_the_box_with_its_margin_scaled_to_the_preview() {
        // A 100 px box centred at (500, 300) of a 2000 × 1000 picture, previewed at half size.
        let got = square(
            &face(450.0, 250.0, 100.0, 100.0),
            stored(2000, 1000, 1),
            (1000, 500),
        );
        assert_eq!(got, Some((207, 107, 85)));
    }

    #[test]
    fn a_turned_picture_has_its_box_turned_as_its_preview_is() {
        // Orientation 6 (90° clockwise): a box at the stored top left is at the top right.
        let got = square(
            &face(0.0, 0.0, 100.0, 100.0),
            stored(400, 200, 6),
            (200, 400),
        );
        assert_eq!(got, Some((30, 0, 170)));
    }

    #[test]
    fn a_box_at_the_edge_is_moved_inside_and_one_outside_gives_nothing() {
        let edge = square(
            &face(0.0, 0.0, 100.0, 100.0),
            stored(200, 200, 1),
            (200, 200),
        );
        assert_eq!(edge, Some((0, 0, 170)));
        let big = square(
            &face(0.0, 0.0, 200.0, 200.0),
            stored(200, 200, 1),
            (200, 200),
        );
        assert_eq!(big, Some((0, 0, 200)));
        let outside = square(
            &face(500.0, 0.0, 10.0, 10.0),
            stored(200, 200, 1),
            (200, 200),
        );
        assert_eq!(outside, None);
    }
}
