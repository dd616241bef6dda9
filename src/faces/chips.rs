//! A picture's face chips for the descriptor: the file decoded once as face detection decodes
//! it (`load`), turned upright at full size, each stored face's landmarks carried from stored
//! (or a RAW's frame) coordinates onto the upright picture, and cut out by `align`. Owns only
//! that glue; must not run a model nor touch the database.

use super::load::{self, Decoded};
use super::{DetectedFace, FaceError, Point, align, orient, retina};
use image::{DynamicImage, RgbImage};
use std::io::{BufRead, Seek};
use std::path::Path;

/// One chip per face of `faces` (as detection stored them for this file), in their order;
/// `None` for a face `align::chip` cannot cut (landmarks all one point, or wholly off the
/// picture).
pub fn chips(path: &Path, faces: &[DetectedFace]) -> Result<Vec<Option<RgbImage>>, FaceError> {
    retina::guarded(|| Ok(chips_of(load::open(path)?, faces)))
}

/// `chips`, for a picture held by any reader.
pub fn chips_reader<R: BufRead + Seek>(
    reader: R,
    faces: &[DetectedFace],
) -> Result<Vec<Option<RgbImage>>, FaceError> {
    retina::guarded(|| Ok(chips_of(load::read(reader)?, faces)))
}

fn chips_of(decoded: Decoded, faces: &[DetectedFace]) -> Vec<Option<RgbImage>> {
    let Decoded {
        rgb,
        orientation,
        frame,
    } = decoded;
    let (sw, sh) = rgb.dimensions();
    let stored = (sw as f32, sh as f32);
    // A RAW's faces are in its raw frame; these pixels are its smaller preview.
    let (kx, ky) = frame.map_or((1.0, 1.0), |(fw, fh)| {
        (sw as f32 / fw as f32, sh as f32 / fh as f32)
    });
    let mut upright = DynamicImage::ImageRgb8(rgb);
    upright.apply_orientation(orientation);
    let upright = upright.into_rgb8();
    faces
        .iter()
        .map(|face| {
            let shown = face.landmarks.map(|p| {
                let p = Point {
                    x: p.x * kx,
                    y: p.y * ky,
                };
                orient::to_shown(orientation, stored, p)
            });
            align::chip(&upright, &shown)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faces::align::{Similarity, template};
    use image::Rgb;
    use image::metadata::Orientation;

    /// A grey picture, upright 300x200, with a red 5x5 dot at the upright point `(x, y)`,
    /// stored as `orientation` needs it.
    fn stored_with_dot(orientation: Orientation, x: u32, y: u32) -> RgbImage {
        let mut img = RgbImage::from_pixel(300, 200, Rgb([128; 3]));
        for dy in 0..5 {
            for dx in 0..5 {
                img.put_pixel(x + dx - 2, y + dy - 2, Rgb([255, 0, 0]));
            }
        }
        let inverse = match orientation {
            Orientation::Rotate90 => Orientation::Rotate270,
            Orientation::Rotate270 => Orientation::Rotate90,
            other => other,
        };
        let mut stored = DynamicImage::ImageRgb8(img);
        stored.apply_orientation(inverse);
        stored.into_rgb8()
    }

    #[test]
    fn landmarks_in_stored_or_raw_frame_coordinates_land_on_the_upright_picture() {
        // A face 1.2 px per chip px, its nose tip at the dot (upright (120, 90)).
        let nose = template()[2];
        let fit = Similarity {
            a: 1.2,
            b: 0.0,
            tx: 120.5 - 1.2 * f64::from(nose.x),
            ty: 90.5 - 1.2 * f64::from(nose.y),
        };
        let upright: [Point; 5] = template().map(|p| fit.apply(p));
        for (o, frame_scale) in [
            (Orientation::Rotate90, 1.0),
            (Orientation::Rotate270FlipH, 1.0),
            (Orientation::Rotate180, 4.0),
        ] {
            let rgb = stored_with_dot(o, 120, 90);
            let (sw, sh) = rgb.dimensions();
            // The face as stored: in stored pixels, times the frame's scale for a RAW.
            let landmarks = upright.map(|p| {
                let s = orient::to_stored(o, (sw as f32, sh as f32), p);
                Point {
                    x: s.x * frame_scale,
                    y: s.y * frame_scale,
                }
            });
            let frame_size = (
                (sw as f32 * frame_scale) as u32,
                (sh as f32 * frame_scale) as u32,
            );
            let frame = (frame_scale != 1.0).then_some(frame_size);
            let face = DetectedFace {
                x: 0.0,
                y: 0.0,
                width: 1.0,
                height: 1.0,
                score: 1.0,
                landmarks,
            };
            let decoded = Decoded {
                rgb,
                orientation: o,
                frame,
            };
            let chips = chips_of(decoded, &[face]);
            let chip = chips[0].as_ref().expect("a chip");
            let px = chip.get_pixel(nose.x as u32, nose.y as u32).0;
            assert!(px[0] > 200 && px[1] < 60, "{o:?} x{frame_scale}: {px:?}");
        }
    }
}
