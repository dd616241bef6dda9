//! The face descriptor: dlib's ResNet (`dlib_face_recognition_resnet_model_v1`, converted to
//! ONNX by scripts/convert-dlib-face.py; models/README.md), embedded in the binary, loaded once
//! per process and shared by every thread. A 150x150 aligned chip (`align`) in, 128 numbers
//! out, which dlib puts 0.6 apart or less for one person. Owns the model and its input
//! layout; must not decode files nor align faces (that is `load` and `align`).

use super::FaceError;
use super::align::CHIP_SIDE;
use image::RgbImage;
use std::sync::{Arc, OnceLock};
use tract_onnx::prelude::*;

/// Numbers in a face descriptor.
pub const EMBEDDING_LEN: usize = 128;

/// A face descriptor: Euclidean distance compares two (dlib's threshold for "same person" is
/// 0.6).
pub type Embedding = [f32; EMBEDDING_LEN];

/// The converted model; see models/README.md for its provenance and the conversion check.
static MODEL_ONNX: &[u8] = include_bytes!("../../models/dlib-face-resnet-v1.onnx");

type Plan = Arc<TypedRunnableModel>;

/// Built on first use; a failure is kept, as for RetinaFace, so it reports the same error on
/// every call instead of retrying the load.
static PLAN: OnceLock<Result<Plan, String>> = OnceLock::new();

fn plan() -> Result<&'static Plan, FaceError> {
    PLAN.get_or_init(|| build_plan().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| FaceError::Model(e.clone()))
}

fn build_plan() -> TractResult<Plan> {
    let model = tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(MODEL_ONNX))?;
    model.into_optimized()?.into_runnable()
}

/// The face embedder. A cheap handle: every handle shares the one loaded model.
#[derive(Debug, Clone, Copy)]
pub struct FaceEmbedder {
    _loaded: (),
}

impl FaceEmbedder {
    /// Loads the embedded model (once per process; later calls return at once).
    pub fn new() -> Result<Self, FaceError> {
        plan()?;
        Ok(FaceEmbedder { _loaded: () })
    }

    /// The descriptor of one aligned chip (`CHIP_SIDE` square, RGB).
    pub fn embed(&self, chip: &RgbImage) -> Result<Embedding, FaceError> {
        let outputs = plan()?
            .run(tvec!(input_tensor(chip)?.into()))
            .map_err(|e| FaceError::Model(format!("{e:#}")))?;
        let values = outputs
            .first()
            .ok_or_else(|| FaceError::Model("no output".into()))?
            .try_as_plain_ram()
            .and_then(|view| view.as_slice::<f32>())
            .map_err(|e| FaceError::Model(format!("{e:#}")))?;
        values
            .try_into()
            .map_err(|_| FaceError::Model(format!("{} numbers, not 128", values.len())))
    }
}

/// NCHW float32 in R, G, B order, 0..255: the graph subtracts dlib's means and scales.
fn input_tensor(chip: &RgbImage) -> Result<Tensor, FaceError> {
    let side = CHIP_SIDE as usize;
    if chip.dimensions() != (CHIP_SIDE, CHIP_SIDE) {
        let (w, h) = chip.dimensions();
        return Err(FaceError::Model(format!(
            "a chip is {side}x{side}, not {w}x{h}"
        )));
    }
    let plane = side * side;
    let mut data = vec![0f32; plane * 3];
    for (x, y, px) in chip.enumerate_pixels() {
        let i = y as usize * side + x as usize;
        for (c, value) in px.0.iter().enumerate() {
            data[c * plane + i] = f32::from(*value);
        }
    }
    Tensor::from_shape(&[1, 3, side, side], &data).map_err(|e| FaceError::Model(format!("{e:#}")))
}
