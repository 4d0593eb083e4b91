//! Malformed model files are typed errors, never panics or huge allocations: the
//! safetensors framing, the architecture metadata, and each tensor's dtype and shape.
//! (Malformed IDX files are covered in tests/training.rs.)

mod common;

use std::collections::HashMap;
use std::path::Path;

use suanli::internals::weights_file::parse_model_file;
use suanli::Error;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A valid 3→4→2 model file, with `edit` applied to its tensors and architecture first.
fn file(
    edit: impl FnOnce(&mut Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)>, &mut String),
) -> Vec<u8> {
    tagged(Some("suanli-sequential-v1"), edit)
}

/// [`file`] with this format tag (or none).
fn tagged(
    format: Option<&str>,
    edit: impl FnOnce(&mut Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)>, &mut String),
) -> Vec<u8> {
    let mut tensors = vec![
        (
            "dense_0.kernel".to_string(),
            safetensors::Dtype::F32,
            vec![3, 4],
            f32_bytes(&[0.5; 12]),
        ),
        (
            "dense_0.bias".to_string(),
            safetensors::Dtype::F32,
            vec![4],
            f32_bytes(&[0.1; 4]),
        ),
        (
            "dense_1.kernel".to_string(),
            safetensors::Dtype::F32,
            vec![4, 2],
            f32_bytes(&[-0.5; 8]),
        ),
        (
            "dense_1.bias".to_string(),
            safetensors::Dtype::F32,
            vec![2],
            f32_bytes(&[0.0; 2]),
        ),
    ];
    let mut arch = r#"[{"units":4,"activation":"relu","use_bias":true,"input_dim":3},{"units":2,"activation":"softmax","use_bias":true,"input_dim":4}]"#.to_string();
    edit(&mut tensors, &mut arch);
    let views: Vec<(String, safetensors::tensor::TensorView)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    let mut meta = HashMap::from([("architecture".to_string(), arch)]);
    if let Some(f) = format {
        meta.insert("format".to_string(), f.to_string());
    }
    safetensors::tensor::serialize(views, Some(meta)).unwrap()
}

fn malformed(what: &str, bytes: &[u8]) -> String {
    match parse_model_file(Path::new("model.safetensors"), bytes) {
        Err(e @ Error::Malformed { .. }) => e.to_string(),
        other => panic!("{what}: expected Malformed, got {other:?}"),
    }
}

#[test]
fn a_valid_file_parses() {
    let m = parse_model_file(Path::new("m"), &file(|_, _| {})).unwrap();
    assert_eq!(m.layers.len(), 2);
    assert_eq!(
        (m.layers[0].input.clone(), m.layers[0].output.clone()),
        (vec![3], vec![4])
    );
    assert_eq!(m.layers[1].weight("kernel").unwrap(), &[-0.5; 8]);
    assert_eq!(
        m.layers[1].spec.config.activation().unwrap(),
        suanli::Activation::Softmax
    );
}

#[test]
fn framing_errors() {
    let good = file(|_, _| {});
    malformed("empty", &[]);
    malformed("truncated header length", &good[..5]);
    malformed("truncated data", &good[..good.len() - 3]);
    // A header length of 2^64-1: rejected from the 8-byte prefix, nothing allocated.
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    malformed("absurd header length", &huge);
    // A header length that runs past the end of the file.
    let mut long = good.clone();
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) + 10_000;
    long[..8].copy_from_slice(&n.to_le_bytes());
    malformed("header past the end", &long);
    // Not JSON inside.
    let mut garbage = good.clone();
    garbage[8] = b'#';
    malformed("header not JSON", &garbage);
}

#[test]
fn tensor_errors() {
    let msg = malformed(
        "wrong dtype",
        &file(|t, _| {
            t[0].1 = safetensors::Dtype::F64;
            t[0].3 = vec![0; 12 * 8];
        }),
    );
    assert!(msg.contains("dense_0.kernel as F32 [3, 4]"), "{msg}");
    let msg = malformed(
        "wrong shape",
        &file(|t, _| {
            t[2].2 = vec![2, 4];
        }),
    );
    assert!(msg.contains("dense_1.kernel"), "{msg}");
    let msg = malformed(
        "missing bias",
        &file(|t, _| {
            t.remove(3);
        }),
    );
    assert!(msg.contains("dense_1.bias"), "{msg}");
}

#[test]
fn architecture_errors() {
    let cases: Vec<(&str, &str)> = vec![
        ("not JSON", "[{"),
        ("not a list", r#"{"units":4}"#),
        ("empty", "[]"),
        (
            "zero units",
            r#"[{"units":0,"activation":"relu","use_bias":true,"input_dim":3}]"#,
        ),
        (
            "absurd units",
            r#"[{"units":99999999999,"activation":"relu","use_bias":true,"input_dim":3}]"#,
        ),
        (
            "chain broken",
            r#"[{"units":4,"activation":"relu","use_bias":true,"input_dim":3},{"units":2,"activation":"softmax","use_bias":true,"input_dim":5}]"#,
        ),
        (
            "bias flag not a bool",
            r#"[{"units":4,"activation":"relu","use_bias":"yes","input_dim":3}]"#,
        ),
        (
            "no activation",
            r#"[{"units":4,"use_bias":true,"input_dim":3}]"#,
        ),
    ];
    for (what, arch) in cases {
        malformed(what, &file(|_, a| *a = arch.to_string()));
    }
    // A format tag this version does not know, junk, or none: refused, naming it and the
    // tags understood (not read as far as it goes, dropping what it does not know).
    for (what, tag, says) in [
        (
            "a later version",
            Some("suanli-sequential-v9"),
            "\"suanli-sequential-v9\"",
        ),
        ("junk", Some("pytorch"), "\"pytorch\""),
        ("none", None, "found none"),
    ] {
        let e = malformed(what, &tagged(tag, |_, _| {}));
        assert!(
            e.contains(says) && e.contains("suanli-checkpoint-v2"),
            "{what}: {e}"
        );
    }
    // No architecture at all.
    let views: Vec<(String, safetensors::tensor::TensorView)> = vec![];
    let bytes = safetensors::tensor::serialize(views, None::<HashMap<String, String>>).unwrap();
    malformed("no metadata", &bytes);
}

#[test]
fn load_reports_the_same_errors_with_the_path() {
    let dev = dev_or_skip!();
    let dir = std::env::temp_dir().join(format!("suanli-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.safetensors");
    let good = file(|_, _| {});
    std::fs::write(&p, &good[..good.len() - 1]).unwrap();
    let e = suanli::nn::Sequential::load(&dev, &p).err().unwrap();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("bad.safetensors"), "{e}");
    // A valid file loads and predicts with its stored weights: relu(0.5·Σx + 0.1).
    std::fs::write(&p, &good).unwrap();
    let m = suanli::nn::Sequential::load(&dev, &p).unwrap();
    let x = suanli::Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[1, 3]).unwrap();
    let y = m.predict(&x).unwrap().to_vec().unwrap();
    assert_eq!(y.len(), 2);
    assert!(
        (y[0] - 0.5).abs() < 1e-6 && (y[1] - 0.5).abs() < 1e-6,
        "{y:?}"
    );
    let e = suanli::nn::Sequential::load(&dev, &dir.join("missing.safetensors"))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}
