"""Is a server's ``usage.prompt_tokens`` believable for the text that was sent?

No tokenizer is needed to say when a count is impossible. Tokenizers of the
models schools run count a common English word as about one token (0.5 to 2
with the rare split), and a Chinese character as 0.5 to 2 (Qwen and GLM
about 0.7, Llama's byte fallback up to 3 for rare characters); a chat
template adds a bounded overhead. A count outside the bounds is a proxy
counting characters or bytes, or a fixed number: the checks built on it must
not pass (the context window, and any prompt sized from the server's count).
"""

from __future__ import annotations

import re

__all__ = [
    "CJK_BOUNDS",
    "TEMPLATE_OVERHEAD",
    "WORD_BOUNDS",
    "plausible_prompt_tokens",
    "token_bounds",
]

#: Tokens per common English word, and per Chinese (CJK) character.
WORD_BOUNDS = (0.5, 2.0)
CJK_BOUNDS = (0.3, 3.0)
#: The most tokens a chat template adds around the messages (roles, special tokens,
#: a default system prompt).
TEMPLATE_OVERHEAD = 300

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_WORD = re.compile(r"[A-Za-z]+")


def token_bounds(text: str) -> tuple[float, float]:
    """The fewest and the most tokens a real tokenizer (and chat template) can count."""
    cjk = len(_CJK.findall(text))
    words = len(_WORD.findall(text))
    rest = len(_WORD.sub("", _CJK.sub("", text)).split())  # numbers, punctuation runs
    low = CJK_BOUNDS[0] * cjk + WORD_BOUNDS[0] * words
    high = CJK_BOUNDS[1] * cjk + WORD_BOUNDS[1] * words + 4 * rest + TEMPLATE_OVERHEAD
    return low, high


def plausible_prompt_tokens(tokens: int, text: str) -> bool:
    """Whether ``tokens`` (the server's usage.prompt_tokens) can be a count of ``text``."""
    low, high = token_bounds(text)
    return low <= tokens <= high
