//! Character-level text for language models, nanoGPT's `shakespeare_char` convention: the
//! vocabulary is the sorted set of the text's characters, the first 90% of the tokens train
//! and the last 10% validate, and a batch is random windows of `block + 1` tokens (inputs
//! and the next token at every position).
//!
//! Training draws the windows on the device ([`Text::device_windows`]): the split's tokens
//! are uploaded once (one byte each below 256 ids, else a u32), and the dataset's gather is
//! one dispatch of `shaders/windows.wgsl` that draws each row's window start from a
//! counter-based hash of (seed, step, row) and writes the row's inputs and targets, the f32
//! ids the model and the loss read. The step is the optimizer step a training step already
//! writes into its parameter table (0 when evaluating: a fixed set of windows), the row the
//! batch's offset plus the row's place in it, so a step costs the host nothing but the
//! 48-byte uniform the table carries anyway: no drawing, no upload. Because the draw is a
//! pure function of the three, a resumed run draws the uninterrupted run's windows, and
//! the slices of one batch that other devices or MPI processes train (consecutive rows of
//! it) draw different windows from one seed, so several processes train the windows one
//! process would. The dataset's length is only how many windows make an epoch.
//!
//! [`Text::windows`] and [`Text::windows_dataset`] still draw windows on the host from a
//! seeded generator (the Python binding's `Text.windows`, and data to inspect).

use std::path::Path;

use crate::data::dataset::Dataset;
use crate::data::features::{Features, IdRecords, Targets, WindowSource};
use crate::error::{Error, Result};
use crate::kernels::windows::Tokens;
use crate::ops::Labels;
use crate::random::Rng;
use crate::runtime::Device;

/// Which part of a [`Text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The first 90% of the tokens.
    Train,
    /// The last 10%.
    Validation,
}

/// Characters ↔ token ids: id `i` is the `i`-th character of the sorted vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tokenizer {
    chars: Vec<char>,
}

impl Tokenizer {
    /// The tokenizer of the distinct characters of `text`, sorted.
    pub fn of(text: &str) -> Tokenizer {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        Tokenizer { chars }
    }

    /// Its characters, in id order.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// How many ids there are.
    pub fn vocab_size(&self) -> usize {
        self.chars.len()
    }

    /// The ids of `text`; a character outside the vocabulary is an error naming it and its
    /// position.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .enumerate()
            .map(|(i, c)| {
                self.chars
                    .binary_search(&c)
                    .map(|k| k as u32)
                    .map_err(|_| Error::InvalidArgument {
                        op: "Tokenizer::encode",
                        name: "text",
                        expected: format!(
                            "characters of the vocabulary ({} of them)",
                            self.chars.len()
                        ),
                        found: format!("{c:?} at position {i}"),
                    })
            })
            .collect()
    }

    /// The text of `ids`; an id outside the vocabulary is an error naming it and its position.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        ids.iter()
            .enumerate()
            .map(|(i, &id)| {
                self.chars
                    .get(id as usize)
                    .copied()
                    .ok_or_else(|| Error::InvalidArgument {
                        op: "Tokenizer::decode",
                        name: "ids",
                        expected: format!("ids below {}", self.chars.len()),
                        found: format!("{id} at position {i}"),
                    })
            })
            .collect()
    }
}

/// A text as token ids, split 90/10 (see the module docs).
#[derive(Clone, Debug)]
pub struct Text {
    tokenizer: Tokenizer,
    tokens: Vec<u32>,
    split: usize,
}

impl Text {
    /// The text of a UTF-8 file. Bytes that are not UTF-8 are an error naming the offset of
    /// the first.
    pub fn open(path: &Path) -> Result<Text> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let s = String::from_utf8(bytes).map_err(|e| Error::Malformed {
            path: path.to_path_buf(),
            format: "UTF-8 text",
            expected: "UTF-8 text".into(),
            found: format!(
                "a byte that is not UTF-8 at offset {}",
                e.utf8_error().valid_up_to()
            ),
        })?;
        Text::from_text(&s)
    }

    /// The text of a string (at least two characters: one to read, one to predict).
    pub fn from_text(text: &str) -> Result<Text> {
        let tokenizer = Tokenizer::of(text);
        let tokens = tokenizer.encode(text)?;
        if tokens.len() < 2 {
            return Err(Error::InvalidArgument {
                op: "Text",
                name: "text",
                expected: "at least two characters".into(),
                found: format!("{} characters", tokens.len()),
            });
        }
        let split = tokens.len() * 9 / 10;
        Ok(Text {
            tokenizer,
            tokens,
            split,
        })
    }

    /// Its tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The tokens of a split.
    pub fn tokens(&self, split: Split) -> &[u32] {
        match split {
            Split::Train => &self.tokens[..self.split],
            Split::Validation => &self.tokens[self.split..],
        }
    }

    /// `count` random windows of `block` tokens of `split` and, for each, the tokens one
    /// position on (what each position predicts), drawn from a generator seeded by `seed`:
    /// (inputs, targets), `count·block` ids each.
    pub fn windows(
        &self,
        split: Split,
        count: usize,
        block: usize,
        seed: u64,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let tokens = self.tokens(split);
        if block == 0 || tokens.len() < block + 1 {
            return Err(Error::InvalidArgument {
                op: "Text::windows",
                name: "block",
                expected: format!(
                    "at least 1 and below the split's {} tokens (a window and the token after it)",
                    tokens.len()
                ),
                found: block.to_string(),
            });
        }
        let starts = tokens.len() - block;
        let mut rng = Rng::new(seed);
        let (mut x, mut y) = (
            Vec::with_capacity(count * block),
            Vec::with_capacity(count * block),
        );
        for _ in 0..count {
            let s = ((rng.uniform(0.0, 1.0) * starts as f64) as usize).min(starts - 1);
            x.extend_from_slice(&tokens[s..s + block]);
            y.extend_from_slice(&tokens[s + 1..s + block + 1]);
        }
        Ok((x, y))
    }

    /// [`Text::windows`] as a dataset on `device`: an id column of (block) per sample and
    /// a label per position.
    pub fn windows_dataset(
        &self,
        device: &Device,
        split: Split,
        count: usize,
        block: usize,
        seed: u64,
    ) -> Result<Dataset> {
        let (x, y) = self.windows(split, count, block, seed)?;
        Dataset::from_ids(device, &x, block, &y, block)
    }

    /// A dataset of `samples` windows of `block` tokens of `split` drawn on the device (see
    /// the module docs): the split's tokens uploaded once, each step's windows drawn from
    /// `seed`, the step and the rows, the inputs as the first input column (a model's token
    /// ids) and the next tokens as labels per position, as [`Text::windows_dataset`] lays
    /// them out. More columns (positions) are added as to any dataset. Its length is the
    /// windows of an epoch; its [`Dataset::labels`] hold only the largest id a window can
    /// hold (the bound a model checks its classes against), the labels being drawn too.
    pub fn device_windows(
        &self,
        device: &Device,
        split: Split,
        samples: usize,
        block: usize,
        seed: u64,
    ) -> Result<Dataset> {
        let tokens = self.tokens(split);
        if block == 0 || tokens.len() < block + 1 {
            return Err(Error::InvalidArgument {
                op: "Text::device_windows",
                name: "block",
                expected: format!(
                    "at least 1 and below the split's {} tokens (a window and the token after it)",
                    tokens.len()
                ),
                found: block.to_string(),
            });
        }
        if samples == 0 {
            return Err(Error::InvalidArgument {
                op: "Text::device_windows",
                name: "samples",
                expected: "at least one window per epoch".into(),
                found: "0".into(),
            });
        }
        let source = WindowSource {
            tokens: Tokens::new(device, tokens)?,
            seed,
            block,
        };
        // The labels' bound for the model's checks (the largest id any window can hold);
        // the labels themselves are drawn with the windows.
        let max = tokens.iter().copied().max().unwrap_or(0);
        let bound = Labels::new(device, &[max])?;
        let mut data = Dataset::assemble(
            device,
            Features::Windows(source),
            Targets::Classes(bound, block),
            samples,
            block,
        );
        // Every id a window may hold, by its position in the split.
        data.id_records
            .push((0, IdRecords::new(tokens, tokens.len())));
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_is_sorted_and_the_split_is_nine_tenths() {
        let t = Text::from_text("hello world, hello!").unwrap();
        assert_eq!(
            t.tokenizer().chars(),
            [' ', '!', ',', 'd', 'e', 'h', 'l', 'o', 'r', 'w']
        );
        assert_eq!(t.tokens(Split::Train).len(), 19 * 9 / 10);
        assert_eq!(
            t.tokens(Split::Train).len() + t.tokens(Split::Validation).len(),
            19
        );
        let ids = t.tokenizer().encode("hello").unwrap();
        assert_eq!(t.tokenizer().decode(&ids).unwrap(), "hello");
    }

    #[test]
    fn windows_hold_the_next_token_at_every_position() {
        let text: String = (0..200)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let t = Text::from_text(&text).unwrap();
        let (x, y) = t.windows(Split::Train, 50, 8, 3).unwrap();
        assert_eq!((x.len(), y.len()), (400, 400));
        for (xw, yw) in x.chunks(8).zip(y.chunks(8)) {
            for i in 0..8 {
                assert_eq!((xw[i] + 1) % 26, yw[i]);
            }
        }
        assert_eq!(t.windows(Split::Train, 50, 8, 3).unwrap().0, x);
        assert_ne!(t.windows(Split::Train, 50, 8, 4).unwrap().0, x);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let t = Text::from_text("abcabc").unwrap();
        match t.tokenizer().encode("abz") {
            Err(Error::InvalidArgument { found, .. }) => assert_eq!(found, "'z' at position 2"),
            r => panic!("{r:?}"),
        }
        match t.tokenizer().decode(&[0, 7]) {
            Err(Error::InvalidArgument { found, .. }) => assert_eq!(found, "7 at position 1"),
            r => panic!("{r:?}"),
        }
        assert!(Text::from_text("a").is_err());
        assert!(t.windows(Split::Validation, 1, 5, 0).is_err());
        let dir = std::env::temp_dir().join(format!("suanli-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.txt");
        std::fs::write(&f, b"ok\xff\xfe").unwrap();
        match Text::open(&f) {
            Err(Error::Malformed { found, .. }) => assert!(found.contains("offset 2"), "{found}"),
            r => panic!("{r:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
