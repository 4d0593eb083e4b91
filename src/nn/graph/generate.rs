//! Text generation from a language model: [`Model::generate`], one new token per step, each
//! drawn on the device from the last position's logits (`kernels::sample`), with the keys
//! and values of earlier positions kept on the device (a KV cache) so that a step runs the
//! model on the new token only.
//!
//! What a model must be: its first input the token ids, (T,) per sequence, read by
//! `Embedding`s; optionally a second input of positions, (T,), read by `Embedding`s too,
//! which generation fills with 0, 1, 2, …; one output of logits, (T, V), linear. With the
//! cache, every layer must work position by position (Dense, LayerNormalization,
//! Embedding, merges, activations, dropout, normalisation) except causal
//! MultiHeadAttentions, which attend to the cache; any other layer is refused with a typed
//! error that names it, and `kv_cache: false` then recomputes the window every step.
//!
//! How a step runs with the cache: the model is instantiated again for `n` rows per
//! sequence (the new tokens), sharing the trained model's weight tensors (nothing is
//! copied), and recorded with the caches in the recording context ([`Decode`]); each
//! attention appends its new keys and values and attends to positions `0..=past + i`. The
//! token drawn is written where the next step's input reads it, so nothing is read back
//! between steps unless a callback streams the tokens.
//!
//! The context is at most the model's T positions (the position table's rows, if fewer).
//! Recomputing (`kv_cache: false`) reads the last T tokens every step, as nanoGPT does. The
//! cache cannot slide (every cached key was computed at its position), so once it is full
//! it is refilled from the last ⌈T/2⌉ tokens, and the next T/2 steps run on the cache again:
//! while the text is shorter than T the two agree token for token, and after that the
//! cached context is between T/2 and T tokens where recomputing sees T.

use crate::error::{Error, Result};
use crate::exec::recorder::Recorder;
use crate::kernels::sample::{self, Draw};
use crate::nn::graph::model::{Entry, Model};
use crate::nn::graph::walk::forward;
use crate::nn::layer::{Cx, Decode, Io, Mode, Src};
use crate::nn::registry::LayerConfig;
use crate::nn::spec::Shape;
use crate::tensor::Tensor;
use crate::vocab::Activation;

/// How [`Model::generate`] draws tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to add after the prompt.
    pub max_new_tokens: usize,
    /// Logits divide by it before the softmax; 0 takes the most likely token every step.
    pub temperature: f32,
    /// Draw only among the `k` most likely tokens (`None`: all).
    pub top_k: Option<usize>,
    /// The draws' seed: the same seed, model and prompt give the same tokens.
    pub seed: u64,
    /// Keep earlier positions' keys and values on the device (the default); `false`
    /// recomputes the whole window every step.
    pub kv_cache: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_new_tokens: 100,
            temperature: 1.0,
            top_k: None,
            seed: 0,
            kv_cache: true,
        }
    }
}

/// What generation reads from a model's structure.
struct LanguageModel {
    /// Positions per sequence the model takes (its inputs' T).
    t: usize,
    /// Positions the context may hold: T, or the position table's rows if fewer.
    cap: usize,
    /// Token ids the token embedding knows.
    vocab: usize,
    /// Logits per position.
    logits: usize,
    /// Whether the model has a positions input.
    positions: bool,
}

/// A typed error about the model's structure.
fn not_lm(expected: &str, found: String) -> Error {
    Error::InvalidArgument {
        op: "generate",
        name: "model",
        expected: format!("a language model: {expected}"),
        found,
    }
}

/// The rows of the `Embedding`s reading input `k` (the fewest), refusing other readers.
fn embedding_rows(model: &Model, k: usize, what: &str) -> Result<usize> {
    let mut rows = None;
    for l in &model.layers {
        if l.inbound.contains(&Src::Input(k)) {
            match &l.spec.config {
                LayerConfig::Embedding(e) => {
                    rows = Some(rows.map_or(e.input_dim, |r: usize| r.min(e.input_dim)))
                }
                other => {
                    return Err(not_lm(
                        &format!("{what} read by Embedding layers"),
                        format!("a {} layer reading input {k}", other.class_name()),
                    ))
                }
            }
        }
    }
    rows.ok_or_else(|| {
        not_lm(
            &format!("{what} read by an Embedding"),
            format!("no layer reading input {k}"),
        )
    })
}

impl LanguageModel {
    fn of(model: &Model) -> Result<LanguageModel> {
        let shapes = model.input_shapes();
        let t =
            match shapes.as_slice() {
                [ids] | [ids, _] if ids.len() == 1 => ids[0],
                _ => return Err(not_lm(
                    "token ids (T,) as its first input and optionally positions (T,) as its second",
                    format!("inputs {shapes:?}"),
                )),
            };
        if shapes.len() == 2 && shapes[1] != [t] {
            return Err(not_lm(
                &format!("positions of shape ({t},) as its second input"),
                format!("{:?}", shapes[1]),
            ));
        }
        let vocab = embedding_rows(model, 0, "token ids")?;
        let positions = shapes.len() == 2;
        let cap = if positions {
            t.min(embedding_rows(model, 1, "positions")?)
        } else {
            t
        };
        let outs = model.output_layers();
        let [out] = outs.as_slice() else {
            return Err(not_lm(
                "one output of logits",
                format!("{} outputs", outs.len()),
            ));
        };
        let l = &model.layers[*out];
        let logits = match l.io().output.as_slice() {
            [rows, v] if *rows == t => *v,
            other => {
                return Err(not_lm(
                    &format!("logits of shape ({t}, vocabulary)"),
                    format!("an output of shape {other:?}"),
                ))
            }
        };
        if l.activation() != Activation::Linear {
            return Err(not_lm(
                "logits out (a linear last layer; a loss from_logits=True)",
                format!("a last layer with activation {:?}", l.activation()),
            ));
        }
        if logits > vocab {
            return Err(not_lm(
                &format!("at most {vocab} logits (the token embedding's rows)"),
                format!("{logits} per position"),
            ));
        }
        Ok(LanguageModel {
            t,
            cap,
            vocab,
            logits,
            positions,
        })
    }
}

/// Whether a layer may run on new positions only, given earlier positions' attention cache.
fn per_position(config: &LayerConfig) -> bool {
    matches!(
        config,
        LayerConfig::Dense(_)
            | LayerConfig::LayerNormalization(_)
            | LayerConfig::BatchNormalization(_)
            | LayerConfig::Embedding(_)
            | LayerConfig::Dropout(_)
            | LayerConfig::Activation(_)
            | LayerConfig::ReLU(_)
            | LayerConfig::Softmax(_)
            | LayerConfig::Rescaling(_)
            | LayerConfig::Normalization(_)
            | LayerConfig::Add(_)
            | LayerConfig::Subtract(_)
            | LayerConfig::Multiply(_)
            | LayerConfig::Average(_)
            | LayerConfig::Maximum(_)
            | LayerConfig::MultiHeadAttention(_)
    )
}

/// The model again for `n` positions per sequence, sharing `model`'s weight tensors.
fn with_positions(model: &Model, n: usize) -> Result<Model> {
    let mut m = Model::with_seed(&model.device, model.seed);
    // The policy too: the cached steps compute as the whole-window pass does.
    m.precision = model.precision;
    m.input = Some(vec![n]);
    m.input_name = model.input_name.clone();
    m.more_inputs = model
        .more_inputs
        .iter()
        .map(|(_, name)| (vec![n], name.clone()))
        .collect();
    m.outputs = model.outputs.clone();
    let mut outs: Vec<Shape> = Vec::with_capacity(model.layers.len());
    for l in &model.layers {
        if !per_position(&l.spec.config) {
            return Err(not_lm(
                "layers that work position by position, besides causal attention, for the KV cache (kv_cache: false recomputes the window instead)",
                format!(
                    "{} layer {:?}",
                    l.spec.config.class_name(),
                    l.spec.name.as_deref().unwrap_or("")
                ),
            ));
        }
        let inputs: Vec<Shape> = l
            .inbound
            .iter()
            .map(|s| match *s {
                Src::Input(_) => Ok(vec![n]),
                Src::Layer(j) => outs.get(j).cloned().ok_or_else(|| Error::Internal {
                    op: "generate",
                    message: format!("layer {j} read before it is built"),
                }),
            })
            .collect::<Result<_>>()?;
        let output = l.spec.config.output_shape_n(&inputs)?;
        let io = Io {
            input: inputs[0].clone(),
            inputs,
            output: output.clone(),
        };
        let layer = l.spec.config.instantiate(io, l.weights().clone())?;
        m.layers.push(Entry {
            spec: l.spec.clone(),
            layer,
            inbound: l.inbound.clone(),
        });
        outs.push(output);
    }
    Ok(m)
}

/// One generation in progress: the draw, the tokens on the device and the models per row
/// count.
struct Run<'m> {
    model: &'m Model,
    lm: LanguageModel,
    draw: Draw,
    /// The generated tokens (u32 bits), one slot per new token.
    tokens: Tensor,
    /// The last token drawn, as the f32 id the next step reads.
    next: Tensor,
    /// Models for n rows per sequence, made on first use.
    steppers: Vec<(usize, Model)>,
}

impl Run<'_> {
    /// Runs `model` on `ids` (f32 ids, (1, n)) at positions `first..first + n`, then draws
    /// token `step` from the logits of row `row`.
    fn step(
        &mut self,
        which: Option<usize>,
        ids: &Tensor,
        first: usize,
        row: usize,
        decode: &mut Option<Decode>,
        step: usize,
    ) -> Result<()> {
        let n = ids.numel();
        let model = match which {
            None => self.model,
            Some(k) => &self.steppers[k].1,
        };
        let mut inputs = vec![ids.clone()];
        if self.lm.positions {
            let pos: Vec<f32> = (first..first + n).map(|p| p as f32).collect();
            inputs.push(Tensor::from_slice(&model.device, &pos, &[1, n])?);
        }
        let mut rec = Recorder::new(&model.device);
        let mut cx = Cx::new(&mut rec, 1, Mode::Predict);
        cx.decode = decode.take();
        if let Some(d) = cx.decode.as_mut() {
            d.next = 0;
        }
        let saved = forward(model, &mut cx, &inputs);
        *decode = cx.decode.take();
        let saved = saved?;
        let out = model.output_layers()[0];
        let logits = saved[out].output.clone();
        drop(saved);
        let v = self.lm.logits;
        sample::sample(
            cx.rec(),
            (logits.buffer(), logits.numel()),
            (row * v, v),
            &self.draw,
            step,
            (self.tokens.buffer(), self.tokens.numel()),
            self.next.buffer(),
        )?;
        let keep = std::mem::take(&mut cx.keep);
        drop(cx);
        rec.submit()?;
        drop(keep);
        if let Some(d) = decode.as_mut() {
            d.past += n;
        }
        Ok(())
    }

    /// The stepper for `n` rows per sequence.
    fn stepper(&mut self, n: usize) -> Result<usize> {
        if let Some(k) = self.steppers.iter().position(|(m, _)| *m == n) {
            return Ok(k);
        }
        self.steppers.push((n, with_positions(self.model, n)?));
        Ok(self.steppers.len() - 1)
    }

    /// The first `count` generated tokens, read back.
    fn read(&self, count: usize) -> Result<Vec<u32>> {
        let all = self.tokens.to_vec()?;
        Ok(all[..count].iter().map(|x| x.to_bits()).collect())
    }

    /// Ids as the f32 row a model reads, padded with zeros to `len`.
    fn ids(&self, ids: &[u32], len: usize) -> Result<Tensor> {
        let mut x: Vec<f32> = ids.iter().map(|&i| i as f32).collect();
        x.resize(len, 0.0);
        Tensor::from_slice(&self.model.device, &x, &[1, len])
    }
}

impl Model {
    /// Continues `prompt` (token ids) by `max_new_tokens` tokens drawn from the model's
    /// logits (temperature, top-k, seeded), returning the prompt followed by them, as
    /// nanoGPT's `generate` does. See the module documentation for what the model must be
    /// and how the KV cache works.
    pub fn generate(&self, prompt: &[u32], options: &GenerateOptions) -> Result<Vec<u32>> {
        self.generate_streaming(prompt, options, None)
    }

    /// [`Model::generate`], calling `on_token` with each new token as soon as it is drawn
    /// (a read-back per token); generation stops early when it returns `false`.
    pub fn generate_streaming(
        &self,
        prompt: &[u32],
        options: &GenerateOptions,
        mut on_token: Option<&mut dyn FnMut(u32) -> bool>,
    ) -> Result<Vec<u32>> {
        let lm = LanguageModel::of(self)?;
        let bad = |name: &'static str, expected: String, found: String| Error::InvalidArgument {
            op: "generate",
            name,
            expected,
            found,
        };
        if prompt.is_empty() {
            return Err(bad(
                "prompt",
                "at least one token id".into(),
                "an empty prompt".into(),
            ));
        }
        if let Some((i, id)) = prompt
            .iter()
            .enumerate()
            .find(|(_, &id)| id as usize >= lm.vocab)
        {
            return Err(bad(
                "prompt",
                format!("token ids below {} (the vocabulary)", lm.vocab),
                format!("{id} at position {i}"),
            ));
        }
        if options.top_k == Some(0) {
            return Err(bad(
                "top_k",
                "at least 1, or None for every token".into(),
                "0".into(),
            ));
        }
        if !options.temperature.is_finite() || options.temperature < 0.0 {
            return Err(bad(
                "temperature",
                "a finite value ≥ 0 (0: the most likely token)".into(),
                options.temperature.to_string(),
            ));
        }
        let steps = options.max_new_tokens;
        if steps == 0 {
            return Ok(prompt.to_vec());
        }
        let dev = &self.device;
        let mut run = Run {
            model: self,
            draw: Draw {
                temperature: options.temperature,
                top_k: options.top_k,
                seed: options.seed,
            },
            tokens: Tensor::zeros(dev, &[steps])?,
            next: Tensor::zeros(dev, &[1, 1])?,
            steppers: Vec::new(),
            lm,
        };
        let (t, cap) = (run.lm.t, run.lm.cap);
        // The prompt and the first `done` tokens drawn, read back.
        let text = |run: &Run<'_>, done: usize| -> Result<Vec<u32>> {
            let mut all = prompt.to_vec();
            all.extend(run.read(done)?);
            Ok(all)
        };
        let mut decode: Option<Decode> = None;
        let mut len = 0; // positions in the cache
        let mut done = 0; // tokens drawn
        while done < steps {
            if let Some(f) = on_token.as_mut().filter(|_| done > 0) {
                if !f(run.read(done)?[done - 1]) {
                    return text(&run, done);
                }
            }
            if !options.kv_cache {
                // The whole window again: the last T tokens (or the position table's rows).
                let all = text(&run, done)?;
                let start = all.len().saturating_sub(cap);
                let x = run.ids(&all[start..], t)?;
                run.step(None, &x, 0, all.len() - start - 1, &mut decode, done)?;
            } else if done == 0 || len == cap {
                // Fill the cache: with the prompt first, later with the last ⌈cap/2⌉ tokens.
                let all = text(&run, done)?;
                let keep = if done == 0 { cap } else { cap.div_ceil(2) };
                let start = all.len().saturating_sub(keep);
                let n = all.len() - start;
                let k = run.stepper(n)?;
                let x = run.ids(&all[start..], n)?;
                let mut d = decode.take().unwrap_or(Decode {
                    past: 0,
                    cap,
                    caches: Vec::new(),
                    next: 0,
                });
                d.past = 0;
                decode = Some(d);
                run.step(Some(k), &x, 0, n - 1, &mut decode, done)?;
                len = n;
            } else {
                let k = run.stepper(1)?;
                let x = run.next.clone();
                run.step(Some(k), &x, len, 0, &mut decode, done)?;
                len += 1;
            }
            done += 1;
        }
        let out = text(&run, steps)?;
        if let Some(f) = on_token.as_mut() {
            f(out[out.len() - 1]);
        }
        Ok(out)
    }
}
