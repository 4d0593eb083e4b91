//! The cooperative-matrix configurations an adapter reports (tensor cores: Vulkan's
//! `VK_KHR_cooperative_matrix`, Metal's simdgroup matrices), as plain values recorded on
//! [`crate::device::adapter::AdapterDesc`] so the matmul's candidates, the adapter table and
//! tests with made-up adapters see them without wgpu.

use std::fmt;

/// A cooperative matrix's element type, as an adapter reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoopScalar {
    /// 16-bit float.
    F16,
    /// 32-bit float.
    F32,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
}

impl CoopScalar {
    pub(crate) fn from_wgpu(t: wgpu::CooperativeScalarType) -> CoopScalar {
        match t {
            wgpu::CooperativeScalarType::F16 => CoopScalar::F16,
            wgpu::CooperativeScalarType::F32 => CoopScalar::F32,
            wgpu::CooperativeScalarType::I32 => CoopScalar::I32,
            wgpu::CooperativeScalarType::U32 => CoopScalar::U32,
        }
    }
}

impl fmt::Display for CoopScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CoopScalar::F16 => "f16",
            CoopScalar::F32 => "f32",
            CoopScalar::I32 => "i32",
            CoopScalar::U32 => "u32",
        })
    }
}

/// One cooperative-matrix configuration an adapter reports: `C = A·B + C` on an M×K A, a
/// K×N B and an M×N C, subgroup-scoped. wgpu lists only configurations whose A and B share a
/// type and whose C and result share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopMatrix {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// The element type of A and B.
    pub ab: CoopScalar,
    /// The element type of C and of the result.
    pub cr: CoopScalar,
    /// Whether the multiply-add saturates instead of overflowing.
    pub saturating: bool,
}

impl fmt::Display for CoopMatrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} {}->{}{}",
            self.m,
            self.n,
            self.k,
            self.ab,
            self.cr,
            if self.saturating { " sat" } else { "" }
        )
    }
}
