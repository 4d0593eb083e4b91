//! Training on one device: [`Sequential::fit`] and its engine, `LocalEngine`, which plugs
//! into the one epoch loop of [`super::fit`] (the optimizer runs inside each layer's
//! weight-gradient product; on the unfused path gradients go through buffers, clipping and
//! loss scaling first).

use std::path::Path;
use std::time::Instant;

use crate::data::dataset::Dataset;
use crate::error::Result;
use crate::nn::graph::model::Sequential;
use crate::nn::train::evaluate::Evaluator;
use crate::nn::train::fit::{run, Engine, EpochReport, Setup};
use crate::nn::train::options::{Evaluation, FitOptions, History};
use crate::nn::train::step::{self, RuleAt, StepProgram};
use crate::nn::train::table::{Backward, StepLayout};
use crate::services::profile::UtilisationWindow;
use crate::telemetry::governor::Governor;
use crate::tensor::{IndexBuffer, Tensor};

/// Training on one device: the optimizer runs inside each layer's weight-gradient product
/// (`Backward::Fused`), so a step is one replay with no gradient buffers.
struct LocalEngine<'a> {
    model: &'a mut Sequential,
    data: &'a Dataset,
    idx: IndexBuffer,
    acc: Tensor,
    layout: StepLayout,
    table: Tensor,
    plans: Vec<StepProgram>,
    /// Gradient buffers of the unfused path (bound by the plans; empty when fused).
    _grads: Vec<Tensor>,
    /// Gradient accumulators (bound by the plans; empty unless accumulating).
    _accs: Vec<Tensor>,
    validation: Option<(Evaluator, &'a Dataset)>,
    seed: u64,
    window: Option<UtilisationWindow>,
}

impl<'a> LocalEngine<'a> {
    fn new(
        model: &'a mut Sequential,
        data: &'a Dataset,
        s: &Setup,
        validation_data: Option<&'a Dataset>,
    ) -> Result<LocalEngine<'a>> {
        let dev = model.device.clone();
        let rule0 = s.optimizer.rule(s.lrs[s.start]);
        model.init_opt_state(&rule0)?;
        let idx = IndexBuffer::new(&dev, &vec![0u32; s.n_train])?;
        let acc = step::accumulator(model)?;
        // The optimizer fused into each weight-gradient product, unless something needs the
        // whole gradient first (clipping, shared weights): then gradients into buffers, clipped, and applied
        // by the optimizer kernel, in the same step program.
        // A weight several layers hold (a shared layer's) needs the sum of their gradients
        // before one optimizer step: unfused too.
        // A kernel's fused update also steps its bias with the same uniform, so a decay
        // filter that tells them apart needs each parameter's own optimizer step.
        // Gradient accumulation: the gradients of k batches summed (scaled by 1/k) into an
        // accumulator per parameter, the optimizer stepping on every k-th.
        let accumulating = model.accumulation > 1;
        // Loss scaling: the gradients checked and unscaled before the optimizer (guarded
        // by the skip word) applies them.
        let scaling = model.loss_scale_tensor()?.is_some();
        let unfused = accumulating
            || scaling
            || model.clip.is_on()
            || model.has_shared_weights()
            || model.decay_mask().contains(&false);
        let grads = if unfused {
            step::gradient_buffers(model)?
        } else {
            Vec::new()
        };
        let accs = if accumulating {
            step::gradient_buffers(model)?
        } else {
            Vec::new()
        };
        let fused = if unfused {
            Backward::Unfused(rule0, &grads, &accs)
        } else {
            Backward::Fused(rule0)
        };
        let layout = StepLayout::new(model, data, fused);
        let table = layout.table(&dev)?;
        let mut plans = vec![StepProgram::build(
            model, data, &idx, s.batch, fused, &acc, &table,
        )?];
        if !s.n_train.is_multiple_of(s.batch) {
            plans.push(StepProgram::build(
                model,
                data,
                &idx,
                s.n_train % s.batch,
                fused,
                &acc,
                &table,
            )?);
        }
        let validation = match validation_data {
            Some(v) => Some((Evaluator::new(model, v, None, 1000)?, v)),
            None if s.n_train < data.len() => {
                let rows = s.split_rows(data.len());
                Some((Evaluator::new(model, data, Some(&rows), 1000)?, data))
            }
            None => None,
        };
        Ok(LocalEngine {
            model,
            data,
            idx,
            acc,
            layout,
            table,
            plans,
            _grads: grads,
            _accs: accs,
            validation,
            seed: s.seed,
            window: None,
        })
    }
}

impl Engine for LocalEngine<'_> {
    fn begin_epoch(&mut self, perm: &[u32]) -> Result<()> {
        let dev = &self.model.device;
        self.idx.write(dev, perm)?;
        step::clear(dev, &self.acc)?;
        self.window = Some(dev.utilisation_window());
        Ok(())
    }

    fn run(&mut self, steps: &[(usize, usize)], t0: u64, rule: &RuleAt<'_>) -> Result<()> {
        step::run_chunk(
            &self.model.device,
            &self.layout,
            &self.table,
            &self.plans,
            steps,
            self.data,
            &self.idx,
            self.seed,
            t0,
            Some(rule),
        )?;
        self.model.step = t0 + steps.len() as u64;
        Ok(())
    }

    fn sums(&mut self) -> Result<Vec<f64>> {
        step::read_acc(&self.acc)
    }

    fn end_epoch(&mut self, _epoch: usize) -> Result<EpochReport> {
        Ok(EpochReport {
            utilisation: self
                .window
                .take()
                .map_or(f64::NAN, |w| w.utilisation().fraction()),
            loss_scale: self.model.loss_scale_state()?.map(|s| s.scale),
            ..EpochReport::default()
        })
    }

    fn validate(&mut self) -> Result<Option<Evaluation>> {
        match &self.validation {
            Some((e, data)) => Ok(Some(e.run(&self.model.device, data)?)),
            None => Ok(None),
        }
    }

    fn govern(&mut self, g: &mut Governor, began: Instant) -> Result<bool> {
        let changed = g.update();
        if g.pacing() {
            // Pacing needs the chunk's own time: wait for it (the queue then holds nothing
            // ahead, so the pause is idle time on the device).
            self.model.device.synchronize()?;
            let busy = g.now().saturating_duration_since(began);
            g.pace_after(busy);
        }
        Ok(changed)
    }

    fn save_checkpoint(
        &mut self,
        path: &Path,
        epoch: usize,
        seed: u64,
        history: &History,
    ) -> Result<()> {
        self.model.save_checkpoint(path, epoch, seed, history)
    }
}

impl Sequential {
    /// Trains on `data`; see [`FitOptions`]. Everything runs on the device: batches are
    /// gathered there, many steps go in one submission, and loss and accuracy are accumulated
    /// on the device and read a few times a second (progress, the NaN check) and at the end
    /// of each epoch. Everything is checked before the model changes.
    pub fn fit<'a>(&mut self, data: &Dataset, mut options: FitOptions<'a>) -> Result<History> {
        let setup = Setup::new("fit", self, data.len(), &options)?;
        self.check_dataset("fit", data)?;
        if let Some(v) = options.validation_data {
            self.check_dataset("fit (validation data)", v)?;
        }
        let t0 = self.step;
        let mut auto = match options.governor {
            Some(_) => None,
            None => Governor::for_devices(std::slice::from_ref(&self.device))?,
        };
        let given = options.governor.take();
        let gov = given.or(auto.as_mut());
        let mut engine = LocalEngine::new(self, data, &setup, options.validation_data)?;
        run(&mut engine, &setup, &mut options, t0, gov)
    }
}
