//! MNIST and Fashion-MNIST (the same IDX layout: 28×28 bytes, ten classes): the four files,
//! found and checked.
//!
//! Where MNIST is looked for: `$MNIST_DIR` if set (and then only there: a set `MNIST_DIR`
//! without the files is an error naming that folder, never a silent fall-back to another
//! copy); otherwise `./data/mnist`, `~/.suanli/datasets/mnist`, and this crate's own
//! `data/mnist`, in that order. Fashion-MNIST: `$FASHION_MNIST_DIR` the same way, otherwise
//! `./data/fashion-mnist`, `~/.suanli/datasets/fashion-mnist` and Debian's
//! `dataset-fashion-mnist` package (`/usr/share/datasets/fashion-mnist`). Files may be
//! gzip-compressed (`.gz`) or raw.

use std::path::{Path, PathBuf};

use crate::data::idx::{malformed, read_idx, Idx};
use crate::error::{Error, Result};

/// MNIST on the host: 60,000 training and 10,000 test images of 28×28 bytes, with labels.
#[derive(Clone, Debug)]
pub struct Mnist {
    /// Training images, 60000 × 784 bytes.
    pub train_images: Vec<u8>,
    /// Training labels, 0..=9.
    pub train_labels: Vec<u8>,
    /// Test images, 10000 × 784 bytes.
    pub test_images: Vec<u8>,
    /// Test labels.
    pub test_labels: Vec<u8>,
}

/// The four file names, as distributed (MNIST's and Fashion-MNIST's alike).
pub const MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

impl Mnist {
    /// Loads MNIST from where the module docs say. The error lists every place looked.
    pub fn load() -> Result<Mnist> {
        Mnist::load_set("MNIST", "MNIST_DIR", Mnist::search_path())
    }

    /// Loads Fashion-MNIST (Zalando's clothing images, as `Mnist`: the same shapes, labels
    /// 0..=9) from where the module docs say. The error lists every place looked.
    pub fn load_fashion() -> Result<Mnist> {
        let mut path = vec![PathBuf::from("data/fashion-mnist")];
        if let Some(h) = crate::config::home_dir() {
            path.push(h.join(".suanli").join("datasets").join("fashion-mnist"));
        }
        path.push(PathBuf::from("/usr/share/datasets/fashion-mnist"));
        Mnist::load_set("Fashion-MNIST", "FASHION_MNIST_DIR", path)
    }

    /// Loads a set from `$var`, or else the first of `candidates` that holds its files.
    fn load_set(what: &str, var: &str, candidates: Vec<PathBuf>) -> Result<Mnist> {
        if let Some(dir) = crate::config::dir_var(var) {
            if !MNIST_FILES.iter().all(|f| find(&dir, f).is_some()) {
                return Err(Error::io(
                    dir.clone(),
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!(
                            "{var} is set to {}, which does not hold the {what} files ({}, .gz or raw); fix {var} or unset it",
                            dir.display(),
                            MNIST_FILES.join(", ")
                        ),
                    ),
                ));
            }
            return Mnist::load_dir(&dir);
        }
        for dir in &candidates {
            if MNIST_FILES.iter().all(|f| find(dir, f).is_some()) {
                return Mnist::load_dir(dir);
            }
        }
        Err(Error::io(
            candidates[0].clone(),
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "{what} not found; looked for {} (.gz or raw) in: {}. Set {var} to the folder holding them.",
                    MNIST_FILES.join(", "),
                    candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ),
        ))
    }

    /// The folders searched for MNIST without `MNIST_DIR`, in order.
    pub fn search_path() -> Vec<PathBuf> {
        let mut v = vec![PathBuf::from("data/mnist")];
        if let Some(h) = crate::config::home_dir() {
            v.push(h.join(".suanli").join("datasets").join("mnist"));
        }
        v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist"));
        v
    }

    /// Loads MNIST (or Fashion-MNIST) from one directory, checking shapes and label range.
    pub fn load_dir(dir: &Path) -> Result<Mnist> {
        let get = |name: &str| -> Result<Idx> {
            let p = find(dir, name).ok_or_else(|| {
                Error::io(
                    dir.join(name),
                    std::io::Error::new(std::io::ErrorKind::NotFound, "missing (.gz or raw)"),
                )
            })?;
            read_idx(&p)
        };
        let check = |idx: &Idx, name: &str, want: &[usize]| -> Result<()> {
            if idx.dims != want {
                return Err(malformed(
                    &dir.join(name),
                    format!("dimensions {want:?}"),
                    format!("{:?}", idx.dims),
                ));
            }
            if want.len() == 1 && idx.data.iter().any(|&l| l > 9) {
                return Err(malformed(
                    &dir.join(name),
                    "labels 0..=9",
                    "a label above 9",
                ));
            }
            Ok(())
        };
        let ti = get(MNIST_FILES[0])?;
        check(&ti, MNIST_FILES[0], &[60000, 28, 28])?;
        let tl = get(MNIST_FILES[1])?;
        check(&tl, MNIST_FILES[1], &[60000])?;
        let vi = get(MNIST_FILES[2])?;
        check(&vi, MNIST_FILES[2], &[10000, 28, 28])?;
        let vl = get(MNIST_FILES[3])?;
        check(&vl, MNIST_FILES[3], &[10000])?;
        Ok(Mnist {
            train_images: ti.data,
            train_labels: tl.data,
            test_images: vi.data,
            test_labels: vl.data,
        })
    }
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    [dir.join(format!("{name}.gz")), dir.join(name)]
        .into_iter()
        .find(|p| p.is_file())
}
