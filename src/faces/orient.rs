//! EXIF orientation as geometry: maps points and boxes found on the displayed (upright)
//! picture back to the stored pixels, and stored points (a stored face's landmarks) forward
//! onto the displayed picture. Owns no pixels and does no I/O; the pixel rotation itself
//! is the image crate's `apply_orientation`, and the tests hold the two in agreement.

use super::Point;
use image::metadata::Orientation;

/// The stored point that `orientation` displays at `p`. `stored` is the stored size
/// `(width, height)`; coordinates are continuous (a pixel's centre is at `i + 0.5`).
pub fn to_stored(orientation: Orientation, stored: (f32, f32), p: Point) -> Point {
    let (sw, sh) = stored;
    let (u, v) = (p.x, p.y);
    let (x, y) = match orientation {
        Orientation::NoTransforms => (u, v),
        Orientation::FlipHorizontal => (sw - u, v),
        Orientation::Rotate180 => (sw - u, sh - v),
        Orientation::FlipVertical => (u, sh - v),
        Orientation::Rotate90FlipH => (v, u), // EXIF 5, transpose
        Orientation::Rotate90 => (v, sh - u), // EXIF 6
        Orientation::Rotate270FlipH => (sw - v, sh - u), // EXIF 7, transverse
        Orientation::Rotate270 => (sw - v, u), // EXIF 8
    };
    Point { x, y }
}

/// Where `orientation` displays the stored point `p`: the inverse of `to_stored`.
pub fn to_shown(orientation: Orientation, stored: (f32, f32), p: Point) -> Point {
    let (sw, sh) = stored;
    let (x, y) = (p.x, p.y);
    let (u, v) = match orientation {
        Orientation::NoTransforms => (x, y),
        Orientation::FlipHorizontal => (sw - x, y),
        Orientation::Rotate180 => (sw - x, sh - y),
        Orientation::FlipVertical => (x, sh - y),
        Orientation::Rotate90FlipH => (y, x),
        Orientation::Rotate90 => (sh - y, x),
        Orientation::Rotate270FlipH => (sh - y, sw - x),
        Orientation::Rotate270 => (y, sw - x),
    };
    Point { x: u, y: v }
}

/// The stored box `(x, y, width, height)` covering the displayed box: both corners mapped,
/// then ordered (a rotation or flip swaps which corner is top-left).
pub fn box_to_stored(
    orientation: Orientation,
    stored: (f32, f32),
    displayed: (f32, f32, f32, f32),
) -> (f32, f32, f32, f32) {
    let (x, y, w, h) = displayed;
    let a = to_stored(orientation, stored, Point { x, y });
    let b = to_stored(orientation, stored, Point { x: x + w, y: y + h });
    let (left, top) = (a.x.min(b.x), a.y.min(b.y));
    (left, top, (a.x - b.x).abs(), (a.y - b.y).abs())
}

/// The displayed box covering the stored box `(x, y, width, height)`: the inverse of
/// `box_to_stored`, both corners mapped by `to_shown`, then ordered.
pub fn box_to_shown(
    orientation: Orientation,
    stored: (f32, f32),
    stored_box: (f32, f32, f32, f32),
) -> (f32, f32, f32, f32) {
    let (x, y, w, h) = stored_box;
    let a = to_shown(orientation, stored, Point { x, y });
    let b = to_shown(orientation, stored, Point { x: x + w, y: y + h });
    let (left, top) = (a.x.min(b.x), a.y.min(b.y));
    (left, top, (a.x - b.x).abs(), (a.y - b.y).abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{DynamicImage, Rgb, RgbImage};

    const ALL: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

    /// Where the single white pixel of `img` is.
    fn white(img: &RgbImage) -> (u32, u32) {
        let found = img.enumerate_pixels().find(|(_, _, p)| p.0 == [255; 3]);
        let (x, y, _) = found.expect("marker pixel");
        (x, y)
    }

    #[test]
    fn every_orientation_maps_a_displayed_pixel_back_to_where_it_is_stored() {
        let (sw, sh) = (7u32, 4u32);
        for exif in ALL {
            let o = Orientation::from_exif(exif).expect("valid");
            for (sx, sy) in [(0, 0), (6, 0), (2, 3), (5, 1)] {
                let mut stored = RgbImage::new(sw, sh);
                stored.put_pixel(sx, sy, Rgb([255; 3]));
                let mut shown = DynamicImage::ImageRgb8(stored);
                shown.apply_orientation(o);
                let (dx, dy) = white(&shown.to_rgb8());
                let centre = Point {
                    x: dx as f32 + 0.5,
                    y: dy as f32 + 0.5,
                };
                let back = to_stored(o, (sw as f32, sh as f32), centre);
                assert_eq!(
                    (back.x, back.y),
                    (sx as f32 + 0.5, sy as f32 + 0.5),
                    "orientation {exif}, stored pixel ({sx},{sy})"
                );
            }
        }
    }

    #[test]
    fn to_shown_undoes_to_stored_in_every_orientation() {
        let stored = (7.0, 4.0);
        for exif in ALL {
            let o = Orientation::from_exif(exif).expect("valid");
            for (x, y) in [(0.5, 0.5), (6.5, 0.5), (2.5, 3.5), (5.25, 1.75)] {
                let p = Point { x, y };
                let back = to_shown(o, stored, to_stored(o, stored, p));
                assert_eq!((back.x, back.y), (x, y), "orientation {exif}");
            }
        }
    }

    #[test]
    fn boxes_come_back_with_positive_size() {
        for exif in ALL {
            let o = Orientation::from_exif(exif).expect("valid");
            let (x, y, w, h) = box_to_stored(o, (100.0, 50.0), (10.0, 5.0, 20.0, 8.0));
            assert!(w > 0.0 && h > 0.0, "orientation {exif}");
            assert!(x >= 0.0 && y >= 0.0, "orientation {exif}");
            let swapped = exif >= 5;
            let expected = if swapped { (8.0, 20.0) } else { (20.0, 8.0) };
            assert_eq!((w, h), expected, "orientation {exif}");
        }
        let (x, y, w, h) =
            box_to_stored(Orientation::Rotate90, (100.0, 50.0), (10.0, 5.0, 20.0, 8.0));
        // Displayed x 10..30 on a 50-wide upright picture is stored y 40..20.
        assert_eq!((x, y, w, h), (5.0, 20.0, 8.0, 20.0));
    }
}
