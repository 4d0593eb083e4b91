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
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `float32`.
    Float32,
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
    pub const ALL: [DType; 9] = [
        DType::Bool,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::Float32,
        DType::Complex64,
    ];

    /// The standard's (and NumPy's) name.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::Float32 => "float32",
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
                    "one of {} (int64, uint64, float16, float64 and complex128 are not supported yet)",
                    DType::ALL.map(|d| d.name()).join(", ")
                ),
                found: format!("{name:?}"),
            })
    }

    /// Its family.
    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::Int8 | DType::Int16 | DType::Int32 => Kind::Signed,
            DType::UInt8 | DType::UInt16 | DType::UInt32 => Kind::Unsigned,
            DType::Float32 => Kind::Float,
            DType::Complex64 => Kind::Complex,
        }
    }

    /// Bits of one element on the host.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 8,
            DType::Int16 | DType::UInt16 => 16,
            DType::Int32 | DType::UInt32 | DType::Float32 => 32,
            DType::Complex64 => 64,
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
    /// 1 for every other dtype.
    pub fn words(self) -> usize {
        if self.is_complex() {
            2
        } else {
            1
        }
    }

    /// `Error::DType` for an operation that does not take complex arrays, when `self` is
    /// complex: kernels that read one word per element call this before touching the data.
    pub(crate) fn refuse_complex(self, op: &'static str) -> Result<()> {
        if self.is_complex() {
            return Err(Error::DType {
                op,
                expected: "a real or boolean dtype (complex64 is not supported here yet)".into(),
                found: self.name().into(),
            });
        }
        Ok(())
    }

    /// The WGSL type of its value in a kernel (`vec2<f32>` for complex64; the others one
    /// word).
    pub fn wgsl(self) -> &'static str {
        match self.kind() {
            Kind::Bool | Kind::Unsigned => "u32",
            Kind::Signed => "i32",
            Kind::Float => "f32",
            Kind::Complex => "vec2<f32>",
        }
    }

    /// A WGSL expression that brings `x` (of this dtype's word type) back into the dtype's
    /// range after an operation that may have left it: integer wrap-around for the narrow
    /// types, 0/1 for bool.
    pub(crate) fn wrap(self, x: &str) -> String {
        match self {
            DType::Int8 => format!("(({x} << 24u) >> 24u)"),
            DType::Int16 => format!("(({x} << 16u) >> 16u)"),
            DType::UInt8 => format!("({x} & 0xffu)"),
            DType::UInt16 => format!("({x} & 0xffffu)"),
            DType::Bool => format!("select(0u, 1u, {x} != 0u)"),
            _ => x.to_string(),
        }
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
            DType::Float32 | DType::Complex64 => (f32::MIN as f64, f32::MAX as f64),
        }
    }

    /// The device word holding `v` (converted as a cast to this dtype would: floats
    /// truncated toward zero for integers, wrapped to the type's width). For complex64, the
    /// real part's word (the imaginary word of a real value is 0).
    pub(crate) fn word_of(self, v: f64) -> u32 {
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

    /// The value a device word of this dtype holds (for complex64, one component's word).
    pub(crate) fn value_of(self, w: u32) -> f64 {
        match self.kind() {
            Kind::Bool | Kind::Unsigned => w as f64,
            Kind::Signed => w as i32 as f64,
            Kind::Float | Kind::Complex => f32::from_bits(w) as f64,
        }
    }

    /// Device words from host bytes (little-endian, `host_size` each).
    pub(crate) fn words_from_bytes(self, bytes: &[u8]) -> Vec<u32> {
        if self.is_complex() {
            // Two f32 words per element, real first: the bytes are already the words.
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
                DType::Int32 | DType::UInt32 | DType::Float32 | DType::Complex64 => {
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]])
                }
            })
            .collect()
    }

    /// Host bytes (little-endian) from device words.
    pub(crate) fn bytes_from_words(self, words: &[u32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(words.len() * self.host_size());
        for &w in words {
            match self.host_size().min(4) {
                1 => out.push(w as u8),
                2 => out.extend_from_slice(&(w as u16).to_le_bytes()),
                _ => out.extend_from_slice(&w.to_le_bytes()),
            }
        }
        out
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The standard's promotion of two array dtypes: within a family the wider type; signed with
/// unsigned the signed type wide enough for both; an integer or bool with a float the float
/// (the standard leaves mixed kinds to the library; NumPy gives float64 for int32 with
/// float32, which this library does not hold, so the float type is kept, as PyTorch does).
/// `bool` with an integer is the integer. `uint32` with a signed type needs `int64`: an error.
/// Anything with `complex64` is `complex64` (float32 with complex64 is the standard's
/// complex64; integers and bool with it are the library's choice, as for float32).
pub fn promote(a: DType, b: DType) -> Result<DType> {
    use DType::*;
    if a == b {
        return Ok(a);
    }
    let (ka, kb) = (a.kind(), b.kind());
    let wider = |x: DType, y: DType| if x.bits() >= y.bits() { x } else { y };
    let out = match (ka, kb) {
        (Kind::Complex, _) => Some(a),
        (_, Kind::Complex) => Some(b),
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
                _ => None,
            }
        }
    };
    out.ok_or_else(|| Error::InvalidArgument {
        op: "promote",
        name: "dtype",
        expected: "dtypes with a common type this library holds (uint32 with a signed type needs int64, not supported yet)".into(),
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
        ];
        for (a, b, c) in cases {
            assert_eq!(promote(a, b).unwrap(), c, "{a} {b}");
            assert_eq!(promote(b, a).unwrap(), c, "{b} {a}");
        }
        assert!(promote(UInt32, Int8).is_err());
    }

    #[test]
    fn words_wrap_and_round_trip() {
        assert_eq!(DType::Int8.word_of(130.0) as i32, -126);
        assert_eq!(DType::UInt8.word_of(-1.0), 255);
        assert_eq!(DType::Int32.value_of(DType::Int32.word_of(-7.9)), -7.0);
        let bytes = [0x80u8, 0x7f, 0x01, 0xff];
        let w = DType::Int8.words_from_bytes(&bytes);
        assert_eq!(
            w.iter().map(|&x| x as i32).collect::<Vec<_>>(),
            [-128, 127, 1, -1]
        );
        assert_eq!(DType::Int8.bytes_from_words(&w), bytes);
        assert!(DType::from_name("float64").is_err());
        let c = [0u8, 0, 128, 63, 0, 0, 0, 192]; // 1.0 - 2.0j
        let w = DType::Complex64.words_from_bytes(&c);
        assert_eq!(w, [1.0f32.to_bits(), (-2.0f32).to_bits()]);
        assert_eq!(DType::Complex64.bytes_from_words(&w), c);
    }
}
