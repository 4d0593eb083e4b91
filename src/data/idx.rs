//! The IDX format (LeCun's, MNIST's): parsing with full validation.
//!
//! IDX files (LeCun's format) are `0x00 0x00 dtype ndim`, then `ndim` big-endian u32
//! dimensions, then the data. Only unsigned bytes (`0x08`) are used by MNIST and accepted here.
//! Files may be gzip-compressed (detected by their magic). Everything is validated before
//! anything of the claimed size is allocated: magic, dtype, dimensions and the exact data
//! length, with [`Error::Malformed`] naming the file and what was wrong.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// An IDX array of bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idx {
    /// Dimensions, e.g. `[60000, 28, 28]`.
    pub dims: Vec<usize>,
    /// Row-major data, `dims.product()` bytes.
    pub data: Vec<u8>,
}

/// The largest IDX payload accepted (2 GiB): beyond it a header is taken as corrupt.
pub const MAX_IDX_BYTES: u64 = 1 << 31;

pub(crate) fn malformed(
    path: &Path,
    expected: impl Into<String>,
    found: impl Into<String>,
) -> Error {
    Error::Malformed {
        path: path.to_path_buf(),
        format: "IDX",
        expected: expected.into(),
        found: found.into(),
    }
}

/// Parses IDX bytes (raw or gzip); `path` is only used in error messages.
pub fn parse_idx(path: &Path, bytes: &[u8]) -> Result<Idx> {
    if bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b {
        let mut dec = flate2::read::GzDecoder::new(bytes);
        let mut head = [0u8; 4];
        dec.read_exact(&mut head)
            .map_err(|e| malformed(path, "a gzip stream holding an IDX header", format!("{e}")))?;
        let ndim = check_magic(path, head)?;
        let mut dims_raw = vec![0u8; ndim * 4];
        dec.read_exact(&mut dims_raw).map_err(|_| {
            malformed(
                path,
                format!("{ndim} dimensions"),
                "the file ends inside the header",
            )
        })?;
        let (dims, claimed) = parse_dims(path, &dims_raw)?;
        // Read at most one byte more than claimed, so a huge or short claim is caught
        // without allocating what it claims.
        let mut data = Vec::new();
        dec.take(claimed + 1)
            .read_to_end(&mut data)
            .map_err(|e| malformed(path, "a valid gzip stream", format!("{e}")))?;
        if data.len() as u64 != claimed {
            return Err(malformed(
                path,
                format!("{claimed} data bytes for dimensions {dims:?}"),
                if data.len() as u64 > claimed {
                    "more data than that".to_string()
                } else {
                    format!("{} bytes", data.len())
                },
            ));
        }
        return Ok(Idx { dims, data });
    }
    if bytes.len() < 4 {
        return Err(malformed(
            path,
            "at least a 4-byte header",
            format!("{} bytes", bytes.len()),
        ));
    }
    let ndim = check_magic(path, [bytes[0], bytes[1], bytes[2], bytes[3]])?;
    let header = 4 + 4 * ndim;
    if bytes.len() < header {
        return Err(malformed(
            path,
            format!("{header} header bytes"),
            format!("{} bytes", bytes.len()),
        ));
    }
    let (dims, claimed) = parse_dims(path, &bytes[4..header])?;
    let actual = (bytes.len() - header) as u64;
    if actual != claimed {
        return Err(malformed(
            path,
            format!("{claimed} data bytes for dimensions {dims:?}"),
            format!("{actual} bytes"),
        ));
    }
    Ok(Idx {
        dims,
        data: bytes[header..].to_vec(),
    })
}

fn check_magic(path: &Path, head: [u8; 4]) -> Result<usize> {
    if head[0] != 0 || head[1] != 0 {
        return Err(malformed(
            path,
            "magic 00 00 (IDX)",
            format!("{:02x} {:02x}", head[0], head[1]),
        ));
    }
    if head[2] != 0x08 {
        return Err(malformed(
            path,
            "data type 0x08 (unsigned byte)",
            format!("0x{:02x}", head[2]),
        ));
    }
    let ndim = head[3] as usize;
    if ndim == 0 {
        return Err(malformed(path, "at least one dimension", "0"));
    }
    Ok(ndim)
}

fn parse_dims(path: &Path, raw: &[u8]) -> Result<(Vec<usize>, u64)> {
    let dims: Vec<usize> = raw
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let mut claimed: u64 = 1;
    for &d in &dims {
        claimed = claimed.saturating_mul(d as u64);
    }
    if claimed > MAX_IDX_BYTES {
        return Err(malformed(
            path,
            format!("at most {MAX_IDX_BYTES} data bytes"),
            format!("dimensions {dims:?} claiming {claimed}"),
        ));
    }
    Ok((dims, claimed))
}

/// Reads an IDX file (raw or gzip).
pub fn read_idx(path: &Path) -> Result<Idx> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_idx(path, &bytes)
}
