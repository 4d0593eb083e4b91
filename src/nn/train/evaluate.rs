//! Evaluation: loss and accuracy of a model over a dataset (or some of its rows), with the
//! step programs captured once and replayed for every evaluation (validation every epoch
//! costs no capture).

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};
use crate::nn::graph::model::Sequential;
use crate::nn::train::options::Evaluation;
use crate::nn::train::scoring::Scoring;
use crate::nn::train::step::{self, StepProgram};
use crate::nn::train::table::{Backward, StepLayout, CHUNK};
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
    scoring: Scoring,
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
        // Without a loss the output layer's activation is not folded into one, so a default
        // loss would be applied to probabilities as if they were logits: a plausible,
        // wrong number. Keras refuses too.
        if model.loss.is_none() {
            return Err(Error::InvalidArgument {
                op: "evaluate",
                name: "model",
                expected: "a compiled model (compile it, or load a checkpoint, which is)".into(),
                found: "a model without a loss".into(),
            });
        }
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
        let acc = step::accumulator(model)?;
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
            scoring: Scoring::of(model),
        })
    }

    /// Runs the evaluation with the model's current weights.
    pub(crate) fn run(&self, dev: &Device, data: &Dataset) -> Result<Evaluation> {
        Ok(self.evaluation(&self.run_sums(dev, data)?))
    }

    /// The evaluation an accumulator's contents give (several processes add theirs first).
    pub(crate) fn evaluation(&self, sums: &[f64]) -> Evaluation {
        self.scoring.evaluation(sums)
    }

    /// The accumulator's contents over the rows (several processes add theirs up).
    pub(crate) fn run_sums(&self, dev: &Device, data: &Dataset) -> Result<Vec<f64>> {
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
    /// Loss, accuracy and metrics from an accumulator's contents ([`crate::nn::EpochEnd::sums`], or
    /// [`Sequential::evaluate_sums`]), added up over the parts of a dataset evaluated or
    /// trained on piece by piece: precision and AUC are not means, so parts combine by their
    /// sums.
    pub fn evaluation_of(&self, sums: &[f64]) -> Result<Evaluation> {
        let scoring = Scoring::of(self);
        let want = scoring.len();
        if sums.len() != want {
            return Err(crate::error::Error::InvalidArgument {
                op: "evaluation_of",
                name: "sums",
                expected: format!("{want} sums (this model's accumulator)"),
                found: format!("{}", sums.len()),
            });
        }
        Ok(scoring.evaluation(sums))
    }

    /// The accumulator of an evaluation of `data` (see [`Sequential::evaluation_of`]).
    pub fn evaluate_sums(&self, data: &Dataset, batch_size: usize) -> Result<Vec<f64>> {
        Evaluator::new(self, data, None, batch_size)?.run_sums(&self.device, data)
    }

    /// Mean loss (and accuracy, for classification losses) on `data`, in batches of
    /// `batch_size`.
    pub fn evaluate(&self, data: &Dataset, batch_size: usize) -> Result<Evaluation> {
        Evaluator::new(self, data, None, batch_size)?.run(&self.device, data)
    }
}
