//! Recording GPU work into one command buffer and submitting it: kernel launches
//! ([`Record`]), replays of captured [`Program`]s, copies and clears.
//!
//! Many dispatches share one submission (one compute pass where the profiler allows), which
//! is what keeps per-step overhead low. With the profiler on, each dispatch gets timestamps
//! and [`Recorder::submit`] waits and folds them into the device's profile.

use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::exec::dispatch::Program;
use crate::exec::dispatch::{bind, Record};
use crate::memory::PooledBuffer;
use crate::runtime::Device;
use crate::services::pipeline::{KernelSpec, Pipeline};
use crate::services::profile::Work;
use crate::services::timing::Timing;

/// Records dispatches, replays and copies into one command buffer (see the module docs).
pub struct Recorder<'d> {
    device: &'d Device,
    encoder: wgpu::CommandEncoder,
    /// Uniform buffers of immediate dispatches, held until the submission.
    keep: Vec<PooledBuffer>,
    /// Timestamps around each dispatch while the profiler is on.
    timing: Option<Timing>,
    /// Work the next dispatch declares.
    next_work: Option<Work>,
}

/// One dispatch to encode.
struct Op<'a> {
    pipe: &'a Pipeline,
    bind_group: &'a wgpu::BindGroup,
    offsets: &'a [u32],
    groups: [u32; 3],
    work: Option<Work>,
}

impl<'d> Recorder<'d> {
    /// Starts recording for `device`; [`Recorder::submit`] sends it in one submission.
    pub fn new(device: &'d Device) -> Recorder<'d> {
        Recorder {
            device,
            encoder: device
                .wgpu_device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("suanli"),
                }),
            keep: Vec::new(),
            timing: device.profiler().timing(device.core()),
            next_work: None,
        }
    }

    /// Records every dispatch of a program captured with a table: the `i`-th table-bound
    /// dispatch reads its uniform at `offsets[i]`; dispatches captured with fixed uniforms
    /// need none.
    pub fn replay_at(&mut self, program: &Program, offsets: &[u32]) -> Result<()> {
        let dynamic = program.table_bound();
        if offsets.len() != dynamic {
            return Err(Error::InvalidArgument {
                op: "replay_at",
                name: "offsets",
                expected: format!("{dynamic} offsets, one per table-bound dispatch of the program"),
                found: offsets.len().to_string(),
            });
        }
        let mut next = offsets.iter();
        let mut ops = program.ops.iter().map(|p| Op {
            pipe: &p.pipeline,
            bind_group: &p.bind_group,
            offsets: if p.dynamic {
                next.next().map_or(&[][..], std::slice::from_ref)
            } else {
                &[]
            },
            groups: p.groups,
            work: p.work,
        });
        self.encode("suanli program", &mut ops);
        Ok(())
    }

    /// Records every dispatch of `program` in order; table-bound uniforms read the table's
    /// first slot.
    pub fn replay(&mut self, program: &Program) {
        let mut ops = program.ops.iter().map(|p| Op {
            pipe: &p.pipeline,
            bind_group: &p.bind_group,
            offsets: if p.dynamic { &[0] } else { &[] },
            groups: p.groups,
            work: p.work,
        });
        self.encode("suanli program", &mut ops);
    }

    /// Encodes dispatches in one compute pass, with the profiler's timestamps around each;
    /// when profiling per pass (adapters with timestamps only at pass boundaries), in one
    /// pass each.
    fn encode(&mut self, label: &str, ops: &mut dyn Iterator<Item = Op<'_>>) {
        let mut ops = ops.peekable();
        if ops.peek().is_none() {
            return;
        }
        if matches!(&self.timing, Some(t) if t.per_pass) {
            for op in ops {
                let q = self
                    .timing
                    .as_mut()
                    .and_then(|t| t.next(&op.pipe.label, op.work));
                let writes = match (self.timing.as_ref().and_then(|t| t.query_set()), q) {
                    (Some(set), Some(i)) => Some(wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(2 * i),
                        end_of_pass_write_index: Some(2 * i + 1),
                    }),
                    _ => None,
                };
                let mut pass = self
                    .encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(&op.pipe.label),
                        timestamp_writes: writes,
                    });
                pass.set_pipeline(&op.pipe.pipeline);
                pass.set_bind_group(0, op.bind_group, op.offsets);
                pass.dispatch_workgroups(op.groups[0], op.groups[1], op.groups[2]);
            }
            return;
        }
        let mut pass = self
            .encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(label),
                timestamp_writes: None,
            });
        for op in ops {
            let q = self
                .timing
                .as_mut()
                .and_then(|t| t.next(&op.pipe.label, op.work));
            let set = self.timing.as_ref().and_then(|t| t.query_set());
            pass.set_pipeline(&op.pipe.pipeline);
            pass.set_bind_group(0, op.bind_group, op.offsets);
            if let (Some(set), Some(i)) = (set, q) {
                pass.write_timestamp(set, 2 * i);
            }
            pass.dispatch_workgroups(op.groups[0], op.groups[1], op.groups[2]);
            if let (Some(set), Some(i)) = (set, q) {
                pass.write_timestamp(set, 2 * i + 1);
            }
        }
    }

    /// Records a buffer-to-buffer copy of `bytes` from the start of `src` to the start of
    /// `dst`.
    pub fn copy(&mut self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) {
        self.copy_at(src, dst, 0, bytes);
    }

    /// Records copying `bytes` from the start of `src` to `dst` at `dst_offset`.
    pub fn copy_at(&mut self, src: &wgpu::Buffer, dst: &wgpu::Buffer, dst_offset: u64, bytes: u64) {
        if bytes > 0 {
            self.encoder
                .copy_buffer_to_buffer(src, 0, dst, dst_offset, bytes);
        }
    }

    /// Records zero-filling a buffer.
    pub fn clear(&mut self, buf: &wgpu::Buffer) {
        self.encoder.clear_buffer(buf, 0, None);
    }

    /// Submits everything recorded and returns without waiting (with the profiler on, waits
    /// and records the dispatches' GPU times).
    pub fn submit(mut self) -> Result<wgpu::SubmissionIndex> {
        let device = self.device;
        let core = device.core();
        let timing = self.timing.take();
        let readback = timing
            .as_ref()
            .and_then(|t| t.resolve(core, &mut self.encoder));
        core.check_alive("submit")?;
        let cb = self.encoder.finish();
        let t_submit = Instant::now();
        let profiler = device.profiler();
        profiler.submitting();
        let idx = core.queue().submit([cb]);
        profiler.submitted(core.queue());
        // Completion callbacks run on polls: keep the busy count current.
        core.poll();
        drop(self.keep);
        core.take_uncaptured("submit")?;
        if let Some(t) = timing {
            profiler.collect(core, t, readback, idx.clone(), t_submit)?;
        }
        Ok(idx)
    }
}

impl Record for Recorder<'_> {
    fn device(&self) -> &Device {
        self.device
    }

    fn pipeline(&self, spec: &KernelSpec, constants: &[(&str, f64)]) -> Result<Arc<Pipeline>> {
        let s = &spec.shader;
        self.device.pipelines().get(
            self.device.core(),
            s.name,
            s.source,
            spec.entry,
            spec.bindings,
            constants,
            false,
        )
    }

    fn declare_work(&mut self, flops: f64, bytes: f64) {
        self.next_work = Some(Work { flops, bytes });
    }

    fn dispatch(
        &mut self,
        pipe: &Arc<Pipeline>,
        buffers: &[(&wgpu::Buffer, u64)],
        params: Option<&[u8]>,
        groups: [u32; 3],
    ) -> Result<()> {
        let work = self.next_work.take();
        let Some(p) = bind(self.device, pipe, buffers, params, groups, None, work)? else {
            return Ok(());
        };
        let op = Op {
            pipe: &p.pipeline,
            bind_group: &p.bind_group,
            offsets: &[],
            groups: p.groups,
            work: p.work,
        };
        self.encode(&pipe.label, &mut std::iter::once(op));
        if let Some(u) = p.uniform {
            self.keep.push(u);
        }
        Ok(())
    }

    fn is_capture(&self) -> bool {
        false
    }
}
