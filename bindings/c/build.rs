//! Writes include/suanli.h from the crate's extern "C" items with cbindgen. The header is
//! checked in; CI rebuilds it and fails when it differs from the committed one.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    // A SONAME, so programs record "libsuanli.so" and find it on the library path, not the
    // path the build happened to link it from.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsuanli.so");
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml"))
        .expect("bindings/c/cbindgen.toml is readable");
    match cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
    {
        Ok(b) => {
            b.write_to_file(format!("{dir}/include/suanli.h"));
        }
        // A parse error in the sources is reported by rustc itself, better than here.
        Err(e) => println!("cargo:warning=suanli.h not regenerated: {e}"),
    }
}
