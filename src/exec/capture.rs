//! Captured programs: a list of dispatches with their pipelines, bind groups and uniforms
//! built once, replayed as often as needed (a training step) with no allocation or binding.
//!
//! A [`Capture`] records kernel launches ([`Record`]) into a [`Program`] and can do nothing
//! else: it has no `submit`, copies or clears, so work cannot vanish into a capture by
//! mistake. With a parameter table, the uniforms of table-bound dispatches are read at
//! dynamic offsets chosen at replay ([`crate::exec::Recorder::replay_at`]), so parameters
//! that change every step (a batch offset, a dropout seed, an optimizer's bias corrections)
//! are written into the table once per chunk of steps.

use std::sync::Arc;

use crate::error::Result;
use crate::exec::dispatch::{bind, Prepared, Program, Record};
use crate::runtime::Device;
use crate::services::pipeline::{Access, KernelSpec, Pipeline};
use crate::services::profile::Work;

/// Captures kernel launches into a [`Program`] (see the module docs).
pub struct Capture<'d> {
    device: &'d Device,
    ops: Vec<Prepared>,
    /// With a parameter table: uniforms may be bound to it at dynamic offsets.
    table: Option<wgpu::Buffer>,
    /// Whether the next dispatches bind their uniform to the table.
    table_uniforms: bool,
    next_work: Option<Work>,
}

impl<'d> Capture<'d> {
    /// A capture whose dispatches keep the uniforms they were recorded with.
    pub fn new(device: &'d Device) -> Capture<'d> {
        Capture {
            device,
            ops: Vec::new(),
            table: None,
            table_uniforms: false,
            next_work: None,
        }
    }

    /// A capture whose dispatches read their uniforms from `table` at offsets chosen at
    /// replay. Offsets must be multiples of [`Device::uniform_alignment`].
    pub fn with_table(device: &'d Device, table: &wgpu::Buffer) -> Capture<'d> {
        Capture {
            table: Some(table.clone()),
            table_uniforms: true,
            ..Capture::new(device)
        }
    }

    /// With a table: `false` gives the following dispatches fixed uniforms, `true` (the
    /// default) binds them to the table. A program may mix both: only the dispatches that
    /// change per step then take table slots at replay.
    pub fn set_table_uniforms(&mut self, on: bool) {
        self.table_uniforms = on && self.table.is_some();
    }

    /// Whether the next dispatch's uniform goes to the table.
    pub fn table_uniforms(&self) -> bool {
        self.table_uniforms
    }

    /// Ends the current program and starts the next one in the same capture: a step captured
    /// in segments (data-parallel training submits each bucket of gradients as soon as its
    /// layers' backward passes are recorded, so the exchange overlaps the rest).
    pub fn cut(&mut self) -> Program {
        Program {
            ops: std::mem::take(&mut self.ops),
        }
    }

    /// Ends the capture.
    pub fn finish(self) -> Program {
        Program { ops: self.ops }
    }
}

impl Record for Capture<'_> {
    fn device(&self) -> &Device {
        self.device
    }

    fn pipeline(&self, spec: &KernelSpec, constants: &[(&str, f64)]) -> Result<Arc<Pipeline>> {
        let dynamic = self.table_uniforms && spec.bindings.contains(&Access::Uniform);
        let s = &spec.shader;
        self.device.pipelines().get(
            self.device.core(),
            s.name,
            s.source,
            spec.entry,
            spec.bindings,
            constants,
            dynamic,
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
        let table = self.table.as_ref().filter(|_| self.table_uniforms);
        if let Some(p) = bind(self.device, pipe, buffers, params, groups, table, work)? {
            self.ops.push(p);
        }
        Ok(())
    }

    fn is_capture(&self) -> bool {
        true
    }

    fn set_table_uniforms(&mut self, on: bool) -> bool {
        Capture::set_table_uniforms(self, on);
        self.table.is_some()
    }

    fn cut(&mut self) -> Option<Program> {
        Some(Capture::cut(self))
    }
}
