"""Text for language models: ``Tokenizer`` (characters ↔ ids, nanoGPT's ``shakespeare_char``
vocabulary: the sorted distinct characters of a text) and ``Model.generate``, which
continues a prompt of ids on the device with a key/value cache::

    from suanli.text import Tokenizer
    tok = Tokenizer.from_file("data/tinyshakespeare/input.txt")
    ids = model.generate(tok.encode("ROMEO:"), max_new_tokens=200, temperature=0.8, top_k=40,
                         callback=lambda i: print(tok.decode([i]), end="", flush=True))
    print(tok.decode(ids))
"""

from __future__ import annotations

from ._native import Tokenizer

__all__ = ["Tokenizer"]
