//! The standard's elementwise functions as named methods (`x.exp()`, `x.add(&y)`,
//! `x.mul_scalar(2.0)`), each a one-line call of [`Array::unary`] or [`Array::binary`].

use crate::array::array::{Array, Scalar};
use crate::array::ops::{Binary, Unary};
use crate::error::Result;

macro_rules! unary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("`", stringify!($name), "(x)`, elementwise.")]
                pub fn $name(&self) -> Result<Array> {
                    self.unary(Unary::$op)
                }
            )*
        }
    };
}

macro_rules! binary_methods {
    ($($name:ident, $scalar:ident => $op:ident),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("`", stringify!($op), "(x, y)`, elementwise with broadcasting.")]
                pub fn $name(&self, other: &Array) -> Result<Array> {
                    self.binary(Binary::$op, other)
                }

                #[doc = concat!("`", stringify!($op), "(x, value)` with a scalar.")]
                pub fn $scalar(&self, value: impl Into<Scalar>) -> Result<Array> {
                    self.binary_scalar(Binary::$op, value.into())
                }
            )*
        }
    };
}

unary_methods! {
    neg => Negative, abs => Abs, sign => Sign, square => Square, sqrt => Sqrt, exp => Exp,
    expm1 => Expm1, log => Log, log1p => Log1p, log2 => Log2, log10 => Log10, sin => Sin,
    cos => Cos, tan => Tan, asin => Asin, acos => Acos, atan => Atan, sinh => Sinh,
    cosh => Cosh, tanh => Tanh, asinh => Asinh, acosh => Acosh, atanh => Atanh,
    floor => Floor, ceil => Ceil, round => Round, trunc => Trunc, isnan => IsNan,
    isinf => IsInf, isfinite => IsFinite, logical_not => LogicalNot,
    bitwise_invert => BitwiseInvert, conj => Conj, real => Real, imag => Imag,
}

binary_methods! {
    add, add_scalar => Add,
    sub, sub_scalar => Subtract,
    mul, mul_scalar => Multiply,
    div, div_scalar => Divide,
    floor_divide, floor_divide_scalar => FloorDivide,
    remainder, remainder_scalar => Remainder,
    pow, pow_scalar => Pow,
    maximum, maximum_scalar => Maximum,
    minimum, minimum_scalar => Minimum,
    equal, equal_scalar => Equal,
    not_equal, not_equal_scalar => NotEqual,
    less, less_scalar => Less,
    less_equal, less_equal_scalar => LessEqual,
    greater, greater_scalar => Greater,
    greater_equal, greater_equal_scalar => GreaterEqual,
}

impl Array {
    /// Values clipped to `[min, max]` (either bound optional); NaN stays NaN.
    pub fn clip(&self, min: Option<f64>, max: Option<f64>) -> Result<Array> {
        if self.dtype().is_wide_int() {
            // The bounds as int64/uint64 scalars (rounded inward, saturated to the range):
            // a float bound would compute in float32 and round the values.
            let (lo, hi) = self.dtype().range();
            let bound = |v: f64| Array::scalar(self.device(), v.clamp(lo, hi), self.dtype());
            let mut x = self.clone();
            if let Some(v) = min {
                x = x.maximum(&bound(v.ceil()))?;
            }
            if let Some(v) = max {
                x = x.minimum(&bound(v.floor()))?;
            }
            return Ok(x);
        }
        let mut x = self.clone();
        if let Some(lo) = min {
            x = x.maximum_scalar(lo)?.astype(self.dtype())?;
        }
        if let Some(hi) = max {
            x = x.minimum_scalar(hi)?.astype(self.dtype())?;
        }
        Ok(x)
    }
}
