//! Evaluation: loss and accuracy of a model over a dataset (or some of its rows), with the
//! step programs captured once and replayed for every evaluation (validation every epoch
//! costs no capture).

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::model::Sequential;
use crate::nn::options::{Evaluation, Loss};
use crate::nn::step::{self, Backward, StepLayout, StepProgram, CHUNK};
use crate::runtime::Device;
use crate::tensor::{IndexBuffer, Tensor};

/// Loss and accuracy over chosen rows of a dataset, with the step programs captured once.
pub(crate) struct Evaluator {
    idx: IndexBuffer,
    acc: Tensor,
    layout: StepLayout,
    table: Tensor,
    plans: Vec<StepProgram>,
    steps: Vec<(usize, usize)>,
    has_acc: bool,
}

impl Evaluator {
    /// An evaluation of `model` over `rows` of `data` (all rows with `None`), `batch` rows a
    /// step.
    pub(crate) fn new(
        model: &Sequential,
        data: &Dataset,
        rows: Option<&[u32]>,
        batch: usize,
    ) -> Result<Evaluator> {
        model.check_dataset("evaluate", data)?;
        if batch == 0 {
            return Err(Error::InvalidArgument {
                op: "evaluate",
                name: "batch_size",
                expected: "at least 1".into(),
                found: "0".into(),
            });
        }
        let all: Vec<u32>;
        let rows = match rows {
            Some(r) => r,
            None => {
                all = (0..data.len() as u32).collect();
                &all
            }
        };
        let dev = &model.device;
        let n = rows.len();
        let b = batch.clamp(1, n.max(1));
        let idx = IndexBuffer::new(dev, rows)?;
        let acc = Tensor::zeros(dev, &[4])?;
        acc.set_memory_kind(MemoryKind::Activations);
        let layout = StepLayout::new(model, data, Backward::None);
        let table = layout.table(dev)?;
        let mut plans = vec![StepProgram::build(
            model,
            data,
            &idx,
            b,
            Backward::None,
            &acc,
            &table,
        )?];
        if !n.is_multiple_of(b) {
            plans.push(StepProgram::build(
                model,
                data,
                &idx,
                n % b,
                Backward::None,
                &acc,
                &table,
            )?);
        }
        Ok(Evaluator {
            idx,
            acc,
            layout,
            table,
            plans,
            steps: step::batches(n, b),
            has_acc: model
                .loss
                .unwrap_or(Loss::SparseCategoricalCrossentropy)
                .has_accuracy(),
        })
    }

    /// Runs the evaluation with the model's current weights.
    pub(crate) fn run(&self, dev: &Device, data: &Dataset) -> Result<Evaluation> {
        let [loss, correct, n] = self.run_sums(dev, data)?;
        let n = n.max(1.0);
        Ok(Evaluation {
            loss: loss / n,
            accuracy: self.has_acc.then_some(correct / n),
        })
    }

    /// Whether the loss has an accuracy.
    pub(crate) fn has_accuracy(&self) -> bool {
        self.has_acc
    }

    /// `[Σ loss, Σ correct, rows]` over the rows (several processes add theirs up).
    pub(crate) fn run_sums(&self, dev: &Device, data: &Dataset) -> Result<[f64; 3]> {
        step::clear(dev, &self.acc)?;
        for chunk in self.steps.chunks(CHUNK) {
            step::run_chunk(
                dev,
                &self.layout,
                &self.table,
                &self.plans,
                chunk,
                data,
                &self.idx,
                0,
                0,
                None,
            )?;
        }
        step::read_acc(&self.acc)
    }
}

impl Sequential {
    /// Mean loss (and accuracy, for classification losses) on `data`, in batches of
    /// `batch_size`.
    pub fn evaluate(&self, data: &Dataset, batch_size: usize) -> Result<Evaluation> {
        Evaluator::new(self, data, None, batch_size)?.run(&self.device, data)
    }
}
