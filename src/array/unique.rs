//! The standard's `unique_values`, `unique_counts`, `unique_inverse` and `unique_all`, on
//! the device: a stable argsort of the flattened values, a head flag where a value differs
//! from the one before it (`!=`, so each NaN is its own value, as the standard says, and
//! -0.0 equals 0.0), the heads' positions by compaction (which reads the count back), then
//! gathers and one scatter. The values come out sorted (NaN last).

use crate::array::array::Array;
use crate::array::dtype::DType;
use crate::array::indexing::Indexer;
use crate::array::layout::Index;
use crate::error::Result;

/// What [`Array::unique`] computed: the distinct values, and what was asked for beside them.
#[derive(Clone, Debug)]
pub struct Unique {
    /// The distinct values, sorted (1-D).
    pub values: Array,
    /// Where each value first occurs in the flattened input (int32).
    pub indices: Option<Array>,
    /// For each input element, its value's position in `values` (int32, the input's shape).
    pub inverse: Option<Array>,
    /// How often each value occurs (int32).
    pub counts: Option<Array>,
}

fn slice(start: Option<isize>, stop: Option<isize>) -> Index {
    Index::Slice {
        start,
        stop,
        step: None,
    }
}

impl Array {
    /// The distinct values (sorted, NaNs each distinct), and on request each one's first
    /// position, the inverse (input's shape) and the counts.
    pub fn unique(&self, indices: bool, inverse: bool, counts: bool) -> Result<Unique> {
        let device = self.device().clone();
        let n = self.size();
        let flat = self.reshape(&[Some(n)])?;
        if n == 0 {
            let none = |want: bool| -> Result<Option<Array>> {
                Ok(if want {
                    Some(Array::empty(&device, &[0], DType::Int32)?)
                } else {
                    None
                })
            };
            return Ok(Unique {
                values: Array::empty(&device, &[0], self.dtype())?,
                indices: none(indices)?,
                inverse: if inverse {
                    Some(Array::empty(&device, self.shape(), DType::Int32)?)
                } else {
                    None
                },
                counts: none(counts)?,
            });
        }
        let perm = flat.argsort(0, false)?;
        let sorted = flat.take(&perm, 0)?;
        // heads[i]: sorted[i] starts a run of equal values.
        let heads = Array::full(&device, &[n], 1.0, DType::Bool)?.copy()?;
        let differs = sorted
            .index(&[slice(Some(1), None)])?
            .not_equal(&sorted.index(&[slice(None, Some(-1))])?)?;
        heads.index(&[slice(Some(1), None)])?.assign(&differs)?;
        let at = heads.flat_nonzero()?;
        let u = at.size();
        let values = sorted.take(&at, 0)?;
        let indices = if indices {
            Some(perm.take(&at, 0)?)
        } else {
            None
        };
        let counts = if counts {
            // The next run's start (n after the last) less this run's.
            let next = Array::full(&device, &[u], n as f64, DType::Int32)?.copy()?;
            next.index(&[slice(None, Some(-1))])?
                .assign(&at.index(&[slice(Some(1), None)])?)?;
            let c = next.sub(&at)?;
            c.eval()?;
            Some(c)
        } else {
            None
        };
        let inverse = if inverse {
            let group = heads.cumulative_sum(0, false)?.sub_scalar(1)?;
            let inv = Array::empty(&device, &[n], DType::Int32)?;
            inv.setitem(&[Indexer::Array(perm.clone())], &group)?;
            Some(inv.reshape(&self.shape().iter().map(|&d| Some(d)).collect::<Vec<_>>())?)
        } else {
            None
        };
        Ok(Unique {
            values,
            indices,
            inverse,
            counts,
        })
    }

    /// The distinct values, sorted (the standard's `unique_values`).
    pub fn unique_values(&self) -> Result<Array> {
        Ok(self.unique(false, false, false)?.values)
    }
}
