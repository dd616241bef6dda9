//! Face alignment for the descriptor: RetinaFace's five landmarks on the upright picture →
//! dlib's 150x150 chip, by the least-squares similarity transform (rotation, one scale,
//! translation) that takes the chip's template points onto the landmarks, sampled bilinearly.
//! Owns the template and the sampling; must not decode files, orient pictures (the caller
//! hands the upright picture and landmarks in its coordinates) nor run a model.
//!
//! The template is dlib's own: `get_face_chip_details(shape, 150, 0.25)` (dlib's
//! image_transforms/interpolation.h), which the descriptor was trained on, maps its mean face
//! (coordinates 0..1 over the face) into the chip as `(0.25 + p) / 1.5 * 150`. RetinaFace
//! finds eye centres, the nose tip and the mouth corners, so the template takes those from
//! dlib's 68-point mean face: each eye the mean of its six contour points (36-41, 42-47), the
//! nose tip (30) and the mouth corners (48, 54). Like dlib's `extract_image_chip`, a face much
//! larger than the chip is first shrunk by halves, so that bilinear sampling never skips
//! pixels.

use super::Point;
use image::imageops::FilterType;
use image::{DynamicImage, Rgb, RgbImage};

/// The chip's side, in pixels: dlib's `input_rgb_image_sized<150>`.
pub const CHIP_SIDE: u32 = 150;

/// dlib's padding around the mean face (`get_face_chip_details(.., 0.25)`, as
/// dnn_face_recognition_ex.cpp).
pub const PADDING: f64 = 0.25;

/// dlib's 68-point mean face (x, y over the face, 0..1) at RetinaFace's landmarks, in
/// RetinaFace's order: the subject's right eye (left in the picture), left eye, nose tip,
/// right and left mouth corners.
const MEAN_FACE: [[f64; 2]; 5] = [
    // mean of points 36-41: x 0.121737 0.187122 0.265825 0.334606 0.260918 0.182743,
    // y 0.216423 0.178758 0.179852 0.231733 0.245099 0.244077
    [0.225_491_833, 0.215_990_333],
    // mean of points 42-47: x 0.645647 0.714428 0.793132 0.858516 0.79751 0.719335,
    // y as the other eye's, mirrored
    [0.754_761_333, 0.215_990_333],
    [0.490_127, 0.515_625],
    [0.254_149, 0.780_233],
    [0.726_104, 0.780_233],
];

/// How much each landmark counts in the fit. dlib's own pipeline aligns on four eye corners
/// and the base of the nose, never the mouth, whose corners move with the expression (a
/// smile puts them 11 px off the mean face in the astronaut's chip, while her eyes and nose
/// are within 2 px): the eyes count as dlib's two corners each, the nose tip once, the mouth
/// corners a little, so that a mis-placed eye cannot turn the chip alone.
const WEIGHTS: [f64; 5] = [2.0, 2.0, 1.0, MOUTH_WEIGHT, MOUTH_WEIGHT];
const MOUTH_WEIGHT: f64 = 0.25;

/// The template: where each landmark lands in the chip (continuous coordinates, a pixel's
/// centre at `i + 0.5`; dlib's integer pixel centres are half a pixel up and left).
pub fn template() -> [Point; 5] {
    let side = f64::from(CHIP_SIDE);
    MEAN_FACE.map(|[x, y]| Point {
        x: ((PADDING + x) / (2.0 * PADDING + 1.0) * side + 0.5) as f32,
        y: ((PADDING + y) / (2.0 * PADDING + 1.0) * side + 0.5) as f32,
    })
}

/// `p ↦ [a -b; b a] p + t`: a rotation by `atan2(b, a)`, a scale `hypot(a, b)`, a shift.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Similarity {
    pub a: f64,
    pub b: f64,
    pub tx: f64,
    pub ty: f64,
}

impl Similarity {
    /// The least-squares similarity taking each `from[i]` nearest to `to[i]` (the closed form
    /// of Umeyama's method for 2-D without reflection). `None` when `from` has no extent or
    /// the lists differ in length.
    pub fn fit(from: &[Point], to: &[Point]) -> Option<Similarity> {
        Self::fit_weighted(from, to, &vec![1.0; from.len()])
    }

    /// `fit`, each pair's squared error counted `weights[i]` times.
    pub fn fit_weighted(from: &[Point], to: &[Point], weights: &[f64]) -> Option<Similarity> {
        let total: f64 = weights.iter().sum();
        if from.len() != to.len() || from.len() != weights.len() || total <= 0.0 {
            return None;
        }
        let mean = |ps: &[Point]| {
            let (sx, sy) = ps.iter().zip(weights).fold((0.0, 0.0), |(x, y), (p, w)| {
                (x + w * f64::from(p.x), y + w * f64::from(p.y))
            });
            (sx / total, sy / total)
        };
        let ((fx, fy), (gx, gy)) = (mean(from), mean(to));
        let (mut dot, mut cross, mut norm) = (0.0, 0.0, 0.0);
        for ((p, q), w) in from.iter().zip(to).zip(weights) {
            let (px, py) = (f64::from(p.x) - fx, f64::from(p.y) - fy);
            let (qx, qy) = (f64::from(q.x) - gx, f64::from(q.y) - gy);
            dot += w * (px * qx + py * qy);
            cross += w * (px * qy - py * qx);
            norm += w * (px * px + py * py);
        }
        if norm <= f64::EPSILON {
            return None;
        }
        let (a, b) = (dot / norm, cross / norm);
        Some(Similarity {
            a,
            b,
            tx: gx - (a * fx - b * fy),
            ty: gy - (b * fx + a * fy),
        })
    }

    pub fn apply(&self, p: Point) -> Point {
        let (x, y) = (f64::from(p.x), f64::from(p.y));
        Point {
            x: (self.a * x - self.b * y + self.tx) as f32,
            y: (self.b * x + self.a * y + self.ty) as f32,
        }
    }

    /// Target units per source unit.
    pub fn scale(&self) -> f64 {
        self.a.hypot(self.b)
    }

    /// The same map, with target coordinates divided by `k` around the origin `(ox, oy)`.
    fn shrunk(&self, (ox, oy): (f64, f64), (kx, ky): (f64, f64)) -> Similarity {
        // Only the uniform part keeps it a similarity; the per-axis rounding of a shrunk
        // picture's size (a pixel at most) goes into the tiny difference of kx and ky.
        let k = (kx + ky) / 2.0;
        Similarity {
            a: self.a / k,
            b: self.b / k,
            tx: (self.tx - ox) / kx,
            ty: (self.ty - oy) / ky,
        }
    }
}

/// The chip of the face whose landmarks (RetinaFace's order, the upright picture's
/// continuous coordinates) are `landmarks`. `None` when the landmarks are all one point, or
/// when a face large enough to be shrunk first lies wholly off the picture.
/// Chip pixels that fall outside the picture are black, as dlib's.
pub fn chip(picture: &RgbImage, landmarks: &[Point; 5]) -> Option<RgbImage> {
    let to_picture = Similarity::fit_weighted(&template(), landmarks, &WEIGHTS)?;
    let halvings = halvings(to_picture.scale());
    if halvings == 0 {
        return Some(sample(picture, &to_picture));
    }
    let (x0, y0, w, h) = footprint(picture, &to_picture)?;
    let k = f64::from(1u32 << halvings);
    let (sw, sh) = (
        ((f64::from(w) / k).round() as u32).max(1),
        ((f64::from(h) / k).round() as u32).max(1),
    );
    let crop = image::imageops::crop_imm(picture, x0, y0, w, h).to_image();
    // DynamicImage's resize is compiled optimised in the image crate even in debug builds.
    let small = DynamicImage::ImageRgb8(crop)
        .resize_exact(sw, sh, FilterType::Triangle)
        .into_rgb8();
    let ratio = (f64::from(w) / f64::from(sw), f64::from(h) / f64::from(sh));
    Some(sample(
        &small,
        &to_picture.shrunk((f64::from(x0), f64::from(y0)), ratio),
    ))
}

/// How many times dlib halves the picture before sampling: until a chip pixel covers between
/// one and two picture pixels.
fn halvings(scale: f64) -> u32 {
    let mut n = 0;
    while scale / f64::from(1u32 << n) > 2.0 && n < 16 {
        n += 1;
    }
    n
}

/// The picture's pixels under the chip (its four corners mapped), with a margin for the
/// shrinking filter, clipped to the picture: `(x, y, width, height)`.
fn footprint(picture: &RgbImage, to_picture: &Similarity) -> Option<(u32, u32, u32, u32)> {
    let side = CHIP_SIDE as f32;
    let corners = [(0.0, 0.0), (side, 0.0), (0.0, side), (side, side)]
        .map(|(x, y)| to_picture.apply(Point { x, y }));
    let margin = 2.0 * to_picture.scale() as f32;
    let (pw, ph) = (picture.width() as f32, picture.height() as f32);
    let left = (corners.iter().map(|p| p.x).fold(f32::MAX, f32::min) - margin).max(0.0);
    let top = (corners.iter().map(|p| p.y).fold(f32::MAX, f32::min) - margin).max(0.0);
    let right = (corners.iter().map(|p| p.x).fold(f32::MIN, f32::max) + margin).min(pw);
    let bottom = (corners.iter().map(|p| p.y).fold(f32::MIN, f32::max) + margin).min(ph);
    let (x0, y0) = (left.floor() as u32, top.floor() as u32);
    let (x1, y1) = (right.ceil() as u32, bottom.ceil() as u32);
    (x1 > x0 && y1 > y0).then_some((x0, y0, x1 - x0, y1 - y0))
}

/// Each chip pixel's centre mapped into `picture` and sampled bilinearly.
fn sample(picture: &RgbImage, to_picture: &Similarity) -> RgbImage {
    RgbImage::from_fn(CHIP_SIDE, CHIP_SIDE, |c, r| {
        let q = to_picture.apply(Point {
            x: c as f32 + 0.5,
            y: r as f32 + 0.5,
        });
        bilinear(picture, f64::from(q.x) - 0.5, f64::from(q.y) - 0.5)
    })
}

/// The colour at `(u, v)`, pixel centres at whole numbers; black outside the picture.
fn bilinear(picture: &RgbImage, u: f64, v: f64) -> Rgb<u8> {
    let (w, h) = (f64::from(picture.width()), f64::from(picture.height()));
    if !(u >= 0.0 && v >= 0.0 && u <= w - 1.0 && v <= h - 1.0) {
        return Rgb([0; 3]);
    }
    let (x0, y0) = (u.floor() as u32, v.floor() as u32);
    let (x1, y1) = (
        (x0 + 1).min(picture.width() - 1),
        (y0 + 1).min(picture.height() - 1),
    );
    let (fx, fy) = (u - f64::from(x0), v - f64::from(y0));
    let px = |x, y| picture.get_pixel(x, y).0.map(f64::from);
    let (p00, p10, p01, p11) = (px(x0, y0), px(x1, y0), px(x0, y1), px(x1, y1));
    Rgb(std::array::from_fn(|c| {
        let top = p00[c] + (p10[c] - p00[c]) * fx;
        let bottom = p01[c] + (p11[c] - p01[c]) * fx;
        (top + (bottom - top) * fy).round().clamp(0.0, 255.0) as u8
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(x: f32, y: f32) -> Point {
        Point { x, y }
    }

    fn near(p: Point, q: Point, tol: f32) -> bool {
        (p.x - q.x).abs() <= tol && (p.y - q.y).abs() <= tol
    }

    /// Turned by `degrees`, scaled by `scale`, moved by `(tx, ty)`.
    fn similarity(degrees: f64, scale: f64, tx: f64, ty: f64) -> Similarity {
        let r = degrees.to_radians();
        Similarity {
            a: scale * r.cos(),
            b: scale * r.sin(),
            tx,
            ty,
        }
    }

    #[test]
    fn the_template_is_dlibs_mean_face_in_the_150_px_chip() {
        let t = template();
        // dlib's 5-point template puts the outer eye corners at x 0.1206 and 0.8596 of the
        // face, 0.2135 down: (0.25 + p) / 1.5 * 150 is 37.1 and 111.0 px, 46.3 px down;
        // the eye centres lie between the corners, on that line within a pixel.
        for eye in &t[..2] {
            assert!((eye.y - 47.1).abs() < 1.0, "{eye:?}");
        }
        assert!(t[0].x > 37.1 && t[0].x < 75.0 && t[1].x > 75.0 && t[1].x < 111.0);
        // Left-right symmetric about dlib's face centre line (x 0.490127 → 74.5 px + 0.5).
        let centre = ((0.25 + 0.490_127) / 1.5 * 150.0 + 0.5) as f32;
        assert!(((t[0].x + t[1].x) / 2.0 - centre).abs() < 1e-3);
        assert!(((t[3].x + t[4].x) / 2.0 - centre).abs() < 1e-3);
        assert!((t[2].x - centre).abs() < 1e-3);
        // Eyes above the nose above the mouth, everything inside the chip.
        assert!(t[0].y < t[2].y && t[2].y < t[3].y && t[3].y == t[4].y);
        assert!(
            t.iter()
                .all(|p| p.x > 0.0 && p.y > 0.0 && p.x < 150.0 && p.y < 150.0)
        );
    }

    #[test]
    fn fit_recovers_an_exact_similarity() {
        let truth = similarity(-37.0, 2.75, 410.5, -12.25);
        let from = template();
        let to = from.map(|p| truth.apply(p));
        let got = Similarity::fit(&from, &to).expect("fits");
        // The points are f32: a few parts in a million.
        assert!(
            (got.a - truth.a).abs() < 1e-5 && (got.b - truth.b).abs() < 1e-5,
            "{got:?}"
        );
        assert!((got.tx - truth.tx).abs() < 1e-3 && (got.ty - truth.ty).abs() < 1e-3);
        assert!((got.scale() - 2.75).abs() < 1e-5);
    }

    #[test]
    fn fit_is_least_squares_and_never_a_mirror() {
        // Mirrored landmarks have no exact similarity: the best one keeps the centroid and
        // collapses what a rotation cannot reach, instead of flipping the face.
        let from = [pt(0.0, 0.0), pt(2.0, 0.0), pt(0.0, 2.0), pt(2.0, 2.0)];
        let to = from.map(|p| pt(-p.x, p.y));
        let got = Similarity::fit(&from, &to).expect("fits");
        let centroid = got.apply(pt(1.0, 1.0));
        assert!(near(centroid, pt(-1.0, 1.0), 1e-6), "{centroid:?}");
        assert!(got.scale() < 1e-9, "a mirror is no rotation: {got:?}");
        // One landmark off by d moves the fit by less than d at that point.
        let mut off = template();
        off[2].x += 10.0;
        let fit = Similarity::fit(&template(), &off).expect("fits");
        let moved = fit.apply(template()[2]).x - template()[2].x;
        assert!(moved > 0.0 && moved < 10.0, "{moved}");
    }

    #[test]
    fn a_weightless_landmark_does_not_move_the_fit() {
        let truth = similarity(12.0, 0.8, 30.0, 40.0);
        let mut to = template().map(|p| truth.apply(p));
        to[3].y += 25.0; // a wide smile
        let weights = [2.0, 2.0, 1.0, 0.0, 1.0];
        let got = Similarity::fit_weighted(&template(), &to, &weights).expect("fits");
        assert!(
            (got.a - truth.a).abs() < 1e-5 && (got.b - truth.b).abs() < 1e-5,
            "{got:?}"
        );
        let moved = Similarity::fit(&template(), &to).expect("fits");
        assert!(
            (moved.a - truth.a).abs() > 1e-3,
            "equal weights feel it: {moved:?}"
        );
        assert_eq!(Similarity::fit_weighted(&template(), &to, &[0.0; 5]), None);
    }

    #[test]
    fn fit_refuses_landmarks_without_extent() {
        let same = [pt(5.0, 5.0); 5];
        assert_eq!(Similarity::fit(&same, &template()), None);
        assert_eq!(Similarity::fit(&template()[..2], &template()), None);
    }

    /// A picture of grey with a coloured dot, `2r+1` pixels square, at each of `points`.
    fn dots(w: u32, h: u32, points: &[Point], r: i64) -> RgbImage {
        let colours = [
            [255, 0, 0],
            [0, 255, 0],
            [0, 0, 255],
            [255, 255, 0],
            [0, 255, 255],
        ];
        let mut img = RgbImage::from_pixel(w, h, Rgb([128; 3]));
        for (p, colour) in points.iter().zip(colours) {
            for dy in -r..=r {
                for dx in -r..=r {
                    let (x, y) = (p.x.floor() as i64 + dx, p.y.floor() as i64 + dy);
                    img.put_pixel(x as u32, y as u32, Rgb(colour));
                }
            }
        }
        img
    }

    /// The chip's pixel nearest `p` is closest to `colour` of all five dot colours.
    fn dot_at(chip: &RgbImage, p: Point, colour: [u8; 3]) -> bool {
        let px = chip.get_pixel(p.x.floor() as u32, p.y.floor() as u32).0;
        let d = |c: [u8; 3]| {
            px.iter()
                .zip(c)
                .map(|(a, b)| (i32::from(*a) - i32::from(b)).pow(2))
                .sum::<i32>()
        };
        d(colour) < d([128; 3]) / 2
    }

    #[test]
    fn the_chip_puts_each_landmark_at_its_template_point() {
        let colours = [
            [255, 0, 0],
            [0, 255, 0],
            [0, 0, 255],
            [255, 255, 0],
            [0, 255, 255],
        ];
        // Turned and at 1.5 picture pixels per chip pixel (no shrinking), and at 5 (shrunk
        // twice first), each with its landmarks as dots where that face would have them.
        for (degrees, scale, w) in [(30.0, 1.5, 400), (-75.0, 5.0, 1200)] {
            // The chip's centre at the picture's.
            let turn = similarity(degrees, scale, 0.0, 0.0);
            let centre = turn.apply(pt(75.0, 75.0));
            let half = f64::from(w) / 2.0;
            let (tx, ty) = (half - f64::from(centre.x), half - f64::from(centre.y));
            let to_picture = similarity(degrees, scale, tx, ty);
            let landmarks = template().map(|p| to_picture.apply(p));
            // Dots about a chip pixel and a half wide.
            let picture = dots(w, w, &landmarks, (scale * 0.75).round() as i64);
            let chip = chip(&picture, &landmarks).expect("a chip");
            assert_eq!(chip.dimensions(), (CHIP_SIDE, CHIP_SIDE));
            for (t, colour) in template().iter().zip(colours) {
                assert!(dot_at(&chip, *t, colour), "{degrees} deg x{scale}: {t:?}");
            }
        }
    }

    #[test]
    fn chip_pixels_off_the_picture_are_black_and_halvings_follow_dlib() {
        let to_picture = similarity(0.0, 1.0, -100.0, -100.0);
        let landmarks = template().map(|p| to_picture.apply(p));
        let picture = RgbImage::from_pixel(60, 60, Rgb([200; 3]));
        let chip = chip(&picture, &landmarks).expect("a chip");
        assert_eq!(chip.get_pixel(0, 0).0, [0; 3]);
        assert_eq!(chip.get_pixel(140, 140).0, [200; 3]);
        assert_eq!((halvings(1.0), halvings(2.0), halvings(2.1)), (0, 0, 1));
        assert_eq!((halvings(4.0), halvings(4.5), halvings(9.0)), (1, 2, 3));
    }
}
