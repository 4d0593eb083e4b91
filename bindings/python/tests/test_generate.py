"""Model.generate and suanli.text.Tokenizer: a tiny causal language model trained on
cyclic sequences continues one greedily (as a host loop of predict + argmax does), the KV
cache and recomputing agree for a seeded draw, streaming sees every id and can stop, and bad
requests raise what a Keras user expects."""

import numpy as np
import pytest

from suanli import keras
from suanli.keras import layers
from suanli.text import Text, Tokenizer

V, T = 7, 8


@pytest.fixture(autouse=True)
def keep_seed():
    before = keras.utils.seed()
    yield
    keras.utils.set_random_seed(before)


@pytest.fixture(scope="module")
def cyclic():
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(1)
    starts = rng.integers(0, V, 96)
    ids = (starts[:, None] + np.arange(T)) % V
    x = keras.Input(shape=(T,), dtype="int32")
    p = keras.Input(shape=(T,), dtype="int32")
    h = layers.Add()([layers.Embedding(V, 16)(x), layers.Embedding(T, 16)(p)])
    a = layers.MultiHeadAttention(2, 8)(h, h, use_causal_mask=True)
    logits = layers.Dense(V)(layers.Add()([h, a]))
    model = keras.Model([x, p], logits)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    pos = np.broadcast_to(np.arange(T, dtype=np.int32), ids.shape).copy()
    hist = model.fit([ids.astype(np.int32), pos], ((ids + 1) % V).astype(np.int32), batch_size=16, epochs=25, verbose=0)
    assert hist.history["loss"][-1] < 0.1
    return model


def host_greedy(model, prompt, n):
    out = list(prompt)
    pos = np.arange(T, dtype=np.int32)[None]
    for _ in range(n):
        w = out[-T:]
        x = np.zeros((1, T), np.int32)
        x[0, :len(w)] = w
        logits = model.predict([x, pos], verbose=0)[0, len(w) - 1]
        out.append(int(np.argmax(logits)))
    return out


def test_greedy_generation_continues_the_cycle_as_predict_does(cyclic):
    out = cyclic.generate([2, 3], max_new_tokens=6, temperature=0.0)
    assert out.dtype == np.int32
    assert out.tolist() == [2, 3, 4, 5, 6, 0, 1, 2]
    assert out.tolist() == host_greedy(cyclic, [2, 3], 6)
    batched = cyclic.generate(np.array([[5]]), max_new_tokens=3, temperature=0)
    assert batched.shape == (1, 4) and batched.tolist() == [[5, 6, 0, 1]]


def test_the_cache_and_recomputing_draw_the_same_tokens(cyclic):
    a = cyclic.generate([1], max_new_tokens=T - 1, temperature=2.0, seed=11)
    b = cyclic.generate([1], max_new_tokens=T - 1, temperature=2.0, seed=11, use_cache=False)
    c = cyclic.generate([1], max_new_tokens=T - 1, temperature=2.0, seed=12)
    assert a.tolist() == b.tolist()
    assert len(c) == T and all(0 <= i < V for i in c)
    # Past the context: the cache is refilled and generation goes on.
    assert len(cyclic.generate([1], max_new_tokens=3 * T, temperature=1.0, top_k=3)) == 1 + 3 * T


def test_streaming_sees_every_id_and_can_stop(cyclic):
    seen = []
    out = cyclic.generate([0], max_new_tokens=5, temperature=0, callback=seen.append)
    assert seen == out.tolist()[1:]
    short = cyclic.generate([0], max_new_tokens=5, temperature=0, callback=lambda i: i != 2)
    assert short.tolist() == [0, 1, 2]

    def boom(i):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        cyclic.generate([0], max_new_tokens=5, callback=boom)


def test_bad_requests_raise_value_errors(cyclic):
    with pytest.raises(ValueError, match="prompt"):
        cyclic.generate([], max_new_tokens=3)
    with pytest.raises(ValueError, match="position 1"):
        cyclic.generate([1, V], max_new_tokens=3)
    with pytest.raises(ValueError, match="top_k"):
        cyclic.generate([1], max_new_tokens=3, top_k=0)
    with pytest.raises(ValueError, match="position 0"):
        cyclic.generate([-1], max_new_tokens=3)
    with pytest.raises(TypeError, match="integer"):
        cyclic.generate([1.5], max_new_tokens=3)
    assert len(cyclic.generate([1], max_new_tokens=2)) == 3


def test_tokenizer_round_trips_and_names_what_it_cannot_encode(tmp_path):
    tok = Tokenizer("hello world")
    assert tok.chars == " dehlorw" and tok.vocab_size == 8
    assert tok.decode(tok.encode("lower hold")) == "lower hold"
    with pytest.raises(ValueError, match="'z' at position 2"):
        tok.encode("hez")
    with pytest.raises(ValueError, match="position 1"):
        tok.decode([0, 8])
    f = tmp_path / "t.txt"
    f.write_bytes("ab\n".encode())
    assert Tokenizer.from_file(str(f)).chars == "\nab"
    f.write_bytes(b"ab\xff\xfe")
    with pytest.raises(ValueError, match="offset 2"):
        Tokenizer.from_file(str(f))


def test_text_windows_are_the_split_shifted_by_one_and_seeded(tmp_path):
    body = "".join(chr(97 + (i * 7) % 23) for i in range(1000))
    text = Text(body)
    tok = text.tokenizer
    train, val = text.tokens("train"), text.tokens("val")
    assert train.dtype == np.int32 and len(train) == 900 and len(val) == 100
    assert tok.decode(train.tolist() + val.tolist()) == body
    x, y = text.windows("train", 50, 16, 7)
    assert x.shape == y.shape == (50, 16) and x.dtype == np.int32
    assert (x[:, 1:] == y[:, :-1]).all()
    joined = train.tobytes()
    for row_x, row_y in zip(x, y):
        window = np.concatenate([row_x, row_y[-1:]]).astype(np.int32).tobytes()
        assert window in joined
    again, _ = text.windows("train", 50, 16, 7)
    other, _ = text.windows("train", 50, 16, 8)
    assert (again == x).all() and not (other == x).all()
    vx, _ = text.windows("val", 5, 99, 1)
    assert vx.shape == (5, 99)
    with pytest.raises(ValueError, match="block"):
        text.windows("val", 5, 100, 1)
    with pytest.raises(ValueError, match="split"):
        text.windows("test", 5, 16, 1)
    f = tmp_path / "bad.txt"
    f.write_bytes(b"abc\xff")
    with pytest.raises(ValueError, match="offset 3"):
        Text.from_file(str(f))


def test_predict_refuses_ids_past_an_embedding_table(cyclic):
    pos = np.arange(T, dtype=np.int32)[None]
    x = np.zeros((2, T), np.int32)
    x[1, 3] = V
    with pytest.raises(ValueError, match=r"7 at sample 1, position 3"):
        cyclic.predict([x, np.repeat(pos, 2, axis=0)], verbose=0)
    # Positions past the position table: the sequence is longer than the model knows.
    with pytest.raises(ValueError, match=r"ids from 0 to 7"):
        cyclic.predict([np.zeros((1, T), np.int32), pos + 1], verbose=0)
    assert cyclic.predict([np.zeros((1, T), np.int32), pos], verbose=0).shape == (1, T, V)
