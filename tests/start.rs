//! What a new user sees at the start: a headless start is quiet (no `XDG_RUNTIME_DIR` errors
//! from Mesa's window-system code), and a set `MNIST_DIR` without the files is an error that
//! names the folder instead of a silent fall-back to another copy. Both run the built
//! examples as a user would, with the environment they would have.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// The built example next to this test binary (`cargo test` builds the examples).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let p = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        p.exists(),
        "{} missing: run through `cargo test`",
        p.display()
    );
    p
}

#[test]
fn a_headless_start_prints_no_window_system_errors() {
    if common::device().is_none() {
        return;
    }
    let out = Command::new(example("devices"))
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("XDG_RUNTIME_DIR"),
        "a compute-only start should be quiet:\n{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("suanli adapters"));
}

#[test]
fn a_wrong_mnist_dir_is_an_error_naming_it() {
    if common::device().is_none() {
        return;
    }
    let missing = std::env::temp_dir().join(format!("suanli-no-mnist-{}", std::process::id()));
    let out = Command::new(example("mnist_mlp"))
        .args(["--epochs", "1", "--quiet"])
        .env("MNIST_DIR", &missing)
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "trained anyway:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains(missing.to_str().unwrap()) && stderr.contains("MNIST_DIR"),
        "the error should name the folder:\n{stderr}"
    );
    assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
}
