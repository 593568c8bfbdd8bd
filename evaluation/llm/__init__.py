"""The one LLM client of forkpaths: any OpenAI-compatible chat-completions endpoint, cached on disk.

Stage-2 alternatives use it now; the judges of scored runs will use the same client.
"""

from evaluation.llm.client import (
    LLMCallError,
    LLMConfig,
    LLMNotConfigured,
    LLMResult,
    ParseError,
    chat_json,
)
from evaluation.llm.parsing import parse_structured

__all__ = ["LLMCallError", "LLMConfig", "LLMNotConfigured", "LLMResult", "ParseError", "chat_json",
           "parse_structured"]
