//! Where detection looks: the scale of the whole-picture pass, and the windows of the second,
//! closer look at the small candidates of a picture much larger than the net's input (issue
//! 28 item 6). Pure geometry over candidates in displayed (upright) picture pixels; owns the
//! numbers of that plan and must not run the model nor touch pixels (that is `retina`).
//!
//! Why a closer look only where the first pass saw something: a face of 20 px in a 1800 px
//! collage is 11 px at 1024 and scores 0.5-0.8, under any threshold that keeps a blurred clock
//! out; seen at 1.4 times it scores 0.99. Tiling the whole picture at that scale would cost
//! 3 to 7 runs of the net per camera photo; the candidates of the first pass, kept from a
//! low score, say where to look, and their number is bounded.

use super::decode::Candidate;

/// Largest enlargement of a picture for the net. A small, soft picture enlarged 2.5 times
/// reads as skin: scikit-image's blurred clock (400x300) scored 0.95 at 1024 px and at most
/// 0.84 at 800; the corpus's real small faces (zidane at 320 px, the astronaut at 192) keep
/// scores of 0.99 at twice their size.
pub const MAX_UPSCALE: f32 = 2.0;

/// A picture is searched again when its first pass shrank it to this or less (its long side
/// is at least 1.25 times the net's input): below that a closer look has no more pixels to see.
pub const ZOOM_BELOW: f32 = 0.8;

/// The closer look is at least this many times the first pass's scale, and more when its
/// smallest candidate needs it to be `SMALL_FACE` wide (bounded by `MAX_UPSCALE` and
/// `ZOOMED_LONG_SIDE`): the collage's 20 px bus faces score 0.96 and 0.89 at their own size,
/// 0.997 and 0.994 at twice it. A face of 35 px scored 0.99 at 64 px and under 0.97 at 37.
pub const ZOOM_FACTOR: f32 = 2.5;

/// Candidates narrower than this in the first pass's net pixels are looked at again, at a
/// scale that makes the smallest this wide; wider ones are large enough for the net to be
/// sure of them.
pub const SMALL_FACE: f32 = 64.0;

/// The long side of the picture the windows are cut from, at most: 4096x2731 RGB for a
/// camera photo (34 MB), whatever its size.
pub const ZOOMED_LONG_SIDE: f32 = 4096.0;

/// At most this many windows per picture, so that a picture full of weak candidates (foliage,
/// a crowd) costs at most `1 + MAX_WINDOWS` runs of the net.
pub const MAX_WINDOWS: usize = 4;

/// A candidate whose centre lies this far inside a window already planned needs no window of
/// its own (zoomed pixels).
const COVERED_MARGIN: f32 = 64.0;

/// A face found in a window within this many pixels of an edge that is not the picture's
/// border is cut by the window: it is dropped (the whole face is another pass's).
const CUT_EDGE: f32 = 2.0;

/// The scale of the whole-picture pass: the long side to `target`, enlarged at most
/// `MAX_UPSCALE` times.
pub fn first_scale(long_side: u32, target: u32) -> f32 {
    (target as f32 / long_side.max(1) as f32).min(MAX_UPSCALE)
}

/// The closer look: the scale and the windows (top-left corners, zoomed pixels, each `side`
/// square or the picture's extent where it is smaller). Empty when the picture is not much
/// larger than the input or no candidate is small. `found` holds the first pass's candidates
/// in displayed pixels, best first; `shown` is the displayed size.
pub fn plan(found: &[Candidate], shown: (u32, u32), first: f32, side: u32) -> Plan {
    let small = |c: &&Candidate| c.bbox[2] * first < SMALL_FACE;
    let narrowest = found
        .iter()
        .filter(small)
        .map(|c| c.bbox[2])
        .fold(f32::INFINITY, f32::min);
    let scale = (SMALL_FACE / narrowest)
        .max(first * ZOOM_FACTOR)
        .min(MAX_UPSCALE)
        .min(ZOOMED_LONG_SIDE / shown.0.max(shown.1).max(1) as f32);
    let mut plan = Plan {
        scale,
        size: (scaled(shown.0, scale), scaled(shown.1, scale)),
        side,
        windows: Vec::new(),
    };
    if first > ZOOM_BELOW {
        return plan;
    }
    for c in found.iter().filter(small) {
        let centre = (
            (c.bbox[0] + c.bbox[2] / 2.0) * scale,
            (c.bbox[1] + c.bbox[3] / 2.0) * scale,
        );
        if plan.windows.iter().any(|&w| plan.covers(w, centre)) {
            continue;
        }
        if plan.windows.len() == MAX_WINDOWS {
            break;
        }
        let corner = |at: f32, extent: u32| {
            let free = extent.saturating_sub(side) as f32;
            (at - side as f32 / 2.0).clamp(0.0, free).round() as u32
        };
        let window = (corner(centre.0, plan.size.0), corner(centre.1, plan.size.1));
        plan.windows.push(window);
    }
    plan
}

/// `n` displayed pixels at `scale`, at least one.
pub fn scaled(n: u32, scale: f32) -> u32 {
    ((n as f32 * scale).round() as u32).max(1)
}

/// The second pass: the displayed picture at `scale` is `size`; each window is `side` square
/// (less where the picture is smaller) from its top-left corner.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub scale: f32,
    pub size: (u32, u32),
    pub side: u32,
    pub windows: Vec<(u32, u32)>,
}

impl Plan {
    /// A window's width and height (zoomed pixels).
    pub fn extent(&self, (x, y): (u32, u32)) -> (u32, u32) {
        (
            self.side.min(self.size.0 - x),
            self.side.min(self.size.1 - y),
        )
    }

    fn covers(&self, window: (u32, u32), (cx, cy): (f32, f32)) -> bool {
        let (w, h) = self.extent(window);
        let (x0, y0) = (window.0 as f32, window.1 as f32);
        let m = COVERED_MARGIN;
        (x0 + m..=x0 + w as f32 - m).contains(&cx) && (y0 + m..=y0 + h as f32 - m).contains(&cy)
    }

    /// Whether a face found in `window` (its box in the window's pixels) is whole there: not
    /// touching an edge of the window that cuts through the picture.
    pub fn whole_in(&self, window: (u32, u32), bbox: &[f32; 4]) -> bool {
        let (w, h) = self.extent(window);
        let [x, y, bw, bh] = *bbox;
        let cut_left = window.0 > 0 && x < CUT_EDGE;
        let cut_top = window.1 > 0 && y < CUT_EDGE;
        let cut_right = window.0 + w < self.size.0 && x + bw > w as f32 - CUT_EDGE;
        let cut_bottom = window.1 + h < self.size.1 && y + bh > h as f32 - CUT_EDGE;
        !(cut_left || cut_top || cut_right || cut_bottom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(score: f32, bbox: [f32; 4]) -> Candidate {
        Candidate {
            score,
            bbox,
            landmarks: [[0.0; 2]; 5],
        }
    }

    #[test]
    fn small_pictures_are_enlarged_at_most_twice_and_big_ones_shrunk_to_the_input() {
        assert_eq!(first_scale(400, 1024), 2.0);
        assert_eq!(first_scale(640, 1024), 1.6);
        assert_eq!(first_scale(2048, 1024), 0.5);
        assert_eq!(first_scale(0, 1024), 2.0);
    }

    #[test]
    fn only_small_candidates_of_a_much_larger_picture_are_looked_at_again() {
        let small = cand(0.6, [1000.0, 300.0, 40.0, 50.0]); // 20 net px at 0.5
        let large = cand(0.99, [100.0, 100.0, 200.0, 260.0]); // 100 net px
        // 2048x1024 at 0.5: the closer look makes the 40 px face 64 px wide.
        let p = plan(&[large.clone(), small.clone()], (2048, 1024), 0.5, 1024);
        assert_eq!(p.scale, 1.6);
        assert_eq!(p.size, (3277, 1638));
        // Centred on the small face ((1020, 325) * 1.6).
        assert_eq!(p.windows, vec![(1632 - 512, 520 - 512)]);
        // At least 2.5 times the first pass, at most twice the picture and 4096 px long.
        let tiny = cand(0.5, [1000.0, 300.0, 10.0, 12.0]);
        let wide = cand(0.5, [1000.0, 300.0, 300.0, 360.0]);
        assert_eq!(
            plan(&[wide], (6000, 4000), 0.17, 1024).scale,
            0.17 * ZOOM_FACTOR
        );
        assert_eq!(
            plan(std::slice::from_ref(&tiny), (1300, 800), 0.78, 1024).scale,
            2.0
        );
        let long = plan(&[tiny], (8192, 100), 0.125, 1024);
        assert_eq!((long.scale, long.size), (0.5, (4096, 50)));
        // 1200 px: shrunk only to 0.85, no closer look.
        let p = plan(&[small], (1200, 800), 0.85, 1024);
        assert!(p.windows.is_empty());
    }

    #[test]
    fn candidates_inside_a_window_share_it_and_windows_are_bounded() {
        // Two faces side by side share a window; faces far apart get their own, up to the bound.
        let near = [
            cand(0.9, [1000.0, 300.0, 30.0, 40.0]),
            cand(0.8, [1100.0, 320.0, 30.0, 40.0]),
        ];
        let p = plan(&near, (6000, 4000), 0.17, 1024);
        assert_eq!(p.windows.len(), 1, "{p:?}");
        // Over 1,000 zoomed pixels apart: each would need a window of its own.
        let apart: Vec<Candidate> = (0..8)
            .map(|i| {
                let (x, y) = ((i % 4) as f32 * 3000.0, (i / 4) as f32 * 4000.0);
                cand(0.5, [x + 100.0, y + 100.0, 60.0, 70.0])
            })
            .collect();
        let p = plan(&apart, (12000, 8000), 0.3, 1024);
        assert_eq!(p.windows.len(), MAX_WINDOWS);
        for &w in &p.windows {
            let (ww, wh) = p.extent(w);
            assert!(
                w.0 + ww <= p.size.0 && w.1 + wh <= p.size.1,
                "{w:?} in {p:?}"
            );
        }
    }

    #[test]
    fn a_face_cut_by_an_inner_window_edge_is_not_whole_but_one_at_the_border_is() {
        let p = Plan {
            scale: 1.0,
            size: (3000, 1024),
            side: 1024,
            windows: vec![(0, 0), (1000, 0)],
        };
        // At the picture's left border: whole even touching x = 0.
        assert!(p.whole_in((0, 0), &[0.0, 10.0, 50.0, 60.0]));
        // The first window's right edge cuts the picture at 1024.
        assert!(!p.whole_in((0, 0), &[990.0, 10.0, 34.0, 60.0]));
        // The second window's left edge too; its top and bottom are the picture's.
        assert!(!p.whole_in((1000, 0), &[0.5, 10.0, 30.0, 60.0]));
        assert!(p.whole_in((1000, 0), &[10.0, 0.0, 30.0, 1024.0]));
        assert!(p.whole_in((1000, 0), &[500.0, 400.0, 30.0, 40.0]));
    }
}
