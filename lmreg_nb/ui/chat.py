"""The chat box: a prompt, a Send button, and the reply as it streams in (escaped text)."""

from __future__ import annotations

import html
import sys
import time

import ipywidgets as widgets

from ..i18n import _
from ..onboarding import Onboarding
from ..summary import StepName
from ._common import WIDE, Field, Form, text

__all__ = ["ChatBox", "stream_reply"]

_UPDATE_EVERY_S = 0.05


def stream_reply(run: Onboarding, prompt: str, *, model_url: str = "", model: str = "") -> None:
    """Show the reply as it arrives, as plain text (never HTML), in one updating output.

    One output updated in place (not one per piece) keeps the executed notebook
    and its HTML copy readable. Returns nothing, so the reply is not shown twice.
    """
    from IPython.display import display

    reply = ""
    shown_at = 0.0
    handle = display({"text/plain": "…"}, raw=True, display_id=True)

    def show(piece: str) -> None:
        nonlocal reply, shown_at
        reply += piece
        # At most ~20 updates a second: each is a message to the frontend (and to papermill).
        now = time.monotonic()
        if handle is not None and now - shown_at >= _UPDATE_EVERY_S:
            shown_at = now
            handle.update({"text/plain": reply}, raw=True)

    run.chat(prompt, show, model_url=model_url, model=model)
    if handle is None:  # outside IPython: nothing was shown
        sys.stdout.write(reply + "\n")
    else:
        handle.update({"text/plain": reply}, raw=True)


class ChatBox(Form):
    """Ask the school's model a question; the reply streams in below the Send button.

    The reply is untrusted text from the model: it is escaped, never rendered as HTML.
    ``model_url``/``model`` name the endpoint; empty, the run chooses the one its checks
    called (05's ``model_url`` parameter, then the registered model), never LMREG_MODEL_URL
    behind their back.
    """

    def __init__(
        self, run: Onboarding | None = None, *, model_url: str = "", model: str = ""
    ) -> None:
        self.run_: Onboarding = run or Onboarding("")
        self.model_url = model_url
        self.model = model
        self.prompt = text(_("prompt"), wide=True, placeholder=_("Ask the model something"))
        self.reply = widgets.HTML("")
        self.reply.add_class("lmreg-chat-reply")
        self.reply.layout.width = WIDE
        button = widgets.Button(description=_("Send"), button_style="primary")
        button.add_class("lmreg-chat-send")
        # No check as you type: an empty prompt gets its one-line error on Send.
        prompt = Field("chat-prompt", self.prompt)
        super().__init__("lmreg-chat-box", [prompt], button, after=[self.reply])
        self.text = ""
        self._shown_at = 0.0

    def _piece(self, piece: str) -> None:
        self.text += piece
        # At most ~20 updates a second (each is a message to the browser); the first at once.
        now = time.monotonic()
        if now - self._shown_at >= _UPDATE_EVERY_S:
            self._shown_at = now
            self._show_text()

    def _show_text(self) -> None:
        escaped = html.escape(self.text)
        self.reply.value = f"<pre style='white-space:pre-wrap'>{escaped}</pre>" if escaped else ""

    def submit(self) -> str | None:
        """Send the prompt and stream the reply below the button."""
        self.text = ""
        self._shown_at = 0.0
        self.reply.value = ""
        reply = self.run(
            lambda: self.run_.chat(
                self.prompt.value, self._piece, model_url=self.model_url, model=self.model
            ),
            step=StepName.CHAT,
        )
        self._show_text()  # the whole reply (or what arrived before an error)
        # The result area would repeat the reply as plain text: the box shows it already.
        self.result.clear_output()
        return reply
