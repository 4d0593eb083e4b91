//! What a dataset's constructors check before anything reaches the device: the shape, and
//! that the features are finite (named by row and column when not).

use crate::data::dataset::Dataset;
use crate::error::{Error, Result};

impl Dataset {
    /// Refuses features that are not finite, naming the first: a NaN or an infinity would
    /// not always surface as a NaN loss (relu maps NaN to 0 on some adapters), so a model
    /// could train on garbage without a word.
    pub(crate) fn finite(x: &[f32], row_len: usize) -> Result<()> {
        match x.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(i) => Err(Error::InvalidArgument {
                op: "Dataset",
                name: "x",
                expected: "finite feature values".into(),
                found: format!("{} at row {}, column {}", x[i], i / row_len, i % row_len),
            }),
        }
    }

    /// Refuses an empty shape, and values that are not `rows × row_len`.
    pub(crate) fn check(rows: usize, row_len: usize, len: usize) -> Result<()> {
        if rows == 0 || row_len == 0 {
            return Err(Error::InvalidArgument {
                op: "Dataset",
                name: "shape",
                expected: "at least one row of at least one feature".into(),
                found: format!("{rows} rows of {row_len}"),
            });
        }
        if rows.checked_mul(row_len) != Some(len) {
            return Err(Error::ShapeMismatch {
                op: "Dataset",
                expected: format!(
                    "{rows} rows (one per label) × {row_len} features = {} values",
                    rows * row_len
                ),
                found: format!("{len} values"),
            });
        }
        Ok(())
    }
}
