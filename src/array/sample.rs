//! Sampling with a [`Generator`]: `permutation`, `shuffle` and `choice` (NumPy's
//! `Generator` methods), on the device and reproducible by seed.
//!
//! A permutation is the stable argsort of n random 32-bit keys: every order is equally
//! likely up to ties between keys, which keep their positions' order (a bias of order
//! n²/2³³, negligible for the sizes a 32-bit index reaches). `choice` with probabilities
//! and replacement searches a uniform draw in the probabilities' running sum; without
//! replacement it keeps the k largest of `log(u) / p` (Efraimidis–Spirakis), which draws as
//! NumPy's successive weighted draws do.

use crate::array::array::Array;
use crate::array::dtype::DType;
use crate::array::layout::Index;
use crate::array::ops::Binary;
use crate::array::random::Generator;
use crate::array::reduce::{normalize_axes, Reduce};
use crate::error::{Error, Result};

impl Generator {
    /// A random permutation of `0..n` (int32).
    pub fn permutation(&mut self, n: usize) -> Result<Array> {
        if n > i32::MAX as usize {
            return Err(Error::InvalidArgument {
                op: "permutation",
                name: "n",
                expected: format!("at most {}", i32::MAX),
                found: n.to_string(),
            });
        }
        if n == 0 {
            return Array::empty(self.device(), &[0], DType::Int32);
        }
        self.bits(&[n])?.argsort(0, false)
    }

    /// `x` with its elements along `axis` in a random order (a copy).
    pub fn permuted(&mut self, x: &Array, axis: isize) -> Result<Array> {
        if x.ndim() == 0 {
            return Err(Error::InvalidArgument {
                op: "permutation",
                name: "x",
                expected: "an array of at least one axis".into(),
                found: "a 0-d array".into(),
            });
        }
        let a = normalize_axes("permutation", x.ndim(), Some(&[axis]))?[0];
        let p = self.permutation(x.shape()[a])?;
        x.take(&p, a as isize)
    }

    /// Reorders `x`'s elements along `axis` at random, in place.
    pub fn shuffle(&mut self, x: &Array, axis: isize) -> Result<()> {
        let y = self.permuted(x, axis)?;
        x.assign(&y)
    }

    /// `shape` positions drawn from `0..n` (int32): with or without replacement, uniformly
    /// or with probabilities `p` (a 1-D float array of n values, each >= 0, summing to 1
    /// within float32's √eps, checked as NumPy checks them; the sums are read back).
    pub fn choice(
        &mut self,
        n: usize,
        shape: &[usize],
        replace: bool,
        p: Option<&Array>,
    ) -> Result<Array> {
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op: "choice",
            name,
            expected,
            found,
        };
        let k = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| {
                bad(
                    "size",
                    "a shape whose size fits".into(),
                    format!("{shape:?}"),
                )
            })?;
        if n == 0 && k > 0 {
            return Err(bad(
                "a",
                "a non-empty population when samples are taken".into(),
                "an empty one".into(),
            ));
        }
        if n > i32::MAX as usize {
            return Err(bad(
                "a",
                format!("at most {} items", i32::MAX),
                n.to_string(),
            ));
        }
        if !replace && k > n {
            return Err(bad(
                "size",
                format!("at most the population's {n} samples without replacement"),
                k.to_string(),
            ));
        }
        let dims: Vec<Option<usize>> = shape.iter().map(|&d| Some(d)).collect();
        if k == 0 {
            return Array::empty(self.device(), shape, DType::Int32);
        }
        let Some(p) = p else {
            return if replace {
                self.integers(0, n as i64, shape, DType::Int32)
            } else {
                self.permutation(n)?
                    .index(&[Index::Slice {
                        start: None,
                        stop: Some(k as isize),
                        step: None,
                    }])?
                    .reshape(&dims)
            };
        };
        if p.ndim() != 1 || p.size() != n || !p.dtype().is_float() {
            return Err(bad(
                "p",
                format!("a 1-D float array of the population's {n} probabilities"),
                format!("shape {:?} of {}", p.shape(), p.dtype()),
            ));
        }
        let low = p.reduce(Reduce::Min, None, false)?.to_f64_vec()?[0];
        let total = p.sum(None, false)?.to_f64_vec()?[0];
        let tol = (f32::EPSILON as f64).sqrt();
        if low.is_nan() || low < 0.0 || (total - 1.0).abs().is_nan() || (total - 1.0).abs() > tol {
            return Err(bad(
                "p",
                "probabilities >= 0 that sum to 1".into(),
                format!("minimum {low}, sum {total}"),
            ));
        }
        if replace {
            let cdf = p.cumulative_sum(0, false)?;
            let last = cdf.index(&[Index::At(-1)])?;
            let u = self.random(&[k])?.mul(&last)?;
            let at = cdf.searchsorted(&u, true)?.minimum_scalar((n - 1) as i64)?;
            return at.reshape(&dims);
        }
        let nonzero = p.greater_scalar(0)?.sum(None, false)?.to_f64_vec()?[0] as usize;
        if nonzero < k {
            return Err(bad(
                "p",
                format!("at least {k} nonzero probabilities for {k} samples without replacement"),
                nonzero.to_string(),
            ));
        }
        // Efraimidis–Spirakis keys log(v)/p with v in (0, 1] (1 - u: `random` may give 0,
        // whose log would tie a drawable item with the undrawable ones); items of
        // probability 0 (-0.0 too) get -inf, so they are never among the first k.
        let v = self
            .random(&[n])?
            .scalar_binary(1.0.into(), Binary::Subtract)?;
        let drawable = p.greater_scalar(0)?;
        let keys = Array::where_(
            &drawable,
            &v.log()?.div(p)?,
            &Array::scalar(p.device(), f64::NEG_INFINITY, DType::Float32),
        )?;
        keys.argsort(0, true)?
            .index(&[Index::Slice {
                start: None,
                stop: Some(k as isize),
                step: None,
            }])?
            .reshape(&dims)
    }
}
