"""Text for language models: ``Tokenizer`` (characters ↔ ids, nanoGPT's ``shakespeare_char``
vocabulary: the sorted distinct characters of a text), ``Text`` (a text split 90/10 and its
random training windows, the same the Rust side draws for a seed), and ``Model.generate``,
which continues a prompt of ids on the device with a key/value cache::

    from suanli.text import Text
    text = Text.from_file("data/tinyshakespeare/input.txt")
    x, y = text.windows("train", count=12 * 250, block=64, seed=1337)   # int32 (count, 64)


    from suanli.text import Tokenizer
    tok = Tokenizer.from_file("data/tinyshakespeare/input.txt")
    ids = model.generate(tok.encode("ROMEO:"), max_new_tokens=200, temperature=0.8, top_k=40,
                         callback=lambda i: print(tok.decode([i]), end="", flush=True))
    print(tok.decode(ids))
"""

from __future__ import annotations

from ._native import Text, Tokenizer

__all__ = ["Text", "Tokenizer"]
