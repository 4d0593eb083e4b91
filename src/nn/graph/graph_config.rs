//! A graph model's architecture as Keras's functional config writes it, and its parser:
//!
//! ```json
//! {"class_name": "Functional", "config": {"name": "resnet",
//!   "layers": [
//!     {"class_name": "InputLayer", "name": "image",
//!      "config": {"name": "image", "batch_input_shape": [null, 28, 28, 1]}, "inbound_nodes": []},
//!     {"class_name": "Conv2D", "name": "conv2d", "config": {"name": "conv2d", ...},
//!      "inbound_nodes": [[["image", 0, 0, {}]]]},
//!     {"class_name": "Add", "name": "add", "config": {"name": "add"},
//!      "inbound_nodes": [[["conv2d", 0, 0, {}], ["image", 0, 0, {}]]]}],
//!   "input_layers": [["image", 0, 0]], "output_layers": [["add", 0, 0]]}}
//! ```
//!
//! (Keras 2's form: each layer with the calls that made it, naming their inputs.) A shared
//! layer (one layer called several times, [`crate::nn::Shared`]) is listed once with a call
//! per entry of `inbound_nodes`, and `["name", k, 0]` names the output of its call `k`.
//! Parsing is pure and checked, so the fuzzer can drive it: input layers as `input_layers`
//! lists them (each read by a layer), every name defined once, every inbound name a call of a
//! layer of the graph, no cycle, and every call on a path to an output. The calls come back as
//! nodes in a topological order (the order they are listed in when that is one), a shared
//! layer's calls each a node with its name. A chain (`Sequential`) is still written as the
//! plain list of layers.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::nn::registry::LayerSpec;
use crate::nn::spec::Shape;

/// What a layer of a graph reads: the model's `k`-th input, or layer `j`'s output.
pub use crate::nn::layer::Src as Ref;

/// A graph's inputs: each input layer's name and per-sample shape, in `input_layers` order.
pub type Inputs = Vec<(String, Shape)>;

/// A parsed functional config (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphConfig {
    /// The model's name.
    pub name: Option<String>,
    /// Each input layer's name and per-sample shape, in `input_layers` order.
    pub inputs: Inputs,
    /// Every node (a layer's call) in a topological order, with what it reads; the calls of
    /// a shared layer have its name and spec.
    pub layers: Vec<(LayerSpec, Vec<Ref>)>,
    /// The output layers, in `output_layers` order (indices into `layers`).
    pub outputs: Vec<usize>,
}

impl GraphConfig {
    /// The node of the first call of the layer node `i` is a call of, if `i` is a later one.
    pub fn first_call(&self, i: usize) -> Option<usize> {
        let name = &self.layers[i].0.name;
        self.layers[..i].iter().position(|(s, _)| s.name == *name)
    }
}

/// What went wrong: (what was expected, what was found).
pub type ConfigError = (String, String);

fn err<T>(expected: impl Into<String>, found: impl Into<String>) -> Result<T, ConfigError> {
    Err((expected.into(), found.into()))
}

/// Writes the functional config of a model named `name` whose inputs are `inputs` (name,
/// per-sample shape), whose `layers` read what their lists say, and whose outputs are the
/// layers `outputs` (empty: the last).
pub fn write(
    name: &str,
    inputs: &[(String, Shape)],
    layers: &[(LayerSpec, Vec<Ref>)],
    outputs: &[usize],
) -> Value {
    let layer_name = |j: usize| layers[j].0.name.clone().unwrap_or_default();
    // Which call of its layer node j is (nodes sharing a name are calls of one layer).
    let node = |j: usize| {
        layers[..j]
            .iter()
            .filter(|(s, _)| s.name == layers[j].0.name)
            .count()
    };
    let input_name = |k: usize| inputs.get(k).map(|i| i.0.clone()).unwrap_or_default();
    let mut out: Vec<Value> = inputs
        .iter()
        .map(|(input_name, input_shape)| {
            let mut dims = vec![Value::Null];
            dims.extend(input_shape.iter().map(|&d| Value::from(d)));
            json!({
                "class_name": "InputLayer",
                "name": input_name,
                "config": {"name": input_name, "batch_input_shape": dims, "dtype": "float32"},
                "inbound_nodes": [],
            })
        })
        .collect();
    for (i, (spec, _)) in layers.iter().enumerate() {
        if node(i) > 0 {
            continue;
        }
        let mut spec = spec.clone();
        spec.input_shape = None;
        let mut v = spec.to_json();
        // One entry of inbound_nodes per call, in node order.
        let calls: Vec<Value> = layers
            .iter()
            .filter(|(s, _)| s.name == spec.name)
            .map(|(_, inbound)| {
                let reads: Vec<Value> = inbound
                    .iter()
                    .map(|s| match *s {
                        Ref::Input(k) => json!([input_name(k), 0, 0, {}]),
                        Ref::Layer(j) => json!([layer_name(j), node(j), 0, {}]),
                    })
                    .collect();
                Value::from(reads)
            })
            .collect();
        if let Some(m) = v.as_object_mut() {
            m.insert("name".into(), spec.name.clone().unwrap_or_default().into());
            m.insert("inbound_nodes".into(), Value::from(calls));
        }
        out.push(v);
    }
    let outs: Vec<Value> = if outputs.is_empty() {
        layers.len().checked_sub(1).into_iter().collect::<Vec<_>>()
    } else {
        outputs.to_vec()
    }
    .into_iter()
    .map(|j| json!([layer_name(j), node(j), 0]))
    .collect();
    json!({
        "class_name": "Functional",
        "config": {
            "name": name,
            "layers": out,
            "input_layers": inputs.iter().map(|(n, _)| json!([n, 0, 0])).collect::<Vec<_>>(),
            "output_layers": outs,
        }
    })
}

/// The layer name and call (node) a `[name, node, tensor]` reference names.
fn reference(v: &Value, what: &str) -> Result<(String, usize), ConfigError> {
    match v.as_array().map(Vec::as_slice) {
        Some([Value::String(n), Value::Number(a), Value::Number(b), ..])
            if a.as_u64().is_some_and(|a| a < u32::MAX as u64) && b.as_u64() == Some(0) =>
        {
            Ok((n.clone(), a.as_u64().unwrap_or(0) as usize))
        }
        _ => err(
            format!("{what}: a [\"layer name\", node, 0] reference"),
            v.to_string(),
        ),
    }
}

/// The references of `input_layers` or `output_layers` (at least one, each once).
fn references(config: &Value, key: &str) -> Result<Vec<(String, usize)>, ConfigError> {
    match config[key].as_array() {
        Some(list) if !list.is_empty() => {
            let names: Vec<(String, usize)> = list
                .iter()
                .map(|r| reference(r, key))
                .collect::<Result<_, _>>()?;
            if let Some(i) = (1..names.len()).find(|&i| names[..i].contains(&names[i])) {
                return err(
                    format!("each name once in {key}"),
                    format!("{:?} twice", names[i]),
                );
            }
            Ok(names)
        }
        _ => err(format!("a non-empty {key} list"), config[key].to_string()),
    }
}

/// Parses a functional config (see the module docs).
pub fn parse(v: &Value) -> Result<GraphConfig, ConfigError> {
    if v["class_name"].as_str() != Some("Functional") && v["class_name"].as_str() != Some("Model") {
        return err("class_name \"Functional\"", v["class_name"].to_string());
    }
    let config = &v["config"];
    let list = config["layers"]
        .as_array()
        .ok_or_else(|| ("a \"layers\" list".to_string(), config.to_string()))?;
    let name = config["name"].as_str().map(str::to_string);
    let input_names: Vec<String> = references(config, "input_layers")?
        .into_iter()
        .map(|(n, k)| match k {
            0 => Ok(n),
            _ => err(
                "input_layers naming node 0 of each input",
                format!("{n:?} node {k}"),
            ),
        })
        .collect::<Result<_, _>>()?;
    let output_names = references(config, "output_layers")?;
    let mut input_shapes: Vec<Option<Shape>> = vec![None; input_names.len()];
    // Every call of every layer but the inputs: its spec and the (name, node)s it reads.
    let mut nodes: Vec<(LayerSpec, Vec<(String, usize)>)> = Vec::new();
    // (layer name, call) → node.
    let mut index: HashMap<(String, usize), usize> = HashMap::new();
    let mut layer_names: std::collections::HashSet<String> = Default::default();
    for (i, layer) in list.iter().enumerate() {
        let class = layer["class_name"].as_str().unwrap_or("");
        let lname = layer["name"]
            .as_str()
            .or(layer["config"]["name"].as_str())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| (format!("a name for layer {i}"), layer.to_string()))?
            .to_string();
        let at = input_names.iter().position(|n| *n == lname);
        if at.is_some() || class == "InputLayer" {
            let Some(k) = at.filter(|&k| class == "InputLayer" && input_shapes[k].is_none()) else {
                return err(
                    format!("one InputLayer for each of input_layers {input_names:?}"),
                    format!("{class} {lname:?}"),
                );
            };
            let c = &layer["config"];
            let (dims, skip) = match (&c["batch_input_shape"], &c["batch_shape"], &c["shape"]) {
                (Value::Array(a), _, _) | (_, Value::Array(a), _) => (a, 1),
                (_, _, Value::Array(a)) => (a, 0),
                _ => return err("the input layer's batch_input_shape", c.to_string()),
            };
            let shape: Option<Shape> = dims
                .iter()
                .skip(skip)
                .map(|d| {
                    d.as_u64()
                        .filter(|d| (1..=u32::MAX as u64).contains(d))
                        .map(|d| d as usize)
                })
                .collect();
            match shape {
                Some(s) if !s.is_empty() => input_shapes[k] = Some(s),
                _ => return err("an input shape of sizes of at least 1", c.to_string()),
            }
            continue;
        }
        let spec = LayerSpec::from_json(layer)
            .map_err(|e| (format!("a valid spec for layer {lname:?}"), e.to_string()))?;
        if spec.name.as_deref().is_some_and(|n| n != lname) {
            return err(
                format!("layer {i}'s config named as the layer ({lname:?})"),
                format!("{:?}", spec.name),
            );
        }
        let calls = match layer["inbound_nodes"].as_array() {
            Some(calls) if !calls.is_empty() => calls,
            _ => return err(format!("inbound_nodes of {lname:?}"), layer.to_string()),
        };
        if !layer_names.insert(lname.clone()) {
            return err("layer names used once", format!("{lname:?} twice"));
        }
        let mut spec = spec;
        spec.name = Some(lname.clone());
        for (k, call) in calls.iter().enumerate() {
            let from: Vec<(String, usize)> = call
                .as_array()
                .ok_or_else(|| (format!("the inputs of {lname:?}"), call.to_string()))?
                .iter()
                .map(|c| reference(c, &format!("an input of {lname:?}")))
                .collect::<Result<_, _>>()?;
            if from.is_empty() {
                return err(format!("at least one input of {lname:?}"), "none");
            }
            index.insert((lname.clone(), k), nodes.len());
            nodes.push((spec.clone(), from));
        }
    }
    let mut inputs = Vec::with_capacity(input_names.len());
    for (n, s) in input_names.iter().zip(input_shapes) {
        let s = s.ok_or_else(|| (format!("an InputLayer named {n:?}"), "none".to_string()))?;
        inputs.push((n.clone(), s));
    }
    // Edges, with every name checked.
    let mut reads: Vec<Vec<Ref>> = Vec::with_capacity(nodes.len());
    for (spec, from) in &nodes {
        let mut r = Vec::with_capacity(from.len());
        for (f, node) in from {
            if let Some(k) = input_names
                .iter()
                .position(|n| n == f)
                .filter(|_| *node == 0)
            {
                r.push(Ref::Input(k));
            } else {
                let j = index.get(&(f.clone(), *node)).ok_or_else(|| {
                    (
                        format!(
                            "inputs of {:?} that are calls of layers of the graph",
                            spec.name.as_deref().unwrap_or("")
                        ),
                        match node {
                            0 => format!("{f:?}, which is not"),
                            _ => format!("{f:?} node {node}, which is not"),
                        },
                    )
                })?;
                r.push(Ref::Layer(*j));
            }
        }
        reads.push(r);
    }
    let outs: Vec<usize> = output_names
        .iter()
        .map(|o| {
            index.get(o).copied().ok_or_else(|| {
                (
                    "output_layers naming layers of the graph (and their calls)".to_string(),
                    match o.1 {
                        0 => format!("{:?}", o.0),
                        k => format!("{:?} node {k}", o.0),
                    },
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let order = topological(&reads, &outs, inputs.len()).map_err(|e| {
        (
            e.0,
            e.1.map_or_else(String::new, |j| {
                format!("{:?}", nodes[j].0.name.as_deref().unwrap_or(""))
            }),
        )
    })?;
    let mut new_index = vec![usize::MAX; nodes.len()];
    for (k, &j) in order.iter().enumerate() {
        new_index[j] = k;
    }
    let layers = order
        .iter()
        .map(|&j| {
            let r = reads[j]
                .iter()
                .map(|s| match *s {
                    Ref::Layer(p) => Ref::Layer(new_index[p]),
                    input => input,
                })
                .collect();
            (nodes[j].0.clone(), r)
        })
        .collect();
    let outputs = outs.iter().map(|&j| new_index[j]).collect();
    Ok(GraphConfig {
        name,
        inputs,
        layers,
        outputs,
    })
}

/// A topological order of the layers that lead to the outputs `outs` (each after what it
/// reads), keeping the given order where it is one; the last output last. Errors name a
/// layer on a cycle or one that leads to no output, or an input (of `inputs`) that nothing
/// on the way reads.
fn topological(
    reads: &[Vec<Ref>],
    outs: &[usize],
    inputs: usize,
) -> Result<Vec<usize>, (String, Option<usize>)> {
    // Depth-first from the output, iteratively (a file may be deep), colouring nodes.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let n = reads.len();
    let mut mark = vec![Mark::New; n];
    let mut order = Vec::with_capacity(n);
    for &out in outs {
        if mark[out] == Mark::Done {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(out, 0)];
        mark[out] = Mark::Open;
        while let Some(&mut (j, ref mut next)) = stack.last_mut() {
            if let Some(src) = reads[j].get(*next) {
                *next += 1;
                if let Ref::Layer(p) = *src {
                    match mark[p] {
                        Mark::New => {
                            mark[p] = Mark::Open;
                            stack.push((p, 0));
                        }
                        Mark::Open => return Err(("a graph without cycles".into(), Some(p))),
                        Mark::Done => {}
                    }
                }
            } else {
                mark[j] = Mark::Done;
                order.push(j);
                stack.pop();
            }
        }
    }
    if let Some(dead) = mark.iter().position(|m| *m != Mark::Done) {
        return Err(("every layer on a path to the output".into(), Some(dead)));
    }
    let read: Vec<bool> = (0..inputs)
        .map(|k| reads.iter().flatten().any(|r| *r == Ref::Input(k)))
        .collect();
    if let Some(k) = read.iter().position(|r| !r) {
        return Err((
            format!("every input read by a layer (input {k} is not)"),
            None,
        ));
    }
    // Keep the listed order where it is already topological: a stable sort by depth-first
    // finish would reorder; use the listed order when every edge points back.
    let listed_ok = reads
        .iter()
        .enumerate()
        .all(|(j, r)| r.iter().all(|s| !matches!(*s, Ref::Layer(p) if p >= j)))
        && outs.last() == Some(&(n - 1));
    if listed_ok {
        return Ok((0..n).collect());
    }
    Ok(order)
}
