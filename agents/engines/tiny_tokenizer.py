"""A small BPE tokenizer trained offline on a fixed word list, for tiny random-weight test models.

Tiny models need a real tokenizer object of the right class (CLIP, Llama, XLM-R); the hubs that
hold the originals are unreachable here, so we train one in milliseconds on our own text.
"""
from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

# Enough varied English for a byte-level BPE to learn a few hundred merges.
_CORPUS = """
the a an is are was were what which who where when how why does do did this that these those
image picture photo sign label book cover bottle plant animal dog cat bird car bus truck
price store open close today latest year name brand made country city river mountain
question answer context information yes no confidence reasoning sub questions finding
supported unsupported real time external knowledge summary description caption
one two three four five six seven eight nine ten hundred thousand million
red green blue yellow black white brown small large old new first last
""".split()


def build_word_tokenizer(tokenizer_cls, vocab_size: int = 1000, special_tokens=(), **kwargs):
    """Train a byte-level BPE and wrap it in `tokenizer_cls` (a transformers *TokenizerFast)."""
    specials = list(dict.fromkeys(["<unk>", "<pad>", "<s>", "</s>", "<|startoftext|>",
                                   "<|endoftext|>", *special_tokens]))
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([" ".join(_CORPUS)] * 4, trainer=trainer)
    return tokenizer_cls(tokenizer_object=tok, **kwargs)
