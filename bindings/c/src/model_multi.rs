//! The data path of models of several inputs and outputs (a graph from
//! `suanli_model_from_config`, or a file from Rust or Python): a loss per output
//! (`suanli_model_compile_outputs`), and `fit`, `evaluate` and `predict` taking an array per
//! input and a target column per output, as Rust's `Dataset::with_input` and
//! `with_target_classes` / `with_target_values` hold them. `suanli_model_fit` and its
//! siblings take one array and one column; these take the model's counts, so a caller's
//! mismatch (a column too few, a NULL among them, labels where the loss wants values) is a
//! typed error naming the input or output, never a read past an array.

use std::ffi::c_void;

use suanli::data::Dataset;
use suanli::nn::{Loss, Sequential};
use suanli::Tensor;

use crate::model::{fit_data, loss_of, optimizer_of, suanli_model, suanli_progress_fn};
use crate::{deref, guard, put, suanli_status, Fail, Result};

/// A shape mismatch with its message.
fn mismatch(message: String) -> Fail {
    Fail {
        status: suanli_status::SUANLI_ERROR_SHAPE_MISMATCH,
        message,
    }
}

/// `rows × per` as a length, or a mismatch naming `what` when it does not fit a `usize`.
fn len(rows: usize, per: usize, what: &str) -> Result<usize> {
    rows.checked_mul(per)
        .ok_or_else(|| mismatch(format!("{what}: {rows} rows of {per} values overflow")))
}

/// The `n` pointers of the array `p` (`what` names it); NULL as a whole is refused.
unsafe fn pointers<'a, T>(p: *const *const T, n: usize, what: &str) -> Result<&'a [*const T]> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    Ok(std::slice::from_raw_parts(p, n))
}

/// Each output's class labels per sample (1, or the positions of a (positions, classes)
/// output), for sparse categorical cross-entropy.
fn positions(shape: &[usize]) -> usize {
    shape[..shape.len().saturating_sub(1)]
        .iter()
        .product::<usize>()
        .max(1)
}

/// Checks `n` arrays against the model's inputs; each input's per-sample shape.
fn input_shapes(m: &Sequential, n: usize) -> Result<Vec<Vec<usize>>> {
    let shapes: Vec<Vec<usize>> = m.input_shapes().iter().map(|s| s.to_vec()).collect();
    if n != shapes.len() {
        return Err(mismatch(format!(
            "n_inputs: expected {} arrays (the model's inputs: {}); found {n}",
            shapes.len(),
            m.input_names().join(", ")
        )));
    }
    Ok(shapes)
}

/// The dataset of `rows` samples: `inputs[k]` (`rows × input k's size` floats) for each
/// input, and for output k `labels[k]` (`rows × positions` class ids, where its loss is
/// sparse categorical cross-entropy) or `targets[k]` (`rows × output k's size` floats),
/// the other NULL. `labels` or `targets` may be NULL as a whole where no output needs it.
unsafe fn dataset(
    m: &Sequential,
    inputs: *const *const f32,
    n_inputs: usize,
    labels: *const *const u32,
    targets: *const *const f32,
    n_outputs: usize,
    rows: usize,
) -> Result<Dataset> {
    let shapes = input_shapes(m, n_inputs)?;
    let xs = pointers(inputs, n_inputs, "inputs")?;
    if let Some(k) = xs.iter().position(|p| p.is_null()) {
        return Err(Fail::null(&format!("inputs[{k}]")));
    }
    if m.loss().is_none() {
        return Err(Fail::invalid(
            "model: expected a compiled model (suanli_model_compile or \
             suanli_model_compile_outputs: the losses say what each output's targets are); \
             found none"
                .into(),
        ));
    }
    let (losses, names) = (m.losses(), m.output_names());
    let outs: Vec<Vec<usize>> = m.output_shapes().iter().map(|s| s.to_vec()).collect();
    if n_outputs != losses.len() {
        return Err(mismatch(format!(
            "n_outputs: expected {} target columns (the model's outputs: {}); found {n_outputs}",
            losses.len(),
            names.join(", ")
        )));
    }
    let ls: Vec<*const u32> = match labels.is_null() {
        true => vec![std::ptr::null(); n_outputs],
        false => std::slice::from_raw_parts(labels, n_outputs).to_vec(),
    };
    let ts: Vec<*const f32> = match targets.is_null() {
        true => vec![std::ptr::null(); n_outputs],
        false => std::slice::from_raw_parts(targets, n_outputs).to_vec(),
    };
    // Every column checked before anything is read or uploaded.
    for (k, loss) in losses.iter().enumerate() {
        let sparse = *loss == Loss::SparseCategoricalCrossentropy;
        let (want, other) = match sparse {
            true => (("labels", ls[k].is_null()), ("targets", ts[k].is_null())),
            false => (("targets", ts[k].is_null()), ("labels", ls[k].is_null())),
        };
        let kind = match sparse {
            true => "class ids in labels",
            false => "float targets in targets",
        };
        if want.1 {
            return Err(Fail {
                status: suanli_status::SUANLI_ERROR_NULL_POINTER,
                message: format!(
                    "{}[{k}]: expected a pointer (output {:?} has {loss:?}: {kind}); found NULL",
                    want.0, names[k]
                ),
            });
        }
        if !other.1 {
            return Err(Fail::invalid(format!(
                "{}[{k}]: expected NULL (output {:?} has {loss:?}: {kind}); found a pointer",
                other.0, names[k]
            )));
        }
    }
    let dev = m.device().clone();
    let column = |k: usize| -> Result<&[f32]> {
        let per: usize = shapes[k].iter().product();
        Ok(std::slice::from_raw_parts(xs[k], len(rows, per, "inputs")?))
    };
    let size = |k: usize| outs[k].iter().product::<usize>();
    let x0 = column(0)?;
    let per0: usize = shapes[0].iter().product();
    let mut d = match losses[0] {
        Loss::SparseCategoricalCrossentropy => {
            let p = positions(&outs[0]);
            let l = std::slice::from_raw_parts(ls[0], len(rows, p, "labels[0]")?);
            match p {
                1 => Dataset::from_f32(&dev, x0, per0, l)?,
                _ => Dataset::from_f32_positions(&dev, x0, per0, l, p)?,
            }
        }
        _ => {
            let t = std::slice::from_raw_parts(ts[0], len(rows, size(0), "targets[0]")?);
            Dataset::from_f32_targets(&dev, x0, per0, t, size(0))?
        }
    }
    .with_sample_shape(&shapes[0])?;
    for (k, shape) in shapes.iter().enumerate().skip(1) {
        d = d.with_input(column(k)?, shape)?;
    }
    for (k, loss) in losses.iter().enumerate().skip(1) {
        d = match loss {
            Loss::SparseCategoricalCrossentropy => {
                let p = positions(&outs[k]);
                let what = format!("labels[{k}]");
                d.with_target_classes(std::slice::from_raw_parts(ls[k], len(rows, p, &what)?), p)?
            }
            _ => {
                let what = format!("targets[{k}]");
                let n = len(rows, size(k), &what)?;
                d.with_target_values(std::slice::from_raw_parts(ts[k], n), size(k))?
            }
        };
    }
    Ok(d)
}

/// How many inputs and outputs the model has (a `Sequential`: one each).
#[no_mangle]
pub unsafe extern "C" fn suanli_model_counts(
    model: *const suanli_model,
    inputs: *mut usize,
    outputs: *mut usize,
) -> suanli_status {
    guard("suanli_model_counts", || {
        let m = deref(model, "model")?;
        put(inputs, m.0.input_shapes().len(), "inputs")?;
        put(outputs, m.0.output_layers().len(), "outputs")
    })
}

/// Values per sample of input `input` and of output `output` (each below the counts of
/// `suanli_model_counts`); either out-pointer may be NULL when not wanted.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_sizes(
    model: *const suanli_model,
    input: usize,
    output: usize,
    input_size: *mut usize,
    output_size: *mut usize,
) -> suanli_status {
    guard("suanli_model_sizes", || {
        let m = deref(model, "model")?;
        let (ins, outs) = (m.0.input_shapes(), m.0.output_shapes());
        if input >= ins.len() || output >= outs.len() {
            return Err(Fail::invalid(format!(
                "input, output: expected an input below {} and an output below {}; found {input}, {output}",
                ins.len(),
                outs.len()
            )));
        }
        if !input_size.is_null() {
            input_size.write(ins[input].iter().product());
        }
        if !output_size.is_null() {
            output_size.write(outs[output].iter().product());
        }
        Ok(())
    })
}

/// Sets the optimizer (a `suanli_optimizer`, learning rate `lr`) and a loss per output
/// (`n` `suanli_loss` values in output order, or one for every output), each weighted by
/// `loss_weights` (`n` floats, or NULL: all 1): training minimises `Σ weight · loss`, as
/// Keras's `loss` list and `loss_weights`.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_compile_outputs(
    model: *mut suanli_model,
    optimizer: u32,
    lr: f64,
    losses: *const u32,
    loss_weights: *const f32,
    n: usize,
) -> suanli_status {
    guard("suanli_model_compile_outputs", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        if losses.is_null() || n == 0 {
            return Err(Fail::null("losses"));
        }
        let ls = std::slice::from_raw_parts(losses, n)
            .iter()
            .enumerate()
            .map(|(k, &l)| loss_of(l, &format!("losses[{k}]")))
            .collect::<Result<Vec<Loss>>>()?;
        let ws = match loss_weights.is_null() {
            true => &[][..],
            false => std::slice::from_raw_parts(loss_weights, n),
        };
        m.0.compile_outputs(optimizer_of(optimizer, lr)?, &ls, ws)?;
        Ok(())
    })
}

/// Trains a model of any number of inputs and outputs on `rows` samples: `inputs` holds
/// `n_inputs` arrays in the model's input order (input k's `rows × size` floats,
/// row-major), and for each of the `n_outputs` outputs, in output order, `labels[k]` (`rows`
/// class ids, or `rows × positions` for an output of (positions, classes)) where its loss is
/// sparse categorical cross-entropy, else `targets[k]` (`rows × size` floats), the other
/// NULL (`labels` or `targets` may be NULL as a whole where no output needs it). The rest is
/// `suanli_model_fit`'s: epochs, batch size, shuffle seed, progress, the last epoch's loss
/// (the weighted total) into `*loss` (may be NULL).
#[no_mangle]
#[allow(clippy::too_many_arguments)] // a C signature, spelled out
pub unsafe extern "C" fn suanli_model_fit_multi(
    model: *mut suanli_model,
    inputs: *const *const f32,
    n_inputs: usize,
    labels: *const *const u32,
    targets: *const *const f32,
    n_outputs: usize,
    rows: usize,
    epochs: usize,
    batch_size: usize,
    seed: u64,
    progress: suanli_progress_fn,
    user: *mut c_void,
    loss: *mut f64,
) -> suanli_status {
    guard("suanli_model_fit_multi", || {
        let m = model.as_mut().ok_or_else(|| Fail::null("model"))?;
        let data = dataset(&m.0, inputs, n_inputs, labels, targets, n_outputs, rows)?;
        fit_data(
            &mut m.0, &data, epochs, batch_size, seed, progress, user, loss,
        )
    })
}

/// The loss (the weighted total) on `rows` samples given as `suanli_model_fit_multi` takes
/// them, in batches of `batch_size` rows (0: Keras's 32); each output's own loss into
/// `losses` and its accuracy (NaN for a loss without one) into `accuracies`, `n_outputs`
/// doubles each, either may be NULL. For a model of one output its loss is the total.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // a C signature, spelled out
pub unsafe extern "C" fn suanli_model_evaluate_multi(
    model: *const suanli_model,
    inputs: *const *const f32,
    n_inputs: usize,
    labels: *const *const u32,
    targets: *const *const f32,
    n_outputs: usize,
    rows: usize,
    batch_size: usize,
    loss: *mut f64,
    losses: *mut f64,
    accuracies: *mut f64,
) -> suanli_status {
    guard("suanli_model_evaluate_multi", || {
        let m = deref(model, "model")?;
        let data = dataset(&m.0, inputs, n_inputs, labels, targets, n_outputs, rows)?;
        let e =
            m.0.evaluate(&data, if batch_size == 0 { 32 } else { batch_size })?;
        let names = m.0.output_names();
        let one = names.len() == 1;
        for (k, name) in names.iter().enumerate() {
            let l = e.metric(&format!("{name}_loss"));
            let a = e.metric(&format!("{name}_accuracy"));
            if !losses.is_null() {
                losses
                    .add(k)
                    .write(if one { e.loss } else { l.unwrap_or(f64::NAN) });
            }
            if !accuracies.is_null() {
                let a = if one { e.accuracy } else { a };
                accuracies.add(k).write(a.unwrap_or(f64::NAN));
            }
        }
        put(loss, e.loss, "loss")
    })
}

/// Every output for `rows` samples given as `suanli_model_fit_multi` takes the inputs:
/// output k into `outputs[k]`, which has room for `capacities[k]` floats (`rows × size`
/// are written), for the `n_outputs` outputs in output order. Nothing is written unless
/// every output fits.
#[no_mangle]
pub unsafe extern "C" fn suanli_model_predict_multi(
    model: *const suanli_model,
    inputs: *const *const f32,
    n_inputs: usize,
    rows: usize,
    outputs: *const *mut f32,
    capacities: *const usize,
    n_outputs: usize,
) -> suanli_status {
    guard("suanli_model_predict_multi", || {
        let m = deref(model, "model")?;
        let shapes = input_shapes(&m.0, n_inputs)?;
        let xs = pointers(inputs, n_inputs, "inputs")?;
        let outs = m.0.output_shapes();
        if n_outputs != outs.len() {
            return Err(mismatch(format!(
                "n_outputs: expected {} arrays (the model's outputs: {}); found {n_outputs}",
                outs.len(),
                m.0.output_names().join(", ")
            )));
        }
        if outputs.is_null() {
            return Err(Fail::null("outputs"));
        }
        let ys = std::slice::from_raw_parts(outputs, n_outputs);
        if capacities.is_null() {
            return Err(Fail::null("capacities"));
        }
        let caps = std::slice::from_raw_parts(capacities, n_outputs);
        for (k, s) in outs.iter().enumerate() {
            if ys[k].is_null() {
                return Err(Fail::null(&format!("outputs[{k}]")));
            }
            let want = len(rows, s.iter().product(), &format!("outputs[{k}]"))?;
            if caps[k] < want {
                return Err(mismatch(format!(
                    "outputs[{k}]: expected room for {want} floats ({rows} × {}); found {}",
                    s.iter().product::<usize>(),
                    caps[k]
                )));
            }
        }
        let mut ts = Vec::with_capacity(n_inputs);
        for (k, shape) in shapes.iter().enumerate() {
            if xs[k].is_null() {
                return Err(Fail::null(&format!("inputs[{k}]")));
            }
            let per: usize = shape.iter().product();
            let x = std::slice::from_raw_parts(xs[k], len(rows, per, "inputs")?);
            ts.push(Tensor::from_slice(m.0.device(), x, &[rows, per])?);
        }
        let refs: Vec<&Tensor> = ts.iter().collect();
        let got = m.0.predict_outputs(&refs)?;
        let values = got
            .iter()
            .map(Tensor::to_vec)
            .collect::<suanli::Result<Vec<_>>>()?;
        for (v, &y) in values.iter().zip(ys) {
            std::ptr::copy_nonoverlapping(v.as_ptr(), y, v.len());
        }
        Ok(())
    })
}
