//! What every template shares: the convolution-or-matmul names of the store and column-sum
//! helpers (`shaders/matmul.wgsl`, `shaders/im2col.wgsl`), the narrow kernels' grid folding,
//! and line joining. A leaf, so the templates and the module that assembles them import one
//! way.

/// Work-groups per grid row of the narrow kernels: more rows fold into work-group y
/// (`Variant::groups` decodes the same number).
pub const NARROW_FOLD: u32 = 32_768;

/// Vector components by index.
pub const COMP: [&str; 4] = ["x", "y", "z", "w"];

/// Joins one line per index.
pub fn lines(n: u32, f: impl Fn(u32) -> String) -> String {
    (0..n).map(f).collect::<Vec<_>>().join("\n")
}

/// The scalar store of C (a convolution twin stores its K chunk's partial product).
pub fn stc(conv: bool) -> &'static str {
    if conv {
        "conv_store(wid.z, "
    } else {
        "store_c("
    }
}

/// The vec4 store of C.
pub fn stc4(conv: bool) -> &'static str {
    if conv {
        "conv_store4(wid.z, "
    } else {
        "store_c4("
    }
}

/// The scalar column-sum store (the bias gradient epilogue).
pub fn csum(conv: bool) -> &'static str {
    if conv {
        "conv_colsum(wid.z, "
    } else {
        "store_colsum("
    }
}

/// The vec4 column-sum store.
pub fn csum4(conv: bool) -> &'static str {
    if conv {
        "conv_colsum4(wid.z, "
    } else {
        "store_colsum4("
    }
}
