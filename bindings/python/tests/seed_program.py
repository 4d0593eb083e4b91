import suanli as tf
(train_data, train_labels), _ = tf.keras.datasets.mnist.load_data()
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
with tf.device('/GPU:0'):
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    model.fit(train_data, train_labels, epochs=10)
