"""The TensorFlow/Keras MNIST program, run by suanli: only the import line differs from the
TensorFlow original (the first block below), then evaluation and saving.

    pip install ./bindings/python
    python examples/python/mnist_mlp.py [--epochs N] [--save PATH]
"""

import argparse
import time

import suanli as tf

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--save", default="mnist_mlp.safetensors", help="where to save the trained model")
args = parser.parse_args()

# ---- the TensorFlow program, unchanged but for `import suanli as tf` ---------------------
(train_data, train_labels), (test_data, test_labels) = tf.keras.datasets.mnist.load_data()
train_data = train_data.reshape(-1, 784) / 255.0
if tf.test.is_gpu_available():
    print("GPU is available")
else:
    print("No GPU found")
model = tf.keras.Sequential([
    tf.keras.layers.Dense(128, activation='relu', input_shape=(784,)),
    tf.keras.layers.Dense(64, activation='relu'),
    tf.keras.layers.Dense(10, activation='softmax')
])
t = time.perf_counter()
with tf.device('/GPU:0'):
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    history = model.fit(train_data, train_labels, epochs=args.epochs)

# ---- evaluate and save ------------------------------------------------------------------------
print(f"Trained on {model.device.name} in {time.perf_counter() - t:.1f}s")
loss, accuracy = model.evaluate(test_data.reshape(-1, 784) / 255.0, test_labels, verbose=0)
print(f"Test accuracy: {accuracy:.4f} (loss {loss:.4f})")
model.save(args.save)
restored = tf.keras.models.load_model(args.save)
same = (restored.predict(test_data[:100].reshape(-1, 784) / 255.0, verbose=0)
        == model.predict(test_data[:100].reshape(-1, 784) / 255.0, verbose=0)).all()
print(f"Saved to {args.save}; reloaded predictions identical: {bool(same)}")
