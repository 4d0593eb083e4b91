//! Random arrays (NumPy's `Generator` and the standard extension's names): `random`,
//! `uniform`, `normal`, `integers`, drawn on the device from Philox4x32-10
//! ([`crate::kernels::philox`]).
//!
//! A generator is a seed (the key) and a position in its stream (the counter); each draw
//! takes the next blocks of four words and advances the position, so a seed gives the same
//! values in the same order on every device and adapter, and separate streams of one seed
//! (`Generator::stream`) never overlap. Nothing is read back: a draw is one dispatch.

use crate::array::array::{Array, Strided};
use crate::array::dtype::{DType, Kind as DKind};
use crate::array::eval::alloc_words;
use crate::array::layout::{numel, Layout};
use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::philox::{blocks, record, Counter, Kind};
use crate::runtime::Device;

/// A random generator on a device (NumPy's `numpy.random.default_rng(seed)`).
#[derive(Clone, Debug)]
pub struct Generator {
    device: Device,
    at: Counter,
}

impl Generator {
    /// Stream 0 of `seed`.
    pub fn new(device: &Device, seed: u64) -> Generator {
        Generator::stream(device, seed, 0)
    }

    /// Stream `stream` of `seed`: independent of the seed's other streams (a different
    /// counter range), for one generator per device or per worker.
    pub fn stream(device: &Device, seed: u64, stream: u64) -> Generator {
        Generator {
            device: device.clone(),
            at: Counter {
                key: seed,
                stream,
                block: 0,
            },
        }
    }

    /// The device it draws on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Where the next draw starts (key, stream, block).
    pub fn counter(&self) -> Counter {
        self.at
    }

    fn draw(&mut self, shape: &[usize], dtype: DType, kind: Kind) -> Result<Array> {
        let n = numel(shape);
        let data = alloc_words(&self.device, n)?;
        let mut rec = Recorder::new(&self.device);
        record(&mut rec, data.buffer(), n, self.at, kind)?;
        rec.submit()?;
        self.at.block = self.at.block.wrapping_add(blocks(n));
        Ok(Array::from_strided(
            &self.device,
            dtype,
            Strided {
                data,
                layout: Layout::contiguous(shape),
            },
        ))
    }

    /// The raw 32-bit words (uint32).
    pub fn bits(&mut self, shape: &[usize]) -> Result<Array> {
        self.draw(shape, DType::UInt32, Kind::Bits)
    }

    /// float32 values in [0, 1), 24 random bits each.
    pub fn random(&mut self, shape: &[usize]) -> Result<Array> {
        self.uniform(0.0, 1.0, shape)
    }

    /// float32 values in [low, high).
    pub fn uniform(&mut self, low: f64, high: f64, shape: &[usize]) -> Result<Array> {
        if !(low.is_finite() && high.is_finite()) || high < low {
            return Err(Error::InvalidArgument {
                op: "uniform",
                name: "high",
                expected: "finite bounds with low <= high".into(),
                found: format!("low {low}, high {high}"),
            });
        }
        self.draw(
            shape,
            DType::Float32,
            Kind::Uniform {
                low: low as f32,
                high: high as f32,
            },
        )
    }

    /// float32 values from a normal distribution (Box-Muller).
    pub fn normal(&mut self, mean: f64, std: f64, shape: &[usize]) -> Result<Array> {
        if !(mean.is_finite() && std.is_finite()) || std < 0.0 {
            return Err(Error::InvalidArgument {
                op: "normal",
                name: "scale",
                expected: "a finite mean and a finite scale >= 0".into(),
                found: format!("loc {mean}, scale {std}"),
            });
        }
        self.draw(
            shape,
            DType::Float32,
            Kind::Normal {
                mean: mean as f32,
                std: std as f32,
            },
        )
    }

    /// Integers in [low, high) of an integer `dtype` (NumPy's `integers`, `endpoint=False`).
    pub fn integers(
        &mut self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        let (lo, hi) = dtype.range();
        let ok = matches!(dtype.kind(), DKind::Signed | DKind::Unsigned)
            && low < high
            && low as f64 >= lo
            && (high - 1) as f64 <= hi;
        if !ok {
            return Err(Error::InvalidArgument {
                op: "integers",
                name: "high",
                expected: format!(
                    "low < high within an integer dtype's range (found dtype {dtype})"
                ),
                found: format!("low {low}, high {high}"),
            });
        }
        let range = (high - low) as u64;
        if range > u32::MAX as u64 {
            return Err(Error::InvalidArgument {
                op: "integers",
                name: "high",
                expected: "high - low below 2^32".into(),
                found: range.to_string(),
            });
        }
        self.draw(
            shape,
            dtype,
            Kind::Integers {
                low: low as i32 as u32,
                range: range as u32,
            },
        )
    }
}
