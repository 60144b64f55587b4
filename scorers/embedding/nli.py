"""NLI entailment: the probability that a premise entails the output, from any Hugging Face NLI classifier.

A plug-in point: the library ships no NLI model (none can be installed offline to test one against), so
:class:`NLIEntailment` takes any sequence-classification model by hub name or local folder (``model=``,
required) and is not registered under a name. Register it with the model you choose::

    import scorers
    from scorers.embedding.nli import NLIEntailment
    scorers.register(NLIEntailment, name="Entailment", model="/models/my-nli-model")
    scorers.get("Entailment")(input="A man plays a guitar.", output="Someone makes music.")

The model reads the pair ``(premise, output)`` as its tokenizer joins two texts (``[CLS] premise [SEP] output
[SEP]`` for BERT), truncated to the model's length from the longer text first; the score is the softmax
probability of the entailment class::

    score = softmax(logits(premise, output))[entailment]

The premise is the field ``premise`` names: ``"input"`` (default: the source the output must be faithful to),
``"expected"`` (a reference) or ``"context"`` (retrieved chunks, joined by blank lines). The entailment class
is the model configuration's ``id2label`` entry whose name starts with "entail" (any case), or the label (name
or index) ``entailment_label`` gives. ``metadata["probabilities"]`` holds every class's probability by name.
Nothing is downloaded unless ``allow_download=True``; torch and transformers (extra ``bert``) are imported at
the first score.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from .._util import is_int, lazy, memoize
from ..base import Scorer
from ..errors import ConfigError, ScorerError
from ..fields import Field, references_field, text_field
from ..params import param
from ..score import Score
from . import models
from .models import LoadError, ModelSource

__all__ = ["NLIEntailment", "PREMISES"]

#: The fields a premise may come from.
PREMISES = ("input", "expected", "context")
Premise = Literal["input", "expected", "context"]


class NLIEntailment(models.HubModel, Scorer):
    """P(entailment) of the output given a premise field, from a Hugging Face NLI classifier (``model=``).

    ``premise``: ``"input"`` (default), ``"expected"`` or ``"context"`` (chunks joined by blank lines).
    ``entailment_label``: the class to read (name or index; default: the ``id2label`` name starting with
    "entail"). ``batch_size`` pairs per forward pass; ``device`` (default ``cuda`` when available).
    """

    kind = "embedding"
    extra = "bert"
    description = "Probability that a premise field entails the output, from a Hugging Face NLI classifier."
    fields: tuple[Field, ...] = (text_field("input", utf8=True), text_field("output", utf8=True))
    example = "NLIEntailment(model='/models/nli')(input='A man plays a guitar.', output='Someone makes music.')"

    model: str = param("the NLI model: a hub name or a local folder", expected="a hub name or a local folder")
    premise: Premise = param("the field that holds the premise", default="input", choices=PREMISES)
    entailment_label: str | int | None = param(
        "the entailment class, by name or index (None: read off the model's labels)",
        default=None,
        expected="a class name or index, or None",
    )
    batch_size: int = param("most pairs per forward pass (never changes a number)", default=32, ge=1, signed=False)
    device: str | None = param("the torch device (None: cuda when available, else cpu)", default=None, signed=False)
    allow_download: bool = param(
        "fetch a hub model not in the local cache (otherwise nothing is downloaded)", default=False, signed=False
    )

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError(
                f"{self.name}: model must be a hub name or a local folder, got {self.model!r}", scorer=self.name
            )
        models.require_packages(self.name, "torch", "transformers")
        premise = self.premise
        self.fields = (
            references_field("context", utf8=True, description="the premise: one text, or chunks joined")
            if premise == "context"
            else text_field(premise, utf8=True, description="the premise"),
            text_field("output", utf8=True, description="the hypothesis"),
        )
        self.labels = self._labels()
        self.entailment_index = self._entailment_index(self.entailment_label)

    # ------------------------------------------------------------ the model (per process, dropped when pickled)
    @lazy
    def _tokenizer(self) -> Any:
        return models.load_tokenizer(self._source, True, self.allow_download, self.name)

    @lazy
    def _classifier(self) -> Any:
        models.import_torch(self.name)
        try:
            return _load_classifier(self._source, self._torch_device, self.allow_download)
        except LoadError as exc:
            raise ConfigError(f"{self.name}: {exc}", scorer=self.name) from exc

    def _labels(self) -> tuple[str, ...]:
        """The class names by index, from the model's configuration (``id2label``)."""
        try:
            id2label = _id2label(self._source, self.allow_download)
        except LoadError as exc:
            raise ConfigError(f"{self.name}: {exc}", scorer=self.name) from exc
        if sorted(id2label) != list(range(len(id2label))) or not id2label:
            raise ConfigError(
                f"{self.name}: the model's id2label must number its classes 0..n-1, got {id2label}", scorer=self.name
            )
        return tuple(id2label[index] for index in range(len(id2label)))

    def _entailment_index(self, label: str | int | None) -> int:
        listed = ", ".join(f"{index}: {name!r}" for index, name in enumerate(self.labels))
        if label is None:
            found = [index for index, name in enumerate(self.labels) if name.lower().startswith("entail")]
            if len(found) == 1:
                return found[0]
            raise ConfigError(
                f"{self.name}: cannot tell the entailment class of {self.model!r} from its labels ({listed}); "
                "name it with entailment_label=",
                scorer=self.name,
            )
        if is_int(label) and 0 <= label < len(self.labels):
            return int(label)
        if isinstance(label, str):
            found = [index for index, name in enumerate(self.labels) if name.lower() == label.lower()]
            if len(found) == 1:
                return found[0]
        raise ConfigError(
            f"{self.name}: entailment_label {label!r} is not one of the model's classes ({listed})", scorer=self.name
        )

    @lazy
    def _identity(self) -> dict[str, Any]:
        return {**self._source.identity(), **models.stack_versions()}

    def params(self) -> dict[str, Any]:
        """The model (name, and weights' hash when local), the premise field and the class read."""
        return {**self._identity, "premise": self.premise, "entailment_label": self.labels[self.entailment_index]}

    # ---------------------------------------------------------------- scoring
    def _premise(self, row: Mapping[str, Any]) -> str:
        value = row[self.premise]
        return "\n\n".join(value) if isinstance(value, tuple) else value

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        import torch

        pairs = [(self._premise(row), row["output"]) for row in rows]
        tokenizer, classifier = self._tokenizer, self._classifier
        # token counts, so that passes group pairs of one length (one long premise pads no pass of short ones)
        lengths = list(map(len, tokenizer([p for p, _ in pairs], [o for _, o in pairs], truncation=True)["input_ids"]))
        probabilities: list[Any] = [None] * len(pairs)
        with torch.inference_mode():
            for batch in models.length_batches(lengths, self.batch_size):
                encoded = tokenizer(
                    [pairs[i][0] for i in batch],
                    [pairs[i][1] for i in batch],
                    padding=True,
                    truncation=True,
                    return_tensors="pt",
                ).to(self._torch_device)
                logits = classifier(**encoded).logits.float()
                for row, index in enumerate(batch):
                    probabilities[index] = torch.softmax(logits[row], dim=-1).cpu().tolist()
        return [
            self.make_score(
                float(values[self.entailment_index]),
                probabilities={label: float(value) for label, value in zip(self.labels, values)},
            )
            for values in probabilities
        ]


@memoize
def _id2label(source: ModelSource, allow_download: bool) -> dict[int, str]:
    """The class names of a model's configuration by index (a local folder's config.json is read as JSON)."""
    if source.is_local:
        config = models._local_json(source.location, "config.json")
        if not config:
            raise LoadError(f"no readable config.json in {source.label!r}")
        raw = config.get("id2label") or {}
    else:
        from transformers import AutoConfig

        raw = getattr(models._from_pretrained(AutoConfig, source, allow_download), "id2label", None) or {}
    try:
        return {int(index): str(name) for index, name in raw.items()}
    except (AttributeError, TypeError, ValueError):
        raise LoadError(f"the configuration of {source.label!r} has an unreadable id2label: {raw!r}") from None


@memoize
def _load_classifier(source: ModelSource, device: str, allow_download: bool) -> Any:
    """The sequence-classification model in eval mode on ``device``, loaded once per process."""
    from transformers import AutoModelForSequenceClassification

    model = models._from_pretrained(AutoModelForSequenceClassification, source, allow_download)
    model.eval()
    return model.to(device)
