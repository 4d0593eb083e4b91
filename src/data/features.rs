//! What a dataset holds on the device, column by column: features (bytes looked up in a
//! 256-entry palette when gathered, floats, or integer ids) and targets (class labels or
//! dense rows), and the host-side analysis that decides how floats are stored (a palette, a
//! multiply or a divide reproducing them bit for bit).

use crate::error::Result;
use crate::exec::recorder::Recorder;
use crate::kernels::gather::{self, Lookup, Rows, PALETTE_LEN};
use crate::kernels::windows::{Draw, Tokens};
use crate::ops::Labels;
use crate::runtime::Device;
use crate::tensor::{ByteBuffer, IndexBuffer, Tensor};

/// Features of a [`crate::data::Dataset`] column on the device.
#[derive(Debug)]
pub(crate) enum Features {
    /// Bytes, turned into floats when gathered as the [`Lookup`] says: scaled (pixels / 255),
    /// divided, or through the palette of [`PALETTE_LEN`] floats (bound in every mode, and
    /// holding what each byte stands for).
    U8(ByteBuffer, Tensor, Lookup),
    /// Plain floats.
    F32(Tensor),
    /// Integer ids (token or class ids), gathered as floats (exact below 2^24).
    Ids(IndexBuffer),
    /// A text's tokens, from which each step draws its windows (inputs and targets in one
    /// dispatch, [`crate::kernels::windows`]) instead of gathering rows.
    Windows(WindowSource),
}

/// Where a text dataset's windows come from: the tokens of one split on the device, the
/// stream's seed, and the window length ([`crate::data::Text::device_windows`]).
#[derive(Debug)]
pub(crate) struct WindowSource {
    pub(crate) tokens: Tokens,
    pub(crate) seed: u64,
    pub(crate) block: usize,
}

impl WindowSource {
    /// The draw of rows `row0..row0 + batch` at step `step` (a training step's optimizer
    /// step; 0 for evaluation).
    pub(crate) fn draw(&self, step: u64, row0: usize, batch: usize) -> Draw {
        Draw {
            seed: self.seed,
            step,
            row0,
            batch,
            block: self.block,
        }
    }
}

impl Features {
    /// Bytes when `x` has at most [`PALETTE_LEN`] distinct values (compared bit for bit, so
    /// -0.0, 0.0 and each NaN pattern stay what they were), else floats. Values that are
    /// exactly `k · s` or `k / d` for bytes k (pixels scaled in f32, or divided by 255 in
    /// f64 and rounded, as NumPy's `x / 255.0`) are gathered by a multiply or a divide, the
    /// divide only after this device reproduced all 256 quotients bit for bit; other values
    /// go through the palette.
    pub(crate) fn from_f32(device: &Device, x: &[f32]) -> Result<Features> {
        let Some((bytes, palette)) = palette_of(x) else {
            return Ok(Features::F32(Tensor::from_slice(device, x, &[x.len()])?));
        };
        let used = &palette[..distinct(&bytes)];
        if let Some((lookup, remap)) = affine(used) {
            let table: Vec<f32> = (0..PALETTE_LEN)
                .map(|k| lookup.value(k as u8, &[]))
                .collect();
            let pal = Tensor::from_slice(device, &table, &[PALETTE_LEN])?;
            let exact = match lookup {
                Lookup::Divide(_) => divides_exactly(device, &pal, &table, lookup)?,
                _ => true,
            };
            if exact {
                let bytes: Vec<u8> = bytes.iter().map(|&b| remap[b as usize]).collect();
                return Ok(Features::U8(ByteBuffer::new(device, &bytes)?, pal, lookup));
            }
        }
        Ok(Features::U8(
            ByteBuffer::new(device, &bytes)?,
            Tensor::from_slice(device, &palette, &[PALETTE_LEN])?,
            Lookup::Palette,
        ))
    }
}

/// How many palette entries the bytes use (indices are given in order of first use).
fn distinct(bytes: &[u8]) -> usize {
    bytes.iter().map(|&b| b as usize + 1).max().unwrap_or(0)
}

/// A multiply or divide that reproduces every value of `used` from a byte, and the byte
/// each palette index becomes: `k / d` with d the rounded reciprocal of the smallest
/// positive value (`x / 255.0`), else `k · s` with s that value (`x * (1/255)`).
fn affine(used: &[f32]) -> Option<(Lookup, [u8; PALETTE_LEN])> {
    let smallest = used
        .iter()
        .copied()
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f32::INFINITY, f32::min);
    if !smallest.is_finite() {
        return None;
    }
    // 255 first: images divided by 255 whose darkest non-zero pixel is not 1 still match.
    let d = (1.0 / smallest as f64).round() as f32;
    let candidates = [
        Some(Lookup::Divide(255.0)),
        (d.is_finite() && d >= 1.0 && d != 255.0).then_some(Lookup::Divide(d)),
        Some(Lookup::Multiply(1.0 / 255.0)),
        Some(Lookup::Multiply(smallest)),
    ];
    'next: for lookup in candidates.into_iter().flatten() {
        let mut remap = [0u8; PALETTE_LEN];
        for (i, &v) in used.iter().enumerate() {
            let k = match lookup {
                Lookup::Divide(d) => (v as f64 * d as f64).round(),
                Lookup::Multiply(s) => (v as f64 / s as f64).round(),
                Lookup::Palette => continue 'next,
            };
            if !(0.0..=255.0).contains(&k) || lookup.value(k as u8, &[]).to_bits() != v.to_bits() {
                continue 'next;
            }
            remap[i] = k as u8;
        }
        return Some((lookup, remap));
    }
    None
}

/// Whether this device's byte gather in `lookup`'s mode gives `want` (the host's values,
/// bound as `table`) bit for bit for all 256 bytes (WGSL's division may be off by 2.5 ULP;
/// lavapipe's is exact, GPUs' varies). Runs before the dataset's bytes are uploaded.
fn divides_exactly(device: &Device, table: &Tensor, want: &[f32], lookup: Lookup) -> Result<bool> {
    let all: Vec<u8> = (0..=255u8).collect();
    let data = ByteBuffer::new(device, &all)?;
    let idx = IndexBuffer::new(device, &[0])?;
    let out = Tensor::zeros(device, &[PALETTE_LEN])?;
    let mut rec = Recorder::new(device);
    let rows = Rows {
        indices: &idx,
        offset: 0,
        batch: 1,
        row_len: PALETTE_LEN,
        scale: 1.0,
    };
    gather::gather(&mut rec, &data, table, lookup, rows, out.buffer())?;
    rec.submit()?;
    let got = out.to_vec()?;
    let same = got
        .iter()
        .zip(want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    if !same {
        log::info!("this device's division is not exact for byte datasets; using a palette");
    }
    Ok(same)
}

/// `x` as indices into a palette of its distinct values, if it has at most [`PALETTE_LEN`]
/// of them: one pass with a small open-addressed table of bit patterns (the image data of a
/// typical dataset repeats the previous value often, which the first check catches).
pub(crate) fn palette_of(x: &[f32]) -> Option<(Vec<u8>, Vec<f32>)> {
    const SLOTS: usize = 1024; // a power of two, 4× the palette: short probes
    let mut keys = [0u32; SLOTS];
    let mut vals = [0u8; SLOTS];
    let mut used = [false; SLOTS];
    let mut palette: Vec<f32> = Vec::with_capacity(PALETTE_LEN);
    let mut bytes = Vec::with_capacity(x.len());
    let (mut last_bits, mut last_idx) = (None::<u32>, 0u8);
    for &v in x {
        let bits = v.to_bits();
        if last_bits == Some(bits) {
            bytes.push(last_idx);
            continue;
        }
        let mut slot = (bits.wrapping_mul(0x9E37_79B1) >> 22) as usize & (SLOTS - 1);
        let idx = loop {
            if !used[slot] {
                if palette.len() == PALETTE_LEN {
                    return None;
                }
                used[slot] = true;
                keys[slot] = bits;
                vals[slot] = palette.len() as u8;
                palette.push(v);
                break vals[slot];
            }
            if keys[slot] == bits {
                break vals[slot];
            }
            slot = (slot + 1) & (SLOTS - 1);
        };
        bytes.push(idx);
        last_bits = Some(bits);
        last_idx = idx;
    }
    palette.resize(PALETTE_LEN, 0.0);
    Some((bytes, palette))
}

impl Targets {
    /// The values as f32 on the device (class indices, or dense rows).
    pub(crate) fn tensor(&self) -> &Tensor {
        match self {
            Targets::Classes(l, _) => l.tensor(),
            Targets::Dense(t, _) => t,
        }
    }

    /// Values per sample: the labels per sample, or the dense row's length.
    pub(crate) fn len(&self) -> usize {
        match self {
            Targets::Classes(_, n) | Targets::Dense(_, n) => *n,
        }
    }

    /// The class labels, for targets that are classes.
    pub(crate) fn labels(&self) -> Option<&Labels> {
        match self {
            Targets::Classes(l, _) => Some(l),
            Targets::Dense(..) => None,
        }
    }
}

/// Targets of a [`crate::data::Dataset`] column on the device.
#[derive(Debug)]
pub(crate) enum Targets {
    /// Class indices (sparse categorical cross-entropy), this many per sample (one per
    /// position of a sequence; 1 for a label per sample).
    Classes(Labels, usize),
    /// Dense rows of this many values (one-hot or probabilities, binary targets, regression
    /// values), row-major.
    Dense(Tensor, usize),
}

/// One more input's values on the device, and the per-sample shape they have
/// ([`crate::data::Dataset::with_input`]).
#[derive(Debug)]
pub(crate) struct Column {
    pub(crate) features: Features,
    pub(crate) row_len: usize,
    pub(crate) shape: Vec<usize>,
}

/// An integer id column's running maxima: each position (row-major, with the row length)
/// whose id is larger than every id before it. The first id at or above a bound is always
/// one of them (every earlier id is below the bound, so below it), so this names the first
/// offending position for any bound, and is short for real data (about ln n entries for ids
/// in random order; one per distinct id at most).
#[derive(Clone, Debug, Default)]
pub(crate) struct IdRecords {
    /// (id, position), both increasing.
    records: Vec<(u32, usize)>,
    /// Ids per row.
    row_len: usize,
}

impl IdRecords {
    /// The records of `ids`, `row_len` per row.
    pub(crate) fn new(ids: &[u32], row_len: usize) -> IdRecords {
        let mut records: Vec<(u32, usize)> = Vec::new();
        for (i, &v) in ids.iter().enumerate() {
            if records.last().is_none_or(|&(m, _)| v > m) {
                records.push((v, i));
            }
        }
        IdRecords { records, row_len }
    }

    /// The first id at or above `bound`, with its row and column.
    pub(crate) fn first_at_least(&self, bound: u32) -> Option<(u32, usize, usize)> {
        let at = self.records.partition_point(|&(v, _)| v < bound);
        let &(v, i) = self.records.get(at)?;
        Some((v, i / self.row_len.max(1), i % self.row_len.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::{affine, palette_of};
    use crate::kernels::gather::Lookup;

    #[test]
    fn pixels_divided_or_scaled_are_recognised_exactly() {
        // Shuffled levels, as a dataset's first appearances come.
        let ks: Vec<u8> = (0..=255u8).rev().step_by(3).collect();
        let divided: Vec<f32> = ks.iter().map(|&k| (k as f64 / 255.0) as f32).collect();
        let (lookup, remap) = affine(&divided).expect("k / 255");
        assert_eq!(lookup, Lookup::Divide(255.0));
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(remap[i], k);
        }
        let scaled: Vec<f32> = ks.iter().map(|&k| k as f32 * (1.0 / 255.0)).collect();
        // f32(k)·f32(1/255) differs from k/255 for about half of the k: not a divide.
        assert_eq!(affine(&scaled).unwrap().0, Lookup::Multiply(1.0 / 255.0));
        let halves: Vec<f32> = (0..10).map(|k| k as f32 * 0.5).collect();
        assert_eq!(affine(&halves).unwrap().0, Lookup::Divide(2.0));
        // -0.0 is no byte's quotient; neither are values past 255 steps.
        assert!(affine(&[-0.0, 1.0 / 255.0]).is_none());
        assert!(affine(&[0.001, 1.0]).is_none());
        assert!(affine(&[(1.0f64 / 3.0) as f32, 0.7]).is_none());
    }

    #[test]
    fn palette_round_trips_bit_for_bit() {
        // Pixels divided by 255 in f64 and rounded to f32, as NumPy users produce them, with
        // both zeros, a NaN and 0.5: 253 levels and those three fill the 256 entries.
        let mut x: Vec<f32> = (0..253u32).map(|k| (k as f64 / 255.0) as f32).collect();
        x.extend([-0.0, f32::NAN, 0.0, 0.5, 0.5, (3.0f64 / 255.0) as f32]);
        let (bytes, pal) = palette_of(&x).expect("256 distinct values fit");
        assert_eq!(pal.len(), 256);
        assert_eq!(bytes.len(), x.len());
        for (b, v) in bytes.iter().zip(&x) {
            assert_eq!(pal[*b as usize].to_bits(), v.to_bits());
        }
        // -0.0 and 0.0 are different entries.
        assert_ne!(bytes[0], bytes[253]);
    }

    #[test]
    fn more_than_256_distinct_values_are_refused() {
        let x: Vec<f32> = (0..257).map(|k| k as f32).collect();
        assert!(palette_of(&x).is_none());
        assert!(palette_of(&x[..256]).is_some());
        assert!(palette_of(&[]).is_some());
    }
}
