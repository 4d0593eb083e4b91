//! The array dtypes, how each is held on the device, and the array API standard's type
//! promotion.
//!
//! Every dtype is held in 32-bit words on the device (`bool`, the unsigned types as `u32`,
//! the signed ones as `i32`, `float32` as `f32`): WGSL has no 8- or 16-bit storage types
//! without extensions, and a word per element keeps every kernel one load and one store. An
//! 8- or 16-bit integer is wrapped back into its range after each operation (as NumPy's
//! arithmetic wraps), so values never differ from the narrow type's; only memory is wider
//! (four times for `int8`). The host side (`from_bytes`, `to_bytes`) uses each dtype's own
//! width.
//!
//! `complex64` and `float64` take two words an element (real then imaginary; the f64's
//! low then high half, so NumPy's little-endian bytes are the words). A kernel builds an f64
//! from its words as `bitcast<f64>((u64(hi) << 32u) | u64(lo))`: naga's `bitcast` keeps the
//! width (`bitcast<f64>(vec2<u32>)` is invalid), and the alternative, `array<f64>` bindings,
//! would type each buffer by one dtype and leave the metadata's scalar words (an
//! `array<u32>`) still needing the 64-bit integer path. So float64 needs an adapter with
//! both `SHADER_F64` and `SHADER_INT64` (every Vulkan driver with `shaderFloat64` this was
//! tried on also has `shaderInt64`; Metal has neither).
//!
//! `float16` is held the same way: an `f32` word whose value is always a binary16 value,
//! rounded (to nearest, ties to even, with subnormals, overflow to infinity) after every
//! operation by `f16_round_` in `shaders/f16_round.wgsl` (shared with the matmul and
//! convolution kernels' float16 operands), written on the bits because WGSL's
//! `quantizeToF16` leaves out-of-range values indeterminate and may flush subnormals.
//! Computing in f32 and rounding once is what NumPy does for float16, and for
//! `+ - * / sqrt` it equals binary16 arithmetic exactly (f32 has more than 2·11 + 2 bits), so
//! it needs no `SHADER_F16` and works on every adapter; memory is twice a packed float16.
//! The host conversions use the `half` crate (kept up, correctly rounded, and already in
//! the build through naga).

use crate::error::{Error, Result};

/// An array's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `bool`: 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`: two device words (low then high half, two's complement); only on adapters
    /// with `SHADER_INT64` ([`DType::check_device`]).
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`: two device words (low then high half); only with `SHADER_INT64`.
    UInt64,
    /// `float16`: held as an f32 word rounded to binary16 after every operation.
    Float16,
    /// `float32`.
    Float32,
    /// `float64`: two device words (the value's low then high 32 bits); only on adapters
    /// with `SHADER_F64` and `SHADER_INT64` ([`DType::check_device`]).
    Float64,
    /// `complex64`: a pair of `float32` (real, imaginary), two device words.
    Complex64,
}

/// What family a dtype belongs to, for promotion and for which operations apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `bool`.
    Bool,
    /// Signed integers.
    Signed,
    /// Unsigned integers.
    Unsigned,
    /// Real floating point.
    Float,
    /// Complex floating point.
    Complex,
}

impl DType {
    /// Every dtype, in the order the standard lists them.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
    ];

    /// The standard's (and NumPy's) name.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Float16 => "float16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Complex64 => "complex64",
        }
    }

    /// The dtype of a name (`"float32"`, `"int8"`, …); a name this library does not hold is
    /// an error that lists the ones it does.
    pub fn from_name(name: &str) -> Result<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| Error::InvalidArgument {
                op: "DType::from_name",
                name: "dtype",
                expected: format!(
                    "one of {} (complex128 is not supported yet)",
                    DType::ALL.map(|d| d.name()).join(", ")
                ),
                found: format!("{name:?}"),
            })
    }

    /// Its family.
    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => Kind::Signed,
            DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => Kind::Unsigned,
            DType::Float16 | DType::Float32 | DType::Float64 => Kind::Float,
            DType::Complex64 => Kind::Complex,
        }
    }

    /// Bits of one element on the host.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 8,
            DType::Int16 | DType::UInt16 | DType::Float16 => 16,
            DType::Int32 | DType::UInt32 | DType::Float32 => 32,
            DType::Int64 | DType::UInt64 | DType::Float64 | DType::Complex64 => 64,
        }
    }

    /// Bytes of one element on the host (`itemsize`).
    pub fn host_size(self) -> usize {
        (self.bits() / 8) as usize
    }

    /// Whether it is an integer type (signed or unsigned, not bool).
    pub fn is_integer(self) -> bool {
        matches!(self.kind(), Kind::Signed | Kind::Unsigned)
    }

    /// Whether it is a real floating-point type.
    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// Whether it is a complex type.
    pub fn is_complex(self) -> bool {
        self.kind() == Kind::Complex
    }

    /// Device words per element: 2 for `complex64` (real then imaginary, NumPy's order),
    /// `float64`, `int64` and `uint64` (low then high half), 1 for every other dtype.
    pub fn words(self) -> usize {
        if self.bits() == 64 {
            2
        } else {
            1
        }
    }

    /// Whether it is `int64` or `uint64` (two words joined as an `i64`/`u64` in kernels).
    pub fn is_wide_int(self) -> bool {
        matches!(self, DType::Int64 | DType::UInt64)
    }

    /// `Error::DType` for an operation whose kernels read one word per element, when `self`
    /// takes two (`complex64`, `float64`, `int64`, `uint64`): they call this before touching
    /// the data.
    pub(crate) fn refuse_wide(self, op: &'static str) -> Result<()> {
        if self.words() != 1 {
            return Err(Error::DType {
                op,
                expected: "a 32-bit real or boolean dtype (complex64, float64, int64 and uint64 are not supported here yet)".into(),
                found: self.name().into(),
            });
        }
        Ok(())
    }

    /// `Error::DType` when `device` cannot compute in this dtype: `float64` needs an adapter
    /// with `SHADER_F64` and `SHADER_INT64` (see the module docs), `int64` and `uint64` one
    /// with `SHADER_INT64`; every other dtype runs everywhere.
    pub fn check_device(self, device: &crate::runtime::Device, op: &'static str) -> Result<()> {
        if self.is_wide_int() && !device.info().features.shader_int64 {
            return Err(Error::DType {
                op,
                expected: format!(
                    "a dtype this device computes in: {} needs an adapter with SHADER_INT64; this one ({}) lacks SHADER_INT64",
                    self.name(),
                    device.name(),
                ),
                found: self.name().into(),
            });
        }
        if self == DType::Float64 {
            let f = device.info().features;
            if !(f.shader_f64 && f.shader_int64) {
                return Err(Error::DType {
                    op,
                    expected: format!(
                        "a dtype this device computes in: float64 needs an adapter with SHADER_F64 and SHADER_INT64; this one ({}) has SHADER_F64 {} and SHADER_INT64 {}",
                        device.name(),
                        if f.shader_f64 { "yes" } else { "no" },
                        if f.shader_int64 { "yes" } else { "no" },
                    ),
                    found: self.name().into(),
                });
            }
        }
        Ok(())
    }

    /// The WGSL type of its value in a kernel (`vec2<f32>` for complex64; the others one
    /// word).
    pub fn wgsl(self) -> &'static str {
        match self.kind() {
            _ if self == DType::Int64 => "i64",
            _ if self == DType::UInt64 => "u64",
            Kind::Bool | Kind::Unsigned => "u32",
            Kind::Signed => "i32",
            Kind::Float if self == DType::Float64 => "f64",
            Kind::Float => "f32",
            Kind::Complex => "vec2<f32>",
        }
    }

    /// A WGSL expression that brings `x` (of this dtype's word type) back into the dtype's
    /// range after an operation that may have left it: integer wrap-around for the narrow
    /// types, 0/1 for bool, rounding to binary16 for float16.
    pub(crate) fn wrap(self, x: &str) -> String {
        match self {
            DType::Int8 => format!("(({x} << 24u) >> 24u)"),
            DType::Int16 => format!("(({x} << 16u) >> 16u)"),
            DType::UInt8 => format!("({x} & 0xffu)"),
            DType::UInt16 => format!("({x} & 0xffffu)"),
            DType::Bool => format!("select(0u, 1u, {x} != 0u)"),
            DType::Float16 => format!("f16_round_({x})"),
            _ => x.to_string(),
        }
    }

    /// The integers an integer (or bool) dtype holds, exactly; `None` for the float and
    /// complex dtypes. [`DType::range`] gives them as f64, which cannot tell `i64::MAX` from
    /// `i64::MAX + 1`.
    pub fn int_bounds(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::Bool => (0, 1),
            DType::Int8 => (i8::MIN.into(), i8::MAX.into()),
            DType::Int16 => (i16::MIN.into(), i16::MAX.into()),
            DType::Int32 => (i32::MIN.into(), i32::MAX.into()),
            DType::Int64 => (i64::MIN.into(), i64::MAX.into()),
            DType::UInt8 => (0, u8::MAX.into()),
            DType::UInt16 => (0, u16::MAX.into()),
            DType::UInt32 => (0, u32::MAX.into()),
            DType::UInt64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }

    /// The smallest and largest value it holds, as f64.
    pub fn range(self) -> (f64, f64) {
        match self {
            DType::Bool => (0.0, 1.0),
            DType::Int8 => (i8::MIN as f64, i8::MAX as f64),
            DType::Int16 => (i16::MIN as f64, i16::MAX as f64),
            DType::Int32 => (i32::MIN as f64, i32::MAX as f64),
            DType::UInt8 => (0.0, u8::MAX as f64),
            DType::UInt16 => (0.0, u16::MAX as f64),
            DType::UInt32 => (0.0, u32::MAX as f64),
            DType::Int64 => (i64::MIN as f64, i64::MAX as f64),
            DType::UInt64 => (0.0, u64::MAX as f64),
            DType::Float16 => (-65504.0, 65504.0),
            DType::Float32 | DType::Complex64 => (f32::MIN as f64, f32::MAX as f64),
            DType::Float64 => (f64::MIN, f64::MAX),
        }
    }

    /// The first device word holding `v` (converted as a cast to this dtype would: floats
    /// truncated toward zero for integers, wrapped to the type's width, rounded once to
    /// binary16 for float16). For complex64, the real part's word (the imaginary word of a
    /// real value is 0). Private: one word is not a float64 (nor a future int64), so callers
    /// go through [`DType::words_of`], which gives both.
    fn word32_of(self, v: f64) -> u32 {
        if self == DType::Float16 {
            return f16_of(v).to_bits();
        }
        match self.kind() {
            Kind::Bool => (v != 0.0) as u32,
            Kind::Float | Kind::Complex => (v as f32).to_bits(),
            Kind::Signed => {
                let i = if v.is_nan() { 0 } else { v.trunc() as i64 };
                let s = 64 - self.bits();
                (((i << s) >> s) as i32) as u32
            }
            Kind::Unsigned => {
                let i = if v.is_nan() { 0 } else { v.trunc() as i64 };
                let mask = if self.bits() == 32 {
                    u32::MAX as i64
                } else {
                    (1i64 << self.bits()) - 1
                };
                (i & mask) as u32
            }
        }
    }

    /// The device words of one element holding `v` (converted as a cast to this dtype would;
    /// the second word is the high half for float64, the imaginary part's 0 for complex64,
    /// unused (0) for the one-word dtypes).
    pub(crate) fn words_of(self, v: f64) -> (u32, u32) {
        if self == DType::Float64 {
            let b = v.to_bits();
            (b as u32, (b >> 32) as u32)
        } else if self.is_wide_int() {
            // Truncated toward zero, NaN 0, out of range saturated (Rust's `as`; NumPy leaves
            // it undefined). An exact integer beyond 2^53 takes `words_of_int`.
            // uint64: a negative value wraps as int64's would (the device's cast does too).
            let b = if self == DType::Int64 || v < 0.0 {
                v as i64 as u64
            } else {
                v as u64
            };
            (b as u32, (b >> 32) as u32)
        } else {
            (self.word32_of(v), 0)
        }
    }

    /// The device words of one element holding the integer `v` exactly (wrapped to the
    /// dtype's width as NumPy's casts of integers wrap; for float dtypes rounded once).
    pub(crate) fn words_of_int(self, v: i128) -> (u32, u32) {
        match self.kind() {
            Kind::Signed | Kind::Unsigned if self.is_wide_int() => {
                let b = v as u64;
                (b as u32, (b >> 32) as u32)
            }
            Kind::Bool => self.words_of((v != 0) as u8 as f64),
            // The low 32 bits, exact through f64; `word32_of` wraps them to the width.
            Kind::Signed | Kind::Unsigned => self.words_of(v as u32 as f64),
            _ => self.words_of(v as f64),
        }
    }

    /// The value one element's device words hold, `(lo, hi)` as [`DType::words_of`] gives
    /// them (float64, int64 and uint64 join the halves; the one-word dtypes read `lo`;
    /// complex64 gives the real part, the caller reading the imaginary word as the float32
    /// it is). Taking both words makes a two-word element unreadable from one word by
    /// construction.
    pub(crate) fn value_of(self, (lo, hi): (u32, u32)) -> f64 {
        let joined = lo as u64 | ((hi as u64) << 32);
        match self {
            DType::Float64 => return f64::from_bits(joined),
            DType::Int64 => return joined as i64 as f64,
            DType::UInt64 => return joined as f64,
            _ => {}
        }
        let w = lo;
        match self.kind() {
            Kind::Bool | Kind::Unsigned => w as f64,
            Kind::Signed => w as i32 as f64,
            Kind::Float | Kind::Complex => f32::from_bits(w) as f64,
        }
    }

    /// Device words from host bytes (little-endian, `host_size` each).
    pub(crate) fn words_from_bytes(self, bytes: &[u8]) -> Vec<u32> {
        if self.words() == 2 {
            // Two words per element (complex64: real first; float64: little-endian
            // halves): the bytes are already the words.
            return bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
        }
        let n = self.host_size();
        bytes
            .chunks_exact(n)
            .map(|c| match self {
                DType::Bool => (c[0] != 0) as u32,
                DType::Int8 => c[0] as i8 as i32 as u32,
                DType::UInt8 => c[0] as u32,
                DType::Int16 => i16::from_le_bytes([c[0], c[1]]) as i32 as u32,
                DType::UInt16 => u16::from_le_bytes([c[0], c[1]]) as u32,
                DType::Float16 => half::f16::from_le_bytes([c[0], c[1]]).to_f32().to_bits(),
                DType::Int32
                | DType::UInt32
                | DType::Float32
                | DType::Int64
                | DType::UInt64
                | DType::Float64
                | DType::Complex64 => u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            })
            .collect()
    }

    /// Host bytes (little-endian) from device words.
    pub(crate) fn bytes_from_words(self, words: &[u32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(words.len() * self.host_size());
        for &w in words {
            if self == DType::Float16 {
                // Exact: the word always holds a binary16 value.
                out.extend_from_slice(&half::f16::from_f32(f32::from_bits(w)).to_le_bytes());
                continue;
            }
            match self.host_size().min(4) {
                1 => out.push(w as u8),
                2 => out.extend_from_slice(&(w as u16).to_le_bytes()),
                _ => out.extend_from_slice(&w.to_le_bytes()),
            }
        }
        out
    }
}

/// `v` rounded once to the nearest binary16 value (ties to even), as an f32. `half`'s
/// `from_f64` goes through f32 with two roundings to nearest, which ties the wrong way just
/// past a binary16 midpoint (1 + 2⁻¹¹ + 2⁻⁴⁰ gave 1, NumPy gives 1 + 2⁻¹⁰); rounding the f32
/// step to odd makes the second rounding the correct one (as the device's cast does).
pub(crate) fn f16_of(v: f64) -> f32 {
    let f = v as f32;
    let b = f.to_bits();
    let f = if v.is_nan() || f as f64 == v || b & 1 == 1 {
        f
    } else if v.abs() > (f as f64).abs() {
        f32::from_bits(b + 1)
    } else {
        f32::from_bits(b - 1)
    };
    half::f16::from_f32(f).to_f32()
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The standard's promotion of two array dtypes: within a family the wider type; signed with
/// unsigned the signed type wide enough for both (`uint32` with a signed type is `int64`);
/// an integer or bool with a float the float (the standard leaves mixed kinds to the
/// library; NumPy gives float64 for int32 or int64 with float32, which not every adapter
/// holds, so the float type is kept, as PyTorch does; likewise float16 with any integer is
/// float16). float16 with float32 is float32. `bool` with an integer is the integer.
/// float32 (or float16) with float64 is float64, and an integer with float64 float64 (as
/// NumPy). `uint64` with a signed type is an error (the standard leaves it undefined;
/// NumPy's float64 would silently round values beyond 2^53), as is complex64 with float64
/// (`complex128`). Anything with `complex64` is `complex64` (float32 with complex64 is the
/// standard's complex64; integers and bool with it are the library's choice, as for
/// float32). Whether the device holds the result (`int64` needs `SHADER_INT64`) is
/// [`DType::check_device`]'s question, asked where an operation is built.
pub fn promote(a: DType, b: DType) -> Result<DType> {
    use DType::*;
    if a == b {
        return Ok(a);
    }
    let (ka, kb) = (a.kind(), b.kind());
    let wider = |x: DType, y: DType| if x.bits() >= y.bits() { x } else { y };
    let out = match (ka, kb) {
        // complex64 with float64 is complex128, which this library does not hold.
        (Kind::Complex, _) | (_, Kind::Complex) if a == Float64 || b == Float64 => None,
        (Kind::Complex, _) => Some(a),
        (_, Kind::Complex) => Some(b),
        (Kind::Float, Kind::Float) => Some(wider(a, b)),
        (Kind::Float, _) => Some(a),
        (_, Kind::Float) => Some(b),
        (Kind::Bool, _) => Some(b),
        (_, Kind::Bool) => Some(a),
        (Kind::Signed, Kind::Signed) | (Kind::Unsigned, Kind::Unsigned) => Some(wider(a, b)),
        _ => {
            let (s, u) = if ka == Kind::Signed { (a, b) } else { (b, a) };
            match u {
                UInt8 => Some(wider(s, Int16)),
                UInt16 => Some(wider(s, Int32)),
                UInt32 => Some(Int64),
                _ => None,
            }
        }
    };
    // A dtype error (Python TypeError, as NumPy's DTypePromotionError is one).
    out.ok_or_else(|| Error::DType {
        op: "promote",
        expected: "dtypes with a common type this library holds (uint64 with a signed type has none: astype one first; complex64 with float64 needs complex128: not supported yet)".into(),
        found: format!("{a} and {b}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_the_standard_table() {
        use DType::*;
        let cases = [
            (Int8, UInt8, Int16),
            (Int8, UInt16, Int32),
            (Int16, UInt8, Int16),
            (Int32, UInt16, Int32),
            (UInt8, UInt16, UInt16),
            (Int8, Int32, Int32),
            (Bool, Int8, Int8),
            (Int32, Float32, Float32),
            (Float32, Complex64, Complex64),
            (Int8, Complex64, Complex64),
            (Bool, Complex64, Complex64),
            (Float32, Float64, Float64),
            (Int32, Float64, Float64),
            (UInt8, Float64, Float64),
            (Bool, Float64, Float64),
            (Float16, Float32, Float32),
            (Int8, Float16, Float16),
            (UInt32, Float16, Float16),
            (Bool, Float16, Float16),
            (Float16, Complex64, Complex64),
            (Float16, Float64, Float64),
            (Int64, Int8, Int64),
            (Int64, Int32, Int64),
            (Int64, UInt8, Int64),
            (Int64, UInt32, Int64),
            (UInt32, Int8, Int64),
            (UInt32, Int32, Int64),
            (UInt64, UInt8, UInt64),
            (UInt64, UInt32, UInt64),
            (Bool, Int64, Int64),
            (Bool, UInt64, UInt64),
            (Int64, Float32, Float32),
            (UInt64, Float16, Float16),
            (Int64, Float64, Float64),
            (UInt64, Float64, Float64),
            (Int64, Complex64, Complex64),
        ];
        for (a, b, c) in cases {
            assert_eq!(promote(a, b).unwrap(), c, "{a} {b}");
            assert_eq!(promote(b, a).unwrap(), c, "{b} {a}");
        }
        assert!(promote(UInt64, Int8).is_err());
        assert!(promote(UInt64, Int64).is_err());
        assert!(promote(Float64, Complex64).is_err());
        assert!(promote(Complex64, Float64).is_err());
    }

    #[test]
    fn words_wrap_and_round_trip() {
        assert_eq!(DType::Int8.word32_of(130.0) as i32, -126);
        assert_eq!(DType::UInt8.word32_of(-1.0), 255);
        assert_eq!(DType::Int32.value_of(DType::Int32.words_of(-7.9)), -7.0);
        let bytes = [0x80u8, 0x7f, 0x01, 0xff];
        let w = DType::Int8.words_from_bytes(&bytes);
        assert_eq!(
            w.iter().map(|&x| x as i32).collect::<Vec<_>>(),
            [-128, 127, 1, -1]
        );
        assert_eq!(DType::Int8.bytes_from_words(&w), bytes);
        assert!(DType::from_name("float64").is_ok());
        assert!(DType::from_name("float16").is_ok());
        assert!(DType::from_name("int64").is_ok());
        assert!(DType::from_name("complex128").is_err());
        let b = (-3i64).to_le_bytes();
        let w = DType::Int64.words_from_bytes(&b);
        assert_eq!(w, [0xffff_fffd, 0xffff_ffff]);
        assert_eq!(DType::Int64.bytes_from_words(&w), b);
        assert_eq!(DType::Int64.words_of(-3.9), (w[0], w[1]));
        assert_eq!(DType::Int64.words_of_int(-3), (w[0], w[1]));
        assert_eq!(DType::UInt64.words_of_int(-1), (u32::MAX, u32::MAX));
        assert_eq!(DType::UInt64.words_of(2f64.powi(40)), (0, 256));
        assert_eq!(DType::Int8.words_of_int(300), (44, 0));
        let f = [0x18u8, 0x2d, 0x44, 0x54, 0xfb, 0x21, 0x09, 0x40]; // pi
        let w = DType::Float64.words_from_bytes(&f);
        assert_eq!(w, [0x54442d18, 0x400921fb]);
        assert_eq!(DType::Float64.words_of(std::f64::consts::PI), (w[0], w[1]));
        // Both halves make the value (one word alone is no float64).
        assert_eq!(DType::Float64.value_of((w[0], w[1])), std::f64::consts::PI);
        assert_eq!(DType::Float64.value_of(DType::Float64.words_of(-0.1)), -0.1);
        assert_eq!(
            DType::Complex64.value_of(DType::Complex64.words_of(1.5)),
            1.5
        );
        assert_eq!(DType::Float64.bytes_from_words(&w), f);
        let c = [0u8, 0, 128, 63, 0, 0, 0, 192]; // 1.0 - 2.0j
        let w = DType::Complex64.words_from_bytes(&c);
        assert_eq!(w, [1.0f32.to_bits(), (-2.0f32).to_bits()]);
        assert_eq!(DType::Complex64.bytes_from_words(&w), c);
    }

    #[test]
    fn float16_words_round_once_and_round_trip() {
        let h = DType::Float16;
        // 1 + 2^-11 is a tie: to even (1.0); just above it rounds up.
        assert_eq!(h.value_of(h.words_of(1.0 + 2f64.powi(-11))), 1.0);
        assert_eq!(
            h.value_of(h.words_of(1.0 + 1.5 * 2f64.powi(-11))),
            1.0 + 2f64.powi(-10)
        );
        assert_eq!(h.value_of(h.words_of(65520.0)), f64::INFINITY);
        assert_eq!(h.value_of(h.words_of(65519.99)), 65504.0);
        assert_eq!(h.value_of(h.words_of(2f64.powi(-25))), 0.0);
        assert_eq!(h.value_of(h.words_of(1.5 * 2f64.powi(-25))), 2f64.powi(-24));
        let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
        let w = h.words_from_bytes(&bytes);
        let back = h.bytes_from_words(&w);
        for (i, (a, b)) in bytes.chunks(2).zip(back.chunks(2)).enumerate() {
            let nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0;
            assert!(a == b || nan, "{i:#06x}");
        }
    }
}
