//! `shaders/gather.wgsl`: batches gathered on the device from a resident dataset: bytes
//! through a 256-entry palette, or f32 values.

use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::services::pipeline::{Access, KernelSpec, Shader};
use crate::tensor::{ByteBuffer, IndexBuffer, Tensor};

/// gather.wgsl.
pub const SHADER: Shader = crate::services::pipeline::shader!("gather");

/// `out[b, j] = palette[data[idx[offset + b]·row_len + j]]`. Bindings: data, indices,
/// palette, out, params.
pub const GATHER: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "gather_forward",
    bindings: &[
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadWrite,
        Access::Uniform,
    ],
};

/// The same from an f32 dataset: `out[b, j] = data[idx[offset + b]·row_len + j] · scale`.
pub const GATHER_F32: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "gather_f32_forward",
    bindings: &[
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadWrite,
        Access::Uniform,
    ],
};

/// Integer ids as floats: `out[b, j] = f32(ids[idx[offset + b]·row_len + j])`. Bindings
/// as [`GATHER_F32`]'s.
pub const GATHER_IDS: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "gather_ids_forward",
    bindings: &[
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadWrite,
        Access::Uniform,
    ],
};

/// [`GATHER`] four bytes per invocation, for rows of a multiple of 4 bytes.
pub const GATHER_X4: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "gather_u8x4_forward",
    bindings: &[
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadWrite,
        Access::Uniform,
    ],
};

/// [`GATHER_X4`] and the rows' targets in one dispatch. Bindings: data, indices, palette,
/// targets, x, y, params.
pub const GATHER_PAIR: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "gather_u8x4_pair_forward",
    bindings: &[
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadOnly,
        Access::ReadWrite,
        Access::ReadWrite,
        Access::Uniform,
    ],
};

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[GATHER, GATHER_F32, GATHER_IDS, GATHER_X4, GATHER_PAIR];

/// Mirrors `PairParams` in gather.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PairParams {
    /// The pixels' selection.
    pub x: Params,
    /// Targets per row.
    pub target_len: u32,
    /// Padding to 32 bytes.
    pub _pad: [u32; 3],
}

impl PairParams {
    /// The uniform for pixels `x` (bytes turned into floats by `lookup`) and `target_len`
    /// targets per row of the same rows.
    pub fn new(x: &Rows<'_>, target_len: usize, lookup: Lookup) -> PairParams {
        let mut xp = x.params();
        xp.scale = lookup.mode().1;
        PairParams {
            x: xp,
            target_len: target_len as u32,
            _pad: [0; 3],
        }
    }
}

/// Mirrors `Params` in gather.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Rows gathered.
    pub batch: u32,
    /// Bytes per row.
    pub row_len: u32,
    /// First index used.
    pub offset: u32,
    /// Multiplier of the f32 gather (the byte gathers use their palette).
    pub scale: f32,
}

/// Entries of a byte dataset's palette.
pub const PALETTE_LEN: usize = 256;

/// How the byte kernels turn a byte into a float (the shader's override `MODE`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    /// `f32(v) * factor`: correctly rounded in WGSL, so the same bits everywhere.
    Multiply(f32),
    /// `f32(v) / factor`: WGSL allows 2.5 ULP, so used only where the device was checked to
    /// divide every byte as the host does.
    Divide(f32),
    /// `palette[v]`.
    Palette,
}

impl Lookup {
    /// The shader's `MODE` and the factor its uniform carries.
    pub fn mode(self) -> (f64, f32) {
        match self {
            Lookup::Multiply(f) => (0.0, f),
            Lookup::Divide(f) => (1.0, f),
            Lookup::Palette => (2.0, 1.0),
        }
    }

    /// What the kernel computes for byte `k`, on a host that rounds as IEEE says.
    pub fn value(self, k: u8, palette: &[f32]) -> f32 {
        match self {
            Lookup::Multiply(f) => k as f32 * f,
            Lookup::Divide(f) => k as f32 / f,
            Lookup::Palette => palette[k as usize],
        }
    }
}

/// The palette of bytes scaled by `scale`: entry k is `k as f32 * scale`, the same correctly
/// rounded f32 product the kernel would compute.
pub fn scaled_palette(scale: f32) -> Vec<f32> {
    (0..PALETTE_LEN).map(|k| k as f32 * scale).collect()
}

/// Which rows to gather: `batch` rows of `row_len` elements, chosen by `indices[offset..]`,
/// scaled by `scale`. The caller guarantees every index used is below the dataset's row count.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    /// Row indices.
    pub indices: &'a IndexBuffer,
    /// First index used.
    pub offset: usize,
    /// Rows gathered.
    pub batch: usize,
    /// Elements per row.
    pub row_len: usize,
    /// Multiplier of the f32 gather (ignored by the byte gathers, which use a palette).
    pub scale: f32,
}

impl Rows<'_> {
    /// The kernel's uniform for this selection.
    pub fn params(&self) -> Params {
        Params {
            batch: self.batch as u32,
            row_len: self.row_len as u32,
            offset: self.offset as u32,
            scale: self.scale,
        }
    }
}

/// The 2-D grid of a gather: x over `width` invocations per row, y over the batch rows.
fn grid(rec: &dyn Record, op: &'static str, width: usize, batch: usize) -> Result<[u32; 3]> {
    let max = rec.device().info().limits.max_workgroups_per_dimension as usize;
    if batch > max {
        return Err(Error::InvalidArgument {
            op,
            name: "batch",
            expected: format!("at most {max} rows per gather"),
            found: batch.to_string(),
        });
    }
    Ok([width.div_ceil(256) as u32, batch as u32, 1])
}

fn launch(
    rec: &mut dyn Record,
    spec: &KernelSpec,
    data: (&wgpu::Buffer, u64),
    palette: Option<(&Tensor, Lookup)>,
    rows: Rows<'_>,
    out: &wgpu::Buffer,
) -> Result<()> {
    let mut p = rows.params();
    let pipe = match palette {
        Some((_, lookup)) => {
            let (mode, factor) = lookup.mode();
            p.scale = factor;
            rec.pipeline(spec, &[("MODE", mode)])?
        }
        None => rec.pipeline(spec, &[])?,
    };
    let n = (rows.batch * rows.row_len) as u64;
    // One invocation per element, or per 4-byte word for the x4 kernel.
    let per_row = if spec.entry == GATHER_X4.entry {
        rows.row_len / 4
    } else {
        rows.row_len
    };
    let groups = grid(rec, "gather", per_row, rows.batch)?;
    let elem = if spec.entry == GATHER_F32.entry || spec.entry == GATHER_IDS.entry {
        4
    } else {
        1
    };
    rec.declare_work(0.0, (n * (elem + 4) + rows.batch as u64 * 4) as f64);
    let mut bufs = vec![data, rows.indices.binding()];
    if let Some((pal, _)) = palette {
        bufs.push((pal.buffer(), pal.byte_len()));
    }
    bufs.push((out, n * 4));
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}

/// Refuses a palette that is not [`PALETTE_LEN`] floats (the kernels index it by byte).
fn check_palette(op: &'static str, palette: &Tensor) -> Result<()> {
    if palette.numel() != PALETTE_LEN {
        return Err(Error::ShapeMismatch {
            op,
            expected: format!("a palette of {PALETTE_LEN} floats"),
            found: format!("{:?}", palette.shape()),
        });
    }
    Ok(())
}

/// Records a gather from a byte dataset into `out` (f32), each byte turned into a float as
/// `lookup` says (`palette` is bound whatever the mode: [`PALETTE_LEN`] floats); four bytes
/// per invocation when rows are a whole number of words. `rows.scale` is not used.
pub fn gather(
    rec: &mut dyn Record,
    data: &ByteBuffer,
    palette: &Tensor,
    lookup: Lookup,
    rows: Rows<'_>,
    out: &wgpu::Buffer,
) -> Result<()> {
    check_palette("gather", palette)?;
    let spec = if rows.row_len.is_multiple_of(4) {
        &GATHER_X4
    } else {
        &GATHER
    };
    launch(
        rec,
        spec,
        data.binding(),
        Some((palette, lookup)),
        rows,
        out,
    )
}

/// Records a gather from an f32 dataset into `out`.
pub fn gather_f32(
    rec: &mut dyn Record,
    data: &Tensor,
    rows: Rows<'_>,
    out: &wgpu::Buffer,
) -> Result<()> {
    launch(
        rec,
        &GATHER_F32,
        (data.buffer(), data.byte_len().max(4)),
        None,
        rows,
        out,
    )
}

/// Records a gather of integer ids (u32) into `out` as floats.
pub fn gather_ids(
    rec: &mut dyn Record,
    ids: &IndexBuffer,
    rows: Rows<'_>,
    out: &wgpu::Buffer,
) -> Result<()> {
    launch(rec, &GATHER_IDS, ids.binding(), None, rows, out)
}

/// Records [`gather`] (rows of a multiple of 4 bytes) and the same rows' targets
/// (`targets`: f32, `target_len` per row) into `x` and `y`, in one dispatch.
#[allow(clippy::too_many_arguments)] // buffers and shape, spelled out
pub fn gather_pair(
    rec: &mut dyn Record,
    data: &ByteBuffer,
    palette: &Tensor,
    lookup: Lookup,
    targets: &Tensor,
    rows: Rows<'_>,
    target_len: usize,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
) -> Result<()> {
    if !rows.row_len.is_multiple_of(4) {
        return Err(Error::InvalidArgument {
            op: "gather_pair",
            name: "row_len",
            expected: "a multiple of 4 bytes".into(),
            found: rows.row_len.to_string(),
        });
    }
    check_palette("gather_pair", palette)?;
    let groups = grid(
        rec,
        "gather_pair",
        (rows.row_len / 4).max(target_len),
        rows.batch,
    )?;
    let (mode, _) = lookup.mode();
    let pipe = rec.pipeline(&GATHER_PAIR, &[("MODE", mode)])?;
    let p = PairParams::new(&rows, target_len, lookup);
    let nx = (rows.batch * rows.row_len) as u64;
    let ny = (rows.batch * target_len) as u64;
    rec.declare_work(0.0, (nx * 5 + ny * 8 + rows.batch as u64 * 4) as f64);
    let bufs = [
        data.binding(),
        rows.indices.binding(),
        (palette.buffer(), palette.byte_len()),
        (targets.buffer(), targets.byte_len().max(4)),
        (x, nx * 4),
        (y, ny * 4),
    ];
    rec.dispatch(&pipe, &bufs, Some(bytemuck::bytes_of(&p)), groups)
}
