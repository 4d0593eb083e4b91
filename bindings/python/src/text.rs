//! Text for language models: the character tokenizer (`suanli.text.Tokenizer`), a text split
//! 90/10 with its random windows (`suanli.text.Text`: drawn on the host from the Rust `Text`'s
//! seeded generator, as NumPy arrays a Keras `fit` takes; the Rust example draws its windows
//! on the device instead) and generation (`Model.generate` in Python calls [`generate`]).

use numpy::prelude::*;
use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use suanli::data::{Split, Text, Tokenizer};
use suanli::nn::GenerateOptions;

use crate::errors::IntoPy;
use crate::model::PyModel;

/// Characters ↔ token ids: id `i` is the `i`-th character of the sorted vocabulary of the
/// text it was made from (nanoGPT's `shakespeare_char`).
#[pyclass(module = "suanli._native", name = "Tokenizer")]
pub struct PyTokenizer(Tokenizer);

#[pymethods]
impl PyTokenizer {
    /// The tokenizer of the distinct characters of `text`.
    #[new]
    fn new(text: &str) -> Self {
        PyTokenizer(Tokenizer::of(text))
    }

    /// The tokenizer of a UTF-8 file's characters (a file that is not UTF-8 is an error
    /// naming the offset of the first bad byte).
    #[staticmethod]
    fn from_file(path: std::path::PathBuf) -> PyResult<Self> {
        let text = suanli::data::Text::open(&path).py()?;
        Ok(PyTokenizer(text.tokenizer().clone()))
    }

    /// The ids of `text` (a character outside the vocabulary is a ValueError naming it).
    fn encode(&self, text: &str) -> PyResult<Vec<u32>> {
        self.0.encode(text).py()
    }

    /// The text of `ids` (an id outside the vocabulary is a ValueError naming it).
    fn decode(&self, ids: Vec<i64>) -> PyResult<String> {
        let ids = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                u32::try_from(id).map_err(|_| {
                    PyValueError::new_err(format!(
                        "Tokenizer.decode: expected ids below {}; found {id} at position {i}",
                        self.0.vocab_size()
                    ))
                })
            })
            .collect::<PyResult<Vec<u32>>>()?;
        self.0.decode(&ids).py()
    }

    /// How many ids there are.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }

    /// The characters, in id order.
    #[getter]
    fn chars(&self) -> String {
        self.0.chars().iter().collect()
    }
}

/// Windows and their targets, as NumPy arrays.
type Pair<'py> = (Bound<'py, PyArray2<i32>>, Bound<'py, PyArray2<i32>>);

/// A UTF-8 text as token ids of its characters, split 90/10 as nanoGPT's `shakespeare_char`.
#[pyclass(module = "suanli._native", name = "Text")]
pub struct PyText(Text);

fn split_of(split: &str) -> PyResult<Split> {
    match split {
        "train" => Ok(Split::Train),
        "val" | "validation" => Ok(Split::Validation),
        other => Err(PyValueError::new_err(format!(
            "Text: expected split \"train\" or \"val\"; found {other:?}"
        ))),
    }
}

#[pymethods]
impl PyText {
    /// The text of a string (at least two characters).
    #[new]
    fn new(text: &str) -> PyResult<Self> {
        Text::from_text(text).py().map(PyText)
    }

    /// The text of a UTF-8 file (not UTF-8: a ValueError naming the offset of the first bad
    /// byte).
    #[staticmethod]
    fn from_file(path: std::path::PathBuf) -> PyResult<Self> {
        Text::open(&path).py().map(PyText)
    }

    /// Its tokenizer.
    #[getter]
    fn tokenizer(&self) -> PyTokenizer {
        PyTokenizer(self.0.tokenizer().clone())
    }

    /// The ids of a split (`"train"`, the first 90%, or `"val"`) as an int32 array.
    fn tokens<'py>(&self, py: Python<'py>, split: &str) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let t = self.0.tokens(split_of(split)?);
        Ok(PyArray1::from_iter(py, t.iter().map(|&i| i as i32)))
    }

    /// `count` random windows of `block` ids of a split and the ids one position on, drawn
    /// from a generator seeded by `seed` (the windows the Rust side draws for that seed):
    /// `(x, y)`, int32 arrays of shape (count, block).
    fn windows<'py>(
        &self,
        py: Python<'py>,
        split: &str,
        count: usize,
        block: usize,
        seed: u64,
    ) -> PyResult<Pair<'py>> {
        let (x, y) = self.0.windows(split_of(split)?, count, block, seed).py()?;
        let arr = |v: Vec<u32>| -> PyResult<Bound<'py, PyArray2<i32>>> {
            PyArray1::from_iter(py, v.into_iter().map(|i| i as i32)).reshape([count, block])
        };
        Ok((arr(x)?, arr(y)?))
    }
}

/// `prompt` continued by `max_new_tokens` tokens (see `Model::generate`); `callback(id)`
/// per new token when given, stopping when it returns False (an exception it raises stops
/// generation and propagates).
#[pyfunction]
#[pyo3(signature = (model, prompt, max_new_tokens, temperature, top_k, seed, kv_cache, callback = None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, spelled out
pub fn generate(
    py: Python<'_>,
    model: &PyModel,
    prompt: Vec<i64>,
    max_new_tokens: usize,
    temperature: f32,
    top_k: Option<usize>,
    seed: u64,
    kv_cache: bool,
    callback: Option<Py<PyAny>>,
) -> PyResult<Vec<u32>> {
    let prompt = prompt
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            u32::try_from(id).map_err(|_| {
                PyValueError::new_err(format!(
                    "generate prompt: expected token ids ≥ 0; found {id} at position {i}"
                ))
            })
        })
        .collect::<PyResult<Vec<u32>>>()?;
    let options = GenerateOptions {
        max_new_tokens,
        temperature,
        top_k,
        seed,
        kv_cache,
    };
    let inner = &model.inner;
    let Some(cb) = callback else {
        return py.detach(|| inner.generate(&prompt, &options)).py();
    };
    let mut raised: Option<PyErr> = None;
    let out = py.detach(|| {
        let mut f = |tok: u32| -> bool {
            Python::attach(|py| match cb.call1(py, (tok,)) {
                Ok(r) => !matches!(r.extract::<bool>(py), Ok(false)),
                Err(e) => {
                    raised = Some(e);
                    false
                }
            })
        };
        inner.generate_streaming(&prompt, &options, Some(&mut f))
    });
    if let Some(e) = raised {
        return Err(e);
    }
    out.py()
}
