"""``scorers.testing`` is a package: every name the single module had is still imported from it."""

from __future__ import annotations

import scorers.testing

#: The public names of ``scorers/testing.py`` before it became a package.
NAMES = (
    "COMPLETION_SUPPORT LLAMA_CPP_JSON_SCHEMA_REJECTION LLAMA_CPP_NO_LOGITS LoopbackLLM Matcher REPLIES_FORMAT "
    "RecordedRequest Reply ReplySource Rule TINY_NLI_LABELS TINY_NLI_WORDS TextCompletions auto_reply "
    "fake_embedding load_rules loopback_logprob loopback_tokens serve tiny_nli_model"
).split()


#: Public names added since.
ADDED = ("loopback_env",)


def test_every_name_of_the_module_is_imported_from_the_package() -> None:
    assert [name for name in NAMES if not hasattr(scorers.testing, name)] == []
    assert sorted(scorers.testing.__all__) == sorted((*NAMES, *ADDED))
