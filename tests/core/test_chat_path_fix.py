"""The school's own chat address, made from the address it gave (found by the user pass of
the fifth release).

Before: a registryUrl copied from a server's other endpoint (``…/v1/models`` from vLLM's
docs, ``…/v1/completions``, Ollama's own ``/api/chat``) got the chat path appended:
"for this server that is http://h:8000/v1/models/v1/chat/completions", an address that
serves nothing; the path diagnosis asked there, found nothing, and left the key
"accepted" on a 405.
"""

from __future__ import annotations

import pytest

from lmreg_nb.validate import chat_path_fix, url_warnings


@pytest.mark.parametrize(
    ("given", "fixed"),
    [
        ("http://h:8000/v1/models", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/completions", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/models/", "http://h:8000/v1/chat/completions"),
        ("https://h/proxy/v1/embeddings", "https://h/proxy/v1/chat/completions"),
        ("http://h:11434/api/chat", "http://h:11434/v1/chat/completions"),
        ("http://h:11434/api/generate", "http://h:11434/v1/chat/completions"),
        # As before: the chat path kept, /v1 completed, a bare host given the path.
        ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
        ("https://h", "https://h/v1/chat/completions"),
        ("https://h/v1/chat/completions", "https://h/v1/chat/completions"),
        ("https://h/chat/completions", "https://h/v1/chat/completions"),
        ("https://h/llm", "https://h/llm/v1/chat/completions"),
        # A red-team finding: a slash after the chat path, or two in it, passed as the
        # chat path; the platform calls the address as it is (llama.cpp: 404).
        ("http://h:8016/v1/chat/completions/", "http://h:8016/v1/chat/completions"),
        ("http://h:8016//v1/chat/completions", "http://h:8016/v1/chat/completions"),
        ("http://h:8016/v1//chat/completions", "http://h:8016/v1/chat/completions"),
    ],
)
def test_the_fix_is_the_chat_path_of_the_same_server(given: str, fixed: str) -> None:
    assert chat_path_fix(given) == fixed


@pytest.mark.parametrize(
    "url",
    ["http://h:8016/v1/chat/completions/", "http://h:8016//v1/chat/completions"],
)
def test_a_path_with_a_slash_too_many_is_not_the_chat_path(url: str) -> None:
    assert "chat-path" in [w.code for w in url_warnings(url)]
    assert "chat-path" not in [w.code for w in url_warnings(chat_path_fix(url))]
