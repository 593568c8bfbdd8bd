"""The one LLM client of forkpaths: any OpenAI-compatible chat-completions endpoint, cached on disk.

Stage-2 alternatives, the ``llm`` judge and the MCQ model under test all go through :class:`LLMClient`;
text written by agents or analysts reaches a prompt only through :mod:`evaluation.llm.quoting`.
"""

from evaluation.llm.client import (
    Answer,
    ChatReply,
    LLMAnswerError,
    LLMCallError,
    LLMClient,
    LLMConfig,
    LLMNotConfigured,
    LLMResult,
    ParseError,
    ToolCall,
)
from evaluation.llm.parsing import parse_structured
from evaluation.llm.quoting import DATA_NOTICE, quote, quote_json, quoted_items

__all__ = ["DATA_NOTICE", "Answer", "ChatReply", "LLMAnswerError", "LLMCallError", "LLMClient", "LLMConfig", "LLMNotConfigured",
           "LLMResult", "ParseError", "ToolCall", "parse_structured", "quote", "quote_json", "quoted_items"]
