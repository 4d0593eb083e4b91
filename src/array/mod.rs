//! N-dimensional arrays on a device, for array computing beyond training (NumPy/CuPy
//! style, the Python array API standard's operations): dtypes, strided views, broadcasting,
//! elementwise expressions fused into generated kernels, and reductions.
//!
//! | module | what it is |
//! |---|---|
//! | `dtype` | the dtypes, their device words and host bytes, type promotion |
//! | `layout` | shapes, strides and offsets: views, broadcasting, indexing, coalescing axes |
//! | `ops` | the elementwise operations: dtypes in and out, their WGSL, the prelude |
//! | `array` | the `Array` type: data, or a lazy expression over other arrays |
//! | `codegen` | an expression laid out as a kernel, and the elementwise kernel's source |
//! | `eval` | running generated kernels (the elementwise one into a buffer or a view) |
//! | `elementwise` | building expressions: result dtypes, broadcasting, scalars, `where`, casts |
//! | `views` | indexing, transposes, broadcasts, reshapes, copies, assignment; `Tensor` |
//! | `reduce` | reductions over axes, fused with their operand's expression |
//! | `scan` | cumulative sums and products along an axis, fused with their operand |
//! | `linalg` | `matmul` on the tuned kernels, views read in place |
//! | `decomp` | `solve`, `inv`, `det`, `slogdet` (LU with partial pivoting), `cholesky` and Householder `qr` (float32, or float64 on the f64 twin), on the device |
//! | `decomp_shared` | what the float32 and float64 solvers share: `det`/`slogdet` from U's diagonal, error naming |
//! | `create` | host data in and out, and the creation functions |
//! | `random` | generators: Philox4x32-10 streams drawn on the device |
//! | `fft` | discrete Fourier transforms along an axis (Stockham radix-4/2, Bluestein) |
//! | `sort` | stable `sort` and `argsort` along an axis (a bitonic network on the device) |
//! | `spectral` | `svd`, `svdvals`, `eigh`, `eigvalsh` by one-sided Jacobi on the device, float32 or float64 |
//! | `gather` | `take`, `take_along_axis`, `searchsorted`; positions out of range caught on the device |
//! | `compact` | stream compaction on the scan: `nonzero`, flat positions of nonzero elements |
//! | `indexing` | NumPy's advanced indexing: integer arrays and boolean masks, read and written |
//! | `unique` | `unique_values`/`_counts`/`_inverse`/`_all` on sort, compaction and gathers |
//! | `sample` | `permutation`, `shuffle`, `choice` with a `Generator` |
//! | `methods` | the named elementwise methods |
//! | `custom` | the user's WGSL snippets as kernels (CuPy's `ElementwiseKernel`, `ReductionKernel`) |
//!
//! `docs/ARRAYS.md` says what is supported and how it differs from NumPy.

#[allow(clippy::module_inception)] // the type's own file, as `tensor` holds `Tensor`
pub mod array;
pub(crate) mod cast;
pub(crate) mod codegen;
pub mod compact;
pub(crate) mod complex_fold;
pub mod create;
pub mod custom;
pub mod decomp;
pub(crate) mod decomp_f64;
pub(crate) mod decomp_shared;
pub mod dtype;
pub mod elementwise;
pub(crate) mod eval;
pub mod fft;
pub mod gather;
pub mod indexing;
pub mod layout;
pub mod linalg;
pub mod methods;
pub mod ops;
pub mod random;
pub mod reduce;
pub mod sample;
pub mod scan;
pub mod sort;
pub mod spectral;
pub mod unique;
pub mod views;

pub use array::{Array, Scalar};
pub use dtype::{promote, DType};
pub use indexing::Indexer;
pub use layout::Index;
pub use ops::{Binary, Unary};
pub use reduce::Reduce;
