"""A tiny NLI model written to a folder, for offline tests of the NLI scorers' plumbing."""

from __future__ import annotations

from pathlib import Path

__all__ = ["TINY_NLI_LABELS", "TINY_NLI_WORDS", "tiny_nli_model"]

#: The words :func:`tiny_nli_model`'s tokenizer knows (others are ``[UNK]``) and its classes.
TINY_NLI_WORDS = (
    "a the man woman dog cat plays sleeps runs guitar music makes someone is not on mat outside , .".split()
)
TINY_NLI_LABELS = {0: "contradiction", 1: "neutral", 2: "entailment"}


def tiny_nli_model(folder: str | Path, *, seed: int = 0) -> Path:
    """Write a one-layer BERT sequence classifier (contradiction, neutral, entailment; random weights, seeded) and
    a WordPiece tokenizer of :data:`TINY_NLI_WORDS` to ``folder``: an NLI model folder for offline tests of the
    plumbing (its probabilities mean nothing). Needs torch, transformers and tokenizers (the ``bert`` extra).

    >>> import tempfile
    >>> from scorers.embedding.nli import NLIEntailment
    >>> model = tiny_nli_model(tempfile.mkdtemp())
    >>> 0 < NLIEntailment(model=str(model), device="cpu")(input="a man plays", output="someone makes music").score < 1
    True
    """
    import torch
    import transformers
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    folder = Path(folder)
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_NLI_WORDS])}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=32,
    ).save_pretrained(folder)
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        initializer_range=0.5,  # a wide spread, so that the classes' probabilities differ between pairs
        id2label=TINY_NLI_LABELS,
        label2id={name: index for index, name in TINY_NLI_LABELS.items()},
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder
