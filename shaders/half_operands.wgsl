// Float16 operands of the matmul and convolution kernels (Keras's mixed_float16 policy): with
// HALF every value a kernel loads from its operands (A and B of a matmul; x, W, dy, Wᵀ of a
// convolution) is rounded to binary16 by f16_round_ (round to nearest even, |x| >= 65520 to
// infinity, NaN and subnormals kept) as it is loaded; products and sums stay f32, so a
// product of two halves is exact and only the f32 accumulation rounds. Storage stays f32
// words. Without HALF (an override constant, so the branch folds away) a load is unchanged.
// Needs f16_round.wgsl before it.

override HALF: bool = false;

fn h16(x: f32) -> f32 {
    if (HALF) {
        return f16_round_(x);
    }
    return x;
}

fn h16v(v: vec4<f32>) -> vec4<f32> {
    if (HALF) {
        return vec4<f32>(f16_round_(v.x), f16_round_(v.y), f16_round_(v.z), f16_round_(v.w));
    }
    return v;
}
