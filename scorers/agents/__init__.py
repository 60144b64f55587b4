"""Agents and conversations: one frozen value type (:mod:`scorers.agents.model`) and the readers that build it
from the formats users have (:mod:`scorers.agents.readers`)."""

from scorers.agents import budgets as budgets  # registers StepBudget and TokenBudget
from scorers.agents import loops as loops  # registers ToolLoop
from scorers.agents import permissions as permissions  # registers ToolPermission
from scorers.agents import tool_calls as tool_calls  # registers the deterministic tool-call scorers
from scorers.agents.model import ROLES, Conversation, FrozenDict, Message, ToolCall, Usage, freeze, jsonable, thaw
from scorers.agents.readers import read_conversation, read_tool_calls

__all__ = [
    "ROLES",
    "Conversation",
    "FrozenDict",
    "Message",
    "ToolCall",
    "Usage",
    "freeze",
    "thaw",
    "jsonable",
    "read_conversation",
    "read_tool_calls",
]
