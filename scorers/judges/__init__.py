"""LLM judges."""
from .classifier import *  # noqa: F401,F403
from .classifier import LLMClassifier, parse_text_choice, read_reply  # noqa: F401
