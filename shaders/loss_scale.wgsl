// Dynamic loss scaling (Keras's LossScaleOptimizer) on the device, with no readback: a small
// state buffer of u32 words holds the scale and its bookkeeping, so a captured step replays
// without host writes.
//
// State words (the *_WORD constants of src/kernels/loss_scale.rs, which a unit test there
// checks against these; optim.wgsl's guarded entry points read SKIP_WORD too):
const SCALE_WORD: u32 = 0u;     // the scale (f32 bits)
const UNSCALE_WORD: u32 = 1u;   // this step's unscale factor 1/scale (f32 bits)
const SKIP_WORD: u32 = 2u;      // 1: this step's gradients are not finite, the optimizer does nothing
const CLEAN_WORD: u32 = 3u;     // clean steps since the scale last changed
const SKIPPED_WORD: u32 = 4u;   // skipped steps in all
const OVERFLOW_WORD: u32 = 5u;  // overflow flag (set by `check_forward`, cleared by `update_forward`)
const GROWTH_WORD: u32 = 6u;    // growth interval (clean steps before the scale doubles)
const DYNAMIC_WORD: u32 = 7u;   // dynamic (0: the scale never changes)

struct Params {
    n: u32,     // elements of the tensor
    slot: u32,  // scale_forward: the state word whose f32 multiplies (0 scale, 1 unscale)
    pad0: u32,
    pad1: u32,
}

const WG: u32 = 256u;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ---- scale: x *= f32(state[slot]), in place (the loss's seed gradient, or a gradient) ----
@group(0) @binding(0) var<storage, read> sc_state: array<u32>;
@group(0) @binding(1) var<storage, read_write> sc_x: array<f32>;
@group(0) @binding(2) var<uniform> sc_p: Params;

@compute @workgroup_size(256)
fn scale_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= sc_p.n) {
        return;
    }
    sc_x[i] = sc_x[i] * bitcast<f32>(sc_state[sc_p.slot]);
}

// ---- check: state[OVERFLOW_WORD] |= 1 if any element of x is inf or NaN ----------------------
// A bit test on the exponent (all ones: inf or NaN), not `x != x` or `x - x != 0`, which a
// compiler may fold away.
@group(0) @binding(0) var<storage, read> ck_x: array<u32>;
@group(0) @binding(1) var<storage, read_write> ck_state: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> ck_p: Params;

@compute @workgroup_size(256)
fn check_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= ck_p.n) {
        return;
    }
    if ((ck_x[i] & 0x7f800000u) == 0x7f800000u) {
        atomicOr(&ck_state[OVERFLOW_WORD], 1u);
    }
}

// ---- update: one invocation, after every gradient is checked ----------------------------------
// Records this step's unscale factor and whether to skip it; then a non-finite step halves
// the scale (dynamic) and resets the clean count, a finite one counts, and the scale doubles
// after `growth` clean steps in a row (Keras 3's LossScaleOptimizer), kept within [1, 2^64]
// as TF2 keeps it finite and at least 1.
@group(0) @binding(0) var<storage, read_write> up_state: array<u32>;

@compute @workgroup_size(1)
fn update_forward() {
    let scale = bitcast<f32>(up_state[SCALE_WORD]);
    let dynamic = up_state[DYNAMIC_WORD] != 0u;
    up_state[UNSCALE_WORD] = bitcast<u32>(1.0 / scale);
    if (up_state[OVERFLOW_WORD] != 0u) {
        up_state[SKIP_WORD] = 1u;
        up_state[CLEAN_WORD] = 0u;
        up_state[SKIPPED_WORD] = up_state[SKIPPED_WORD] + 1u;
        // Never below 1 (TF2's floor): 1 / scale stays finite however many steps overflow.
        if (dynamic) {
            up_state[SCALE_WORD] = bitcast<u32>(max(scale * 0.5, 1.0));
        }
    } else {
        up_state[SKIP_WORD] = 0u;
        if (dynamic) {
            let clean = up_state[CLEAN_WORD] + 1u;
            if (clean >= up_state[GROWTH_WORD]) {
                up_state[CLEAN_WORD] = 0u;
                // Doubled only while it stays at most 2^64 (TF2 doubles only to a finite
                // value; an unbounded scale reaches inf after enough clean steps and every
                // step after would be skipped).
                if (scale <= 9223372036854775808.0) {
                    up_state[SCALE_WORD] = bitcast<u32>(scale * 2.0);
                }
            } else {
                up_state[CLEAN_WORD] = clean;
            }
        }
    }
    up_state[OVERFLOW_WORD] = 0u;
}
