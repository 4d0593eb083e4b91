//! The profiler's side of one recorder: timestamp queries around its dispatches
//! ([`Timing`]), resolved at the end of its command buffer and folded into the device's
//! profile when its submission finishes ([`Profiler::collect`]).

use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::device::core::DeviceCore;
use crate::error::Result;
use crate::services::profile::{Profiler, Work, MAX_QUERIES, OFF, PASSES, WALL};

impl Profiler {
    /// A recorder's timing state while the profiler is on (`None` while it is off).
    pub(crate) fn timing(&self, core: &DeviceCore) -> Option<Timing> {
        let mode = self.mode.load(Ordering::Relaxed);
        (mode != OFF).then(|| Timing {
            per_pass: mode == PASSES,
            set: (mode != WALL).then(|| {
                core.device().create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("suanli profiler"),
                    ty: wgpu::QueryType::Timestamp,
                    count: MAX_QUERIES,
                })
            }),
            labels: Vec::new(),
            untimed: 0,
        })
    }

    /// Folds a finished submission's timing into the totals: the timestamps read back from
    /// `readback` (see [`Timing::resolve`]), or the wall time since `t_submit`. Waits for
    /// the submission, which is why profiling serialises submissions.
    pub(crate) fn collect(
        &self,
        core: &DeviceCore,
        timing: Timing,
        readback: Option<wgpu::Buffer>,
        index: wgpu::SubmissionIndex,
        t_submit: Instant,
    ) -> Result<()> {
        if timing.labels.is_empty() && timing.untimed == 0 {
            return Ok(());
        }
        core.wait(Some(index), "profiler")?;
        match readback {
            None => {
                // Wall clock: one entry for the whole submission.
                let ns = t_submit.elapsed().as_nanos() as f64;
                let mut names: Vec<&str> = Vec::new();
                let mut work: Option<Work> = None;
                for (label, w) in &timing.labels {
                    if !names.contains(&label.as_str()) {
                        names.push(label);
                    }
                    if let Some(w) = w {
                        let sum = work.get_or_insert_with(Work::default);
                        sum.flops += w.flops;
                        sum.bytes += w.bytes;
                    }
                }
                let name = if names.len() == 1 {
                    names[0].to_string()
                } else {
                    format!(
                        "submission: {} dispatches of {}",
                        timing.labels.len(),
                        names.join(", ")
                    )
                };
                self.add(&name, self.wall_ns(t_submit), ns, work);
            }
            Some(read) => {
                let bytes = core.map_read(&read, "profiler")?;
                let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
                let period = core.queue().get_timestamp_period() as f64;
                for (i, (label, work)) in timing.labels.iter().enumerate() {
                    let start = ticks[2 * i] as f64 * period;
                    let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
                    self.add(label, start, ns, *work);
                }
            }
        }
        self.add_untimed(timing.untimed);
        Ok(())
    }
}

/// The profiler's record of one recorder's dispatches.
pub(crate) struct Timing {
    /// Timestamp queries; `None` when profiling with the wall clock.
    set: Option<wgpu::QuerySet>,
    /// Timestamps at pass boundaries, one pass per dispatch.
    pub(crate) per_pass: bool,
    labels: Vec<(String, Option<Work>)>,
    untimed: u64,
}

impl Timing {
    /// The next query pair for a dispatch of `label`, or None past the budget.
    pub(crate) fn next(&mut self, label: &str, work: Option<Work>) -> Option<u32> {
        if (self.labels.len() as u32 + 1) * 2 > MAX_QUERIES {
            self.untimed += 1;
            return None;
        }
        self.labels.push((label.to_string(), work));
        Some(self.labels.len() as u32 - 1)
    }

    /// The query set, with timestamps (not the wall clock).
    pub(crate) fn query_set(&self) -> Option<&wgpu::QuerySet> {
        self.set.as_ref()
    }

    /// Records resolving the timestamps into a readable buffer at the end of `encoder`.
    pub(crate) fn resolve(
        &self,
        core: &DeviceCore,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Option<wgpu::Buffer> {
        let set = self.set.as_ref()?;
        if self.labels.is_empty() {
            return None;
        }
        let bytes = self.labels.len() as u64 * 16;
        let resolve = core.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("suanli profiler resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = core.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("suanli profiler readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.resolve_query_set(set, 0..self.labels.len() as u32 * 2, &resolve, 0);
        encoder.copy_buffer_to_buffer(&resolve, 0, &read, 0, bytes);
        Some(read)
    }
}
