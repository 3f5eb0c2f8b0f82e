"""How the mock school model spends compute like a GPU server: tokens, prefill, prefix cache, KV.

- **Tokens** (:func:`prompt_tokens`): roughly as a tokenizer counts them, one
  per CJK character (ideographs, kana, hangul, CJK and full-width
  punctuation) and one per four other characters of a word (a run without
  spaces; a word of 1 to 4 characters is one token, so an English word is
  about one). Messages' contents are joined; there is no per-message
  overhead, so ``usage.prompt_tokens`` is exactly the sum over the contents.
- **Prefill** (``prefill_tokens_per_s`` = R, 0: free): a prompt's new tokens
  go through ONE first-come-first-served prefill queue at R tokens a second
  before the first token; a request's first token is due ``ttft_ms`` after its
  prefill ends. The queue is a virtual clock (when the prefill engine is next
  free), so durations are exact and a request that goes away while queued
  still holds its turn (as a server that prefills it anyway).
- **Prefix cache** (``prefix_cache``): the part of a prompt that starts as an
  earlier prompt did costs no prefill. Prompts are cut in blocks of
  :data:`BLOCK` tokens, each named by a hash of the blocks up to it (as vLLM's
  automatic prefix caching does); a prompt reuses its longest run of leading
  blocks already known. At most :data:`CACHE_BLOCKS` blocks are kept, the
  least recently used leaving first, so memory stays bounded. A prompt's
  blocks, and its reply's after them, count as known from its turn in the
  queue on: whoever is queued behind it finds them computed when its own
  prefill starts, and a conversation's next turn (the history, then a new
  question) pays only for its new question, as on vLLM.
- **KV room** (``kv_tokens`` = N, 0: unlimited): prompt and reply tokens of
  the requests in flight at once stay within N; a request that would pass N
  waits (first come, first served) until enough room frees. A request larger
  than N alone is admitted when nothing else is in flight, so it never waits
  for ever.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict, deque

__all__ = ["BLOCK", "CACHE_BLOCKS", "KvRoom", "Prefill", "prompt_tokens", "tokenize"]

#: Tokens per prefix-cache block (vLLM's default block size).
BLOCK = 16
#: Blocks the prefix cache keeps at most (about a million tokens).
CACHE_BLOCKS = 65536

_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_PIECES = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")


def tokenize(text: str) -> list[str]:
    """``text``'s tokens: each CJK character alone, other words in pieces of four characters."""
    out: list[str] = []
    for piece in _PIECES.findall(text):
        if len(piece) <= 4:
            out.append(piece)
        else:
            out.extend(piece[i : i + 4] for i in range(0, len(piece), 4))
    return out


def prompt_tokens(texts: list[str]) -> list[str]:
    """The tokens of a prompt made of ``texts`` (the messages' contents, in order)."""
    out: list[str] = []
    for text in texts:
        out.extend(tokenize(text))
    return out


class PrefixCache:
    """Hashed blocks of earlier prompts, least recently used out first (bounded)."""

    def __init__(self, capacity: int = CACHE_BLOCKS) -> None:
        self.capacity = capacity
        self._blocks: OrderedDict[int, None] = OrderedDict()

    @staticmethod
    def _hashes(tokens: list[str]) -> list[int]:
        hashes: list[int] = []
        parent = 0
        for start in range(0, len(tokens) - len(tokens) % BLOCK, BLOCK):
            parent = hash((parent, *tokens[start : start + BLOCK]))
            hashes.append(parent)
        return hashes

    def __len__(self) -> int:
        return len(self._blocks)

    def take(self, tokens: list[str], then: list[str] | None = None) -> int:
        """Tokens of ``tokens``' start already cached; then remember its blocks (``then``'s too)."""
        hit = 0
        for h in self._hashes(tokens):
            if h not in self._blocks:
                break
            hit += BLOCK
        for h in self._hashes(tokens + then if then else tokens):
            self._blocks[h] = None
            self._blocks.move_to_end(h)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)
        return hit


class Prefill:
    """The one first-come-first-served prefill queue, at ``rate`` tokens a second."""

    def __init__(self, rate: float, prefix_cache: bool) -> None:
        self.rate = rate
        self.cache = PrefixCache() if prefix_cache else None
        self._free_at = 0.0  # monotonic time the prefill engine is next free

    def schedule(self, tokens: list[str], now: float | None = None, reply: str = "") -> float:
        """Queue a prompt's prefill; the monotonic time it ends (``now`` if it costs nothing).

        ``reply``: the text that will follow it, cached after it (a next turn sends it back).
        """
        now = time.monotonic() if now is None else now
        cached = 0
        if self.cache is not None:
            cached = self.cache.take(tokens, tokenize(reply) if reply else None)
        new = max(len(tokens) - cached, 0)
        if self.rate <= 0 or new == 0:
            return now
        start = max(now, self._free_at)
        self._free_at = start + new / self.rate
        return self._free_at


class KvRoom:
    """Tokens in flight at once, at most ``capacity``; the rest wait first come, first served."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    def _fits(self, need: int) -> bool:
        return self.used == 0 or self.used + need <= self.capacity

    async def acquire(self, need: int) -> None:
        """Wait until ``need`` tokens fit (and every earlier waiter got its room)."""
        if not self._waiting and self._fits(need):
            self.used += need
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (need, future)
        self._waiting.append(entry)
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():
                self.release(need)  # room was given just as the waiter went away
            else:
                self._waiting.remove(entry)
                self._wake()
            raise

    def release(self, need: int) -> None:
        """Give back ``need`` tokens and admit the waiters that now fit, in order."""
        self.used -= need
        self._wake()

    def _wake(self) -> None:
        while self._waiting and self._fits(self._waiting[0][0]):
            need, future = self._waiting.popleft()
            self.used += need
            future.set_result(None)
