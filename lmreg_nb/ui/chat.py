"""The chat box: a prompt, a Send button, and the reply as it streams in (escaped text)."""

from __future__ import annotations

import html
import sys
import time

import ipywidgets as widgets

from ..onboarding import Onboarding
from ._common import Field, Form

__all__ = ["ChatBox", "stream_reply"]

_UPDATE_EVERY_S = 0.05


def stream_reply(run: Onboarding, prompt: str) -> None:
    """Show the reply as it arrives, as plain text (never HTML), in one updating output.

    One output updated in place (not one per piece) keeps the executed notebook
    and its HTML copy readable. Returns nothing, so the reply is not shown twice.
    """
    from IPython.display import display

    text = ""
    shown_at = 0.0
    handle = display({"text/plain": "…"}, raw=True, display_id=True)

    def show(piece: str) -> None:
        nonlocal text, shown_at
        text += piece
        # At most ~20 updates a second: each is a message to the frontend (and to papermill).
        now = time.monotonic()
        if handle is not None and now - shown_at >= _UPDATE_EVERY_S:
            shown_at = now
            handle.update({"text/plain": text}, raw=True)

    run.chat(prompt, show)
    if handle is None:  # outside IPython: nothing was shown
        sys.stdout.write(text + "\n")
    else:
        handle.update({"text/plain": text}, raw=True)


class ChatBox(Form):
    """Ask the school's model a question; the reply streams into an escaped <pre> block.

    The reply is untrusted text from the model: it is escaped, never rendered as HTML.
    """

    def __init__(self, run: Onboarding | None = None) -> None:
        self.run_ = run or Onboarding("")
        self.prompt = widgets.Text(description="prompt", placeholder="Ask the model something")
        self.reply = widgets.HTML("")
        self.reply.add_class("lmreg-chat-reply")
        button = widgets.Button(description="Send", button_style="primary")
        button.add_class("lmreg-chat-send")
        super().__init__("lmreg-chat-box", [Field("chat-prompt", self.prompt)], button, self.reply)
        self.text = ""

    def _piece(self, piece: str) -> None:
        self.text += piece
        self.reply.value = f"<pre style='white-space:pre-wrap'>{html.escape(self.text)}</pre>"

    def submit(self) -> str | None:
        """Send the prompt and stream the reply."""
        self.text = ""
        self.reply.value = ""
        reply = self.run(lambda: self.run_.chat(self.prompt.value, self._piece))
        # The Output area would repeat the reply as plain text: the box shows it already.
        self.result.clear_output()
        return reply
