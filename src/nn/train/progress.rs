//! [`ProgressBar`]: Keras-style progress for `fit`, as a callback the caller chooses to use.
//!
//! The library itself prints nothing. This callback draws a live bar on the terminal
//! (`indicatif`, on stderr, hidden when stderr is not a terminal) and writes one line per
//! epoch to the writer it was given (`Epoch 2/10 1875/1875 - 4.0s - loss: 0.1032 - accuracy:
//! 0.9693 - val_loss: …`), the way Keras's `verbose=1` does.

use std::io::Write;

use crate::nn::train::options::{metrics_text, Callback, EpochBegin, EpochEnd, History, Progress};

/// Keras-style progress (see the module docs).
pub struct ProgressBar {
    out: Box<dyn Write + Send>,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressBar {
    /// Epoch lines to `out`, the live bar to stderr.
    pub fn new(out: Box<dyn Write + Send>) -> ProgressBar {
        ProgressBar { out, bar: None }
    }

    /// Epoch lines to stdout.
    pub fn stdout() -> ProgressBar {
        ProgressBar::new(Box::new(std::io::stdout()))
    }
}

impl Callback for ProgressBar {
    fn on_epoch_begin(&mut self, e: &EpochBegin) {
        let pb = indicatif::ProgressBar::new(e.steps as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "Epoch {}/{} {{bar:30}} {{pos}}/{{len}} {{msg}}",
                e.epoch + 1,
                e.epochs
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        if e.first {
            // A kernel is compiled at its first dispatch (seconds for the unrolled matmuls on
            // a cold lavapipe shader cache): say so instead of looking stuck.
            pb.set_message("first steps: the driver compiles the kernels (cached afterwards)");
        }
        pb.tick();
        self.bar = Some(pb);
    }

    fn on_progress(&mut self, p: &Progress) -> bool {
        if let Some(pb) = &self.bar {
            pb.set_position(p.step as u64);
            pb.set_message(
                metrics_text("", p.loss, p.accuracy)
                    .trim_start_matches(" - ")
                    .to_string(),
            );
        }
        true
    }

    fn on_epoch_end(&mut self, e: &EpochEnd, _history: &History) -> bool {
        if let Some(pb) = self.bar.take() {
            pb.finish_and_clear();
        }
        // A closed stdout is no reason to stop training.
        let _ = writeln!(
            self.out,
            "Epoch {}/{} {}",
            e.epoch + 1,
            e.epochs,
            e.keras_line()
        );
        let _ = self.out.flush();
        true
    }
}
