//! Training, evaluation and what they report: what users choose (`options`), a step as a
//! captured program (`step`) ending in the loss and metrics (`loss_end`, `metric`) and, on the
//! unfused path, gradient clipping (`clip`) and loss scaling for mixed precision (`loss_scale`), which weights decay (`decay`) and the sums of shared layers' gradients
//! (`grad_sum`); the one epoch loop (`fit`) and the single-device engine with `Sequential::fit` (`local_fit`), the loss's gradients without a step
//! (`gradients`) and evaluation
//! (`evaluate`) and how their sums read (`scoring`); losses called on data (`loss_fn`); callbacks that print, log and serve
//! (`progress`, `tensorboard`, `serve`, feature `serve`); and `probe`, one layer on its own
//! for the tests.

pub(crate) mod clip;
pub(crate) mod decay;
pub(crate) mod evaluate;
pub(crate) mod fit;
pub(crate) mod grad_sum;
pub(crate) mod gradients;
pub(crate) mod local_fit;
pub(crate) mod loss_end;
pub(crate) mod loss_fn;
pub(crate) mod loss_scale;
pub(crate) mod metric;
pub(crate) mod options;
pub(crate) mod probe;
pub(crate) mod progress;
pub(crate) mod scoring;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub(crate) mod step;
pub(crate) mod table;
pub(crate) mod tensorboard;
