//! TensorBoard's event files, written by suanli: the [`TensorBoard`] callback (loss and
//! metrics per epoch, and per metric read during an epoch with `per_read`), and the
//! [`EventWriter`] under it, which Python's `keras.callbacks.TensorBoard` uses too.
//!
//! The format is TensorFlow's: a file named `events.out.tfevents.<time>.<host>` holding
//! records (`u64` length, its masked CRC-32C, the bytes, their masked CRC-32C), each an
//! `Event` protocol buffer; the first says the file version, the rest carry one scalar each
//! (`Summary.Value { tag, simple_value }`). As Keras does, training scalars go to
//! `<log_dir>/train`, validation ones to `<log_dir>/validation`, tagged `epoch_loss`,
//! `epoch_accuracy`, … (and `batch_loss`, … per metric read). An event file grows as training
//! goes (TensorBoard reads it while it grows), so it is appended to and flushed at every
//! epoch's end rather than replaced; a record is written whole or the reader ignores it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::nn::train::options::{Callback, EpochBegin, EpochEnd, History, Progress};

/// Appends scalar events to one TensorBoard event file.
pub struct EventWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

/// TensorFlow's record checksum: CRC-32C, rotated and offset.
fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c::crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An `Event` with `wall_time` (field 1), `step` (2) and either `file_version` (3) or a
/// `summary` (5) of one `Value { tag (1), simple_value (2) }`.
fn event(step: i64, body: Body<'_>) -> Vec<u8> {
    let mut e = vec![0x09];
    e.extend_from_slice(&now().to_le_bytes());
    e.push(0x10);
    varint(step as u64, &mut e);
    match body {
        Body::Version => {
            let v = b"brain.Event:2";
            e.push(0x1a);
            varint(v.len() as u64, &mut e);
            e.extend_from_slice(v);
        }
        Body::Scalar(tag, value) => {
            let mut val = vec![0x0a];
            varint(tag.len() as u64, &mut val);
            val.extend_from_slice(tag.as_bytes());
            val.push(0x15);
            val.extend_from_slice(&value.to_le_bytes());
            let mut summary = vec![0x0a];
            varint(val.len() as u64, &mut summary);
            summary.extend_from_slice(&val);
            e.push(0x2a);
            varint(summary.len() as u64, &mut e);
            e.extend_from_slice(&summary);
        }
    }
    e
}

enum Body<'a> {
    Version,
    Scalar(&'a str, f32),
}

impl EventWriter {
    /// A new event file in `dir` (created if needed), starting with the version event.
    pub fn new(dir: &Path) -> Result<EventWriter> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            })
            .unwrap_or_else(|| "localhost".into());
        let secs = now() as u64;
        // The pid keeps two writers of one second apart; TensorBoard reads every file whose
        // name holds "tfevents".
        let path = dir.join(format!(
            "events.out.tfevents.{secs}.{host}.{}.suanli",
            std::process::id()
        ));
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut w = EventWriter {
            out: BufWriter::new(file),
            path,
        };
        w.record(&event(0, Body::Version))?;
        w.flush()?;
        Ok(w)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn record(&mut self, data: &[u8]) -> Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut rec = Vec::with_capacity(data.len() + 16);
        rec.extend_from_slice(&len);
        rec.extend_from_slice(&masked_crc(&len).to_le_bytes());
        rec.extend_from_slice(data);
        rec.extend_from_slice(&masked_crc(data).to_le_bytes());
        self.out
            .write_all(&rec)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Appends the scalar `value` under `tag` at `step` (written out at the next flush).
    pub fn scalar(&mut self, tag: &str, value: f64, step: i64) -> Result<()> {
        if tag.is_empty() {
            return Err(Error::InvalidArgument {
                op: "EventWriter::scalar",
                name: "tag",
                expected: "a non-empty tag".into(),
                found: "\"\"".into(),
            });
        }
        self.record(&event(step, Body::Scalar(tag, value as f32)))
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// Keras's `TensorBoard(log_dir)` as a [`Callback`]: `epoch_loss` and `epoch_accuracy` per
/// epoch in `train/`, `epoch_loss`/`epoch_accuracy` of the validation rows in `validation/`,
/// and with `per_read` also `batch_loss`/`batch_accuracy` at every metric read of an epoch
/// (about four a second: the engine runs steps in submissions, not one by one), stepped by
/// the optimizer step. A write that fails is logged and kept ([`TensorBoard::error`]);
/// training goes on.
pub struct TensorBoard {
    dir: PathBuf,
    train: Option<EventWriter>,
    validation: Option<EventWriter>,
    per_read: bool,
    steps_before: usize,
    error: Option<Error>,
}

impl TensorBoard {
    /// Event files under `log_dir` (`train/` now, `validation/` with the first validation).
    pub fn new(log_dir: impl AsRef<Path>) -> Result<TensorBoard> {
        let dir = log_dir.as_ref().to_path_buf();
        let train = EventWriter::new(&dir.join("train"))?;
        Ok(TensorBoard {
            dir,
            train: Some(train),
            validation: None,
            per_read: false,
            steps_before: 0,
            error: None,
        })
    }

    /// Also writes `batch_*` scalars at every metric read (Keras's `update_freq="batch"`).
    pub fn per_read(mut self, on: bool) -> TensorBoard {
        self.per_read = on;
        self
    }

    /// The first write that failed, if any.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    fn keep(&mut self, r: Result<()>) {
        if let Err(e) = r {
            log::error!("TensorBoard: {e}");
            self.error.get_or_insert(e);
        }
    }
}

impl Callback for TensorBoard {
    fn on_epoch_begin(&mut self, e: &EpochBegin) {
        self.steps_before = e.epoch * e.steps;
    }

    fn on_progress(&mut self, p: &Progress) -> bool {
        if self.per_read {
            let step = (self.steps_before + p.step) as i64;
            if let Some(w) = self.train.as_mut() {
                let mut r = w.scalar("batch_loss", p.loss, step);
                if let Some(a) = p.accuracy {
                    r = r.and_then(|_| w.scalar("batch_accuracy", a, step));
                }
                self.keep(r);
            }
        }
        true
    }

    fn on_epoch_end(&mut self, e: &EpochEnd, _history: &History) -> bool {
        let step = e.epoch as i64;
        if let Some(w) = self.train.as_mut() {
            let mut r = w.scalar("epoch_loss", e.loss, step);
            if let Some(a) = e.accuracy {
                r = r.and_then(|_| w.scalar("epoch_accuracy", a, step));
            }
            r = r.and_then(|_| w.flush());
            self.keep(r);
        }
        if let Some(v) = &e.validation {
            if self.validation.is_none() {
                let w = EventWriter::new(&self.dir.join("validation"));
                match w {
                    Ok(w) => self.validation = Some(w),
                    Err(err) => self.keep(Err(err)),
                }
            }
            if let Some(w) = self.validation.as_mut() {
                let mut r = w.scalar("epoch_loss", v.loss, step);
                if let Some(a) = v.accuracy {
                    r = r.and_then(|_| w.scalar("epoch_accuracy", a, step));
                }
                r = r.and_then(|_| w.flush());
                self.keep(r);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_tensorflows() {
        // CRC-32C's check value, and TensorFlow's mask of it.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(
            masked_crc(b"123456789"),
            0xe306_9283u32.rotate_right(15).wrapping_add(0xa282_ead8)
        );
        let mut v = Vec::new();
        varint(300, &mut v);
        assert_eq!(v, [0xac, 0x02]);
    }
}
