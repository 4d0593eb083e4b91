//! Training checkpoints: everything needed to continue a `fit` exactly where it stopped.
//!
//! A checkpoint is a safetensors file like [`Sequential::save`]'s (so [`Sequential::load`]
//! reads its weights too) with, in addition, the optimizer's state tensors
//! (`dense_{i}.kernel.opt{s}`, `dense_{i}.bias.opt{s}`: Adam's moments, SGD's velocity…) and a
//! `"training"` metadata entry: completed epochs, the optimizer's step count, the shuffle
//! seed, the optimizer and loss, and the history so far. The shuffle of epoch `e` is a pure
//! function of (seed, e), so (seed, epochs) is the whole random state. Written atomically:
//! a crash mid-write leaves the previous checkpoint.
//!
//! Resuming replays exactly the kernels an uninterrupted run would have run, in the same
//! order, on the same data: on the same device the weights are bit-identical to the
//! uninterrupted run's (tested).

use std::collections::HashMap;
use std::path::Path;

use crate::nn::model::{write_safetensors, History, Loss, Optimizer, Sequential};
use crate::{Device, Error, Result, Tensor};

/// Where a training run stands (see the module docs).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Epochs completed.
    pub epoch: usize,
    /// The shuffle seed of the run ([`crate::nn::FitOptions::seed`]).
    pub seed: u64,
    /// Optimizer steps taken (bias corrections depend on it).
    pub step: u64,
    /// The optimizer, hyper-parameters included.
    pub optimizer: Optimizer,
    /// The loss.
    pub loss: Loss,
    /// Per-epoch results so far.
    pub history: History,
}

const FORMAT: &str = "suanli-checkpoint-v1";

impl Sequential {
    /// Writes a checkpoint after `epoch` completed epochs of a run with shuffle seed `seed`:
    /// weights, optimizer state, step count and `history`, atomically. The model must be
    /// compiled.
    pub fn save_checkpoint(
        &self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()> {
        let (Some(optimizer), Some(loss)) = (self.optimizer, self.loss) else {
            return Err(Error::InvalidArgument {
                op: "save_checkpoint",
                name: "model",
                expected: "a compiled model".into(),
                found: "not compiled".into(),
            });
        };
        let (mut owned, arch) = self.weight_tensors()?;
        let names: Vec<(String, Vec<usize>)> = owned
            .iter()
            .map(|(n, s, _)| (n.clone(), s.clone()))
            .collect();
        // Optimizer state exists once fit has run; before that a checkpoint holds none.
        if !self.opt_state.is_empty() {
            for ((name, shape), states) in names.iter().zip(&self.opt_state) {
                for (s, t) in states.iter().enumerate() {
                    owned.push((
                        format!("{name}.opt{s}"),
                        shape.clone(),
                        bytemuck::cast_slice(&t.to_vec()?).to_vec(),
                    ));
                }
            }
        }
        let training = Checkpoint {
            epoch,
            seed,
            step: self.step,
            optimizer,
            loss,
            history: history.clone(),
        };
        let meta = HashMap::from([
            ("format".to_string(), FORMAT.to_string()),
            (
                "architecture".to_string(),
                serde_json::Value::Array(arch).to_string(),
            ),
            (
                "training".to_string(),
                serde_json::to_string(&training).map_err(|e| Error::Gpu {
                    op: "save_checkpoint",
                    message: format!("internal error: {e}"),
                })?,
            ),
        ]);
        write_safetensors(path, "save_checkpoint", &owned, meta)
    }

    /// Loads a checkpoint written by [`Sequential::save_checkpoint`] (or by `fit` with
    /// [`crate::nn::FitOptions::checkpoint`]): the compiled model with its optimizer state, and
    /// where training stood. Continue with `fit` and
    /// [`crate::nn::FitOptions::resume`]. Every tensor's presence, dtype and shape is checked.
    pub fn load_checkpoint(device: &Device, path: &Path) -> Result<(Sequential, Checkpoint)> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bad = |expected: String, found: String| Error::Malformed {
            path: path.to_path_buf(),
            format: "safetensors",
            expected,
            found,
        };
        let (mut model, meta) = Sequential::from_safetensors(device, path, &bytes)?;
        if meta.get("format").map(String::as_str) != Some(FORMAT) {
            return Err(bad(
                format!("format {FORMAT:?} (a checkpoint, not plain weights)"),
                format!("{:?}", meta.get("format")),
            ));
        }
        let training = meta
            .get("training")
            .ok_or_else(|| bad("a \"training\" metadata entry".into(), "none".into()))?;
        let ck: Checkpoint = serde_json::from_str(training)
            .map_err(|e| bad("training state JSON".into(), e.to_string()))?;
        model.compile(ck.optimizer, ck.loss)?;
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad("a safetensors file".into(), e.to_string()))?;
        let (names, _) = model.weight_tensors()?;
        let states = ck.optimizer.rule(ck.optimizer.lr()).state_count();
        let present = st.names().iter().any(|n| n.contains(".opt"));
        if present {
            let mut all = Vec::with_capacity(names.len());
            for (name, shape, _) in &names {
                let mut per = Vec::with_capacity(states);
                for s in 0..states {
                    let key = format!("{name}.opt{s}");
                    let t = st
                        .tensor(&key)
                        .map_err(|_| bad(format!("optimizer state {key:?}"), "none".into()))?;
                    if t.dtype() != safetensors::Dtype::F32 || t.shape() != shape.as_slice() {
                        return Err(bad(
                            format!("{key} as F32 {shape:?}"),
                            format!("{:?} {:?}", t.dtype(), t.shape()),
                        ));
                    }
                    let v: Vec<f32> = bytemuck::pod_collect_to_vec(t.data());
                    let t = Tensor::from_slice(device, &v, shape)?;
                    t.set_memory_kind(crate::memory::MemoryKind::OptimizerState);
                    per.push(t);
                }
                all.push(per);
            }
            model.opt_state = all;
        }
        model.step = ck.step;
        Ok((model, ck))
    }
}
