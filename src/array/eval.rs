//! Running array expressions: the elementwise kernel for an expression, into a new buffer or
//! through a view into an existing one, and the shared dispatch path of every generated
//! array kernel.

use crate::array::array::{Array, Expr, State, Strided, MAX_NODES};
use crate::array::codegen::{elementwise_source, Plan, WG};
use crate::array::dtype::DType;
use crate::array::layout::{coalesce, numel, Layout};
use crate::error::{Error, Result};
use crate::exec::dispatch::Record;
use crate::exec::recorder::Recorder;
use crate::runtime::Device;
use crate::services::pipeline::{grid_1d, Access};
use crate::tensor::Tensor;

impl Array {
    /// Runs the expression if it has not run, so the values exist on the device (the kernel
    /// is queued; nothing waits).
    pub fn eval(&self) -> Result<()> {
        self.strided().map(|_| ())
    }

    /// The data, running the expression first if needed.
    pub(crate) fn strided(&self) -> Result<Strided> {
        if let Some(s) = self.ready() {
            return Ok(s);
        }
        let out = materialize(self, false)?;
        self.set_ready(out.clone());
        Ok(out)
    }

    /// A new lazy node over `operands`, running operands first where the expression would
    /// pass the caps.
    pub(crate) fn lazy(
        op: &'static str,
        dtype: DType,
        shape: Vec<usize>,
        operands: &[&Array],
        build: impl FnOnce(&[Array]) -> Expr,
    ) -> Result<Array> {
        let device = operands[0].device().clone();
        for o in &operands[1..] {
            operands[0].check_device(o, op)?;
        }
        // A float64 operand or result on an adapter without f64: a typed error now, not an
        // invalid shader later.
        dtype.check_device(&device, op)?;
        for o in operands {
            o.dtype().check_device(&device, op)?;
        }
        let max_buffers = max_leaf_buffers(&device);
        let mut ops: Vec<Array> = operands.iter().map(|a| (*a).clone()).collect();
        let count = |ops: &[Array]| {
            let nodes: usize = 1 + ops.iter().map(|a| a.node.nodes).sum::<usize>();
            let mut buffers: Vec<usize> = Vec::new();
            for a in ops {
                for &b in &a.node.buffers {
                    if !buffers.contains(&b) {
                        buffers.push(b);
                    }
                }
            }
            (nodes, buffers)
        };
        let (mut nodes, mut buffers) = count(&ops);
        if nodes > MAX_NODES || buffers.len() > max_buffers {
            // Run the operands that carry expressions (largest first) until it fits.
            let mut order: Vec<usize> = (0..ops.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(ops[i].node.nodes));
            for i in order {
                if nodes <= MAX_NODES && buffers.len() <= max_buffers {
                    break;
                }
                if ops[i].node.nodes > 1 {
                    let s = ops[i].strided()?;
                    ops[i] = Array::from_strided(&device, ops[i].dtype(), s);
                    (nodes, buffers) = count(&ops);
                }
            }
        }
        let expr = build(&ops);
        Ok(Array::from_state(
            &device,
            dtype,
            shape,
            nodes,
            buffers,
            State::Lazy(expr),
        ))
    }
}

/// How many distinct buffers one expression may read: the adapter's storage bindings per
/// stage, less the output, a second output (argmin's index) and the metadata, at most 13.
pub(crate) fn max_leaf_buffers(device: &Device) -> usize {
    (device.info().limits.max_storage_buffers as usize)
        .min(16)
        .saturating_sub(3)
        .max(1)
}

/// A new flat buffer of `words` device words (at least one: bindings cannot be empty).
///
/// Every array buffer is bound whole by some kernel, so one larger than the adapter's
/// largest storage binding (128 MiB on lavapipe, gigabytes on GPUs) is refused here, as
/// NumPy refuses an array too big to address, rather than failing later inside wgpu's
/// validation with a message about bind groups.
pub(crate) fn alloc_words(device: &Device, words: usize) -> Result<Tensor> {
    let bytes = words as u64 * 4;
    let max = device.info().limits.max_storage_binding;
    if bytes > max {
        return Err(Error::InvalidArgument {
            op: "array",
            name: "size",
            expected: format!(
                "at most {max} bytes, the largest buffer one kernel can bind on {}",
                device.info().name
            ),
            found: format!("{bytes} bytes"),
        });
    }
    Tensor::empty(device, &[words.max(1)])
}

/// Compiles (once per device and source) and runs a generated kernel over `buffers` (the
/// plan's reads, then its outputs) and `meta`, with `invocations` threads.
pub(crate) fn launch(
    device: &Device,
    name: &str,
    source: &str,
    reads: &[Tensor],
    writes: &[&Tensor],
    meta: &[u32],
    invocations: u64,
) -> Result<()> {
    if invocations == 0 {
        return Ok(());
    }
    let mut access: Vec<Access> = vec![Access::ReadOnly; reads.len()];
    access.extend(std::iter::repeat_n(Access::ReadWrite, writes.len()));
    access.push(Access::ReadOnly);
    let pipe = device
        .pipelines()
        .get(device.core(), name, source, "main", &access, &[], false)
        .inspect_err(|e| {
            // naga's line numbers count in the generated source (a user's snippet sits inside it).
            if matches!(e, Error::Shader { .. }) {
                log::debug!("generated kernel {name}:\n{source}");
            }
        })?;
    let meta_t = alloc_words(device, meta.len())?;
    device
        .wgpu_queue()
        .write_buffer(meta_t.buffer(), 0, bytemuck::cast_slice(meta));
    let mut bufs: Vec<(&wgpu::Buffer, u64)> =
        reads.iter().map(|t| (t.buffer(), t.byte_len())).collect();
    bufs.extend(writes.iter().map(|t| (t.buffer(), t.byte_len())));
    bufs.push((meta_t.buffer(), meta_t.byte_len()));
    let groups = grid_1d(
        invocations,
        WG,
        device.info().limits.max_workgroups_per_dimension,
    );
    let mut rec = Recorder::new(device);
    rec.dispatch(&pipe, &bufs, None, groups)?;
    rec.submit()?;
    Ok(())
}

/// Words of a stride or offset in the metadata (i32 bits).
pub(crate) fn word(v: isize) -> u32 {
    v as i32 as u32
}

/// Runs `a`'s expression into `target` (a view of a shape `a` broadcasts to), or into a new
/// contiguous buffer of `a`'s shape.
pub(crate) fn run_into(a: &Array, target: Option<&Strided>) -> Result<Strided> {
    let device = a.device();
    let shape = match target {
        Some(t) => t.layout.shape.clone(),
        None => a.shape().to_vec(),
    };
    let n: usize = shape.iter().product();
    if n > i32::MAX as usize {
        return Err(Error::InvalidArgument {
            op: "array kernel",
            name: "shape",
            expected: format!("at most {} elements", i32::MAX),
            found: format!("{shape:?}"),
        });
    }
    let out = match target {
        Some(t) => t.clone(),
        None => Strided {
            data: alloc_words(device, n * a.dtype().words())?,
            layout: Layout::contiguous(&shape),
        },
    };
    if n == 0 {
        return Ok(out);
    }
    let plan = Plan::build(a, &shape)?;
    let (meta, rank) = elementwise_meta(&plan, &out.layout);
    let source = elementwise_source(&plan, rank);
    launch(
        device,
        "array_elementwise",
        &source,
        &plan.buffers,
        &[&out.data],
        &meta,
        n as u64,
    )?;
    Ok(out)
}

/// The metadata of an elementwise kernel over `plan` writing through `out` (whose shape is
/// the iteration's), and the rank of the coalesced iteration shape the source is built for.
pub(crate) fn elementwise_meta(plan: &Plan, out: &Layout) -> (Vec<u32>, usize) {
    let shape = &out.shape;
    let mut strides = vec![out.strides.clone()];
    strides.extend(plan.leaves.iter().map(|l| l.layout.strides.clone()));
    let (cshape, cstrides) = coalesce(shape, &strides);
    let mut meta: Vec<u32> = vec![numel(shape) as u32];
    meta.extend(cshape.iter().map(|&d| d as u32));
    meta.push(out.offset as u32);
    meta.extend(cstrides[0].iter().map(|&s| word(s)));
    for (leaf, st) in plan.leaves.iter().zip(&cstrides[1..]) {
        meta.push(leaf.layout.offset as u32);
        meta.extend(st.iter().map(|&s| word(s)));
    }
    meta.extend(&plan.scalars);
    (meta, cshape.len())
}

/// `a`'s values: its data as it is (any layout) when it has data, else its expression run
/// into a new contiguous buffer; with `copy`, always a new contiguous buffer.
pub(crate) fn materialize(a: &Array, copy: bool) -> Result<Strided> {
    if !copy {
        if let Some(s) = a.ready() {
            return Ok(s);
        }
    }
    a.dtype().check_device(a.device(), "eval")?;
    run_into(a, None)
}

/// Writes `value` (already of the target's dtype, broadcastable to its shape) through the
/// view `target`. A value that reads the target's own buffer is run into a temporary first,
/// so every element is read before any is written (NumPy's `x[1:] = x[:-1]`).
pub(crate) fn write_into(value: &Array, target: &Strided) -> Result<()> {
    let id = target.data.storage_id();
    let value = if reads_buffer(value, id) {
        let tmp = run_into(value, None)?;
        Array::from_strided(value.device(), value.dtype(), tmp)
    } else {
        value.clone()
    };
    run_into(&value, Some(target)).map(|_| ())
}

/// Whether `a`'s expression, as it stands now, reads the buffer `id`. The node's buffer list
/// is not enough: it was taken when the expression was built, and an operand that has run
/// since (`m = isnan(x); m |= z` runs `m` to write into it) is read from its own new buffer.
fn reads_buffer(a: &Array, id: usize) -> bool {
    fn walk(a: &Array, id: usize, seen: &mut Vec<usize>) -> bool {
        let key = std::sync::Arc::as_ptr(&a.node) as usize;
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        match a.expr() {
            None => a.ready().is_some_and(|s| s.data.storage_id() == id),
            Some(Expr::Scalar(..) | Expr::Iota(_)) => false,
            Some(Expr::Unary(_, _, x) | Expr::Cast(x)) => walk(&x, id, seen),
            Some(Expr::Binary(_, _, x, y)) => walk(&x, id, seen) || walk(&y, id, seen),
            Some(Expr::Where(c, x, y)) => {
                walk(&c, id, seen) || walk(&x, id, seen) || walk(&y, id, seen)
            }
        }
    }
    walk(a, id, &mut Vec::new())
}
