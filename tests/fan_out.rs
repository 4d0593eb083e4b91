//! Fan-out without a sum of its own: where a tensor is read by two Dense layers, the second's
//! input-gradient GEMM adds into the first's (one dispatch a step fewer than a separate add),
//! and the gradients stay those of the f64 check in tests/graph.rs (which plants nothing here:
//! its graph has a tensor read by two Dense layers and three merges).

mod common;

use suanli::exec::ProfileClock;
use suanli::nn::{Add, Call, Dense, FitOptions, Input, Loss, Model, Optimizer};

#[test]
fn two_dense_readers_of_a_tensor_sum_their_gradients_in_the_gemm() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    if dev.set_profiling_clock(ProfileClock::Timestamps).is_err() {
        return;
    }
    let x = Input::new(&[12]);
    let h = Dense::new(8, "tanh").call(&x).unwrap();
    let a = Dense::new(8, "tanh").call(&h).unwrap();
    let b = Dense::new(8, "tanh").call(&h).unwrap();
    let s = Add::new().call_on(&[&a, &b]).unwrap();
    let y = Dense::new(3, "softmax").call(&s).unwrap();
    let mut m = Model::functional(&dev, &[&x], &[&y]).unwrap();
    m.compile(Optimizer::sgd(0.1), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let data = common::noisy_classes(&dev, 320); // 10 steps of 32
    dev.reset_profile();
    dev.set_profiling(true);
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: 32,
            ..Default::default()
        },
    )
    .unwrap();
    dev.set_profiling(false);
    let p = dev.profile();
    let calls: u64 = p.kernels.iter().map(|k| k.calls).sum::<u64>() + p.untimed;
    // The gather (features, labels: 2); forward: 4 matmuls and the add (5); the loss end (1);
    // backward: the output layer's input and weight gradients (2), the Add handing its
    // gradient to both inputs (0), tanh's derivative for a and b (a merge takes no gate: 2),
    // b's input gradient and weight gradient (2), a's input gradient added into b's in its
    // GEMM and its weight gradient (2), tanh's derivative for h (it fans out: 1), h's weight
    // gradient (1, its input is the model's): 18. A separate sum would make it 19.
    assert_eq!(calls as f64 / 10.0, 18.0, "{}", p.table(usize::MAX));
}
