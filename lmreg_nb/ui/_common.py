"""What every form shares: a field and its one-line error, validation as you type, events.

A form lays out its fields, reads their values and calls one method of the
:class:`~lmreg_nb.onboarding.Onboarding` run. When that call succeeds the form
tells the run's other widgets (:func:`step_done`), so an interactive onboarding
refreshes its models table and runs its checks as the steps complete (the run
itself rewrites its live summary record after every step).
"""

from __future__ import annotations

import html
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from IPython.display import display

from ..errors import LmregError, ValidationError
from ..i18n import _
from ..validate import url_warnings

if TYPE_CHECKING:
    from ..onboarding import Onboarding

__all__ = [
    "LABEL_WIDTH",
    "WIDE",
    "Field",
    "Form",
    "error_html",
    "follow",
    "password",
    "registry_url_warnings",
    "required",
    "step_done",
    "text",
    "warnings_html",
]

log = logging.getLogger("lmreg_nb")

#: Width of the labels before the inputs: room for "registryUrl" and a Chinese label.
LABEL_WIDTH = "7.5em"
#: Width of an input that holds a URL or a name: a whole https address stays readable.
WIDE = "min(46em, 95%)"

Listener = Callable[[str], None]
# The widgets following a run: weak both ways, so a run or a widget that is gone takes its
# listeners with it (a widget holds its run: strong references would keep both alive).
_FOLLOWERS: weakref.WeakKeyDictionary[Any, list[weakref.WeakMethod[Listener]]] = (
    weakref.WeakKeyDictionary()
)


def follow(run: Any, listener: Listener) -> None:
    """Call ``listener(step_name)`` (a widget's method) each time a form of ``run`` completes
    a step."""
    _FOLLOWERS.setdefault(run, []).append(weakref.WeakMethod(listener))


def step_done(run: Any, step: str) -> None:
    """Tell the widgets following ``run`` that ``step`` completed (each listener's error is
    shown by that widget; one failing listener never stops the others)."""
    if run is None:
        return
    for ref in list(_FOLLOWERS.get(run, [])):
        listener = ref()
        if listener is None:
            continue
        try:
            listener(step)
        except Exception:  # a widget's refresh must never break the form that was clicked
            log.exception("refresh after step %s failed", step)


def error_html(message: str) -> str:
    """A one-line error, escaped (messages may quote what a server sent)."""
    return f"<span style='color:#cf222e'>{html.escape(message)}</span>" if message else ""


def warnings_html(warnings: Sequence[str]) -> str:
    """Non-blocking warnings, one per line, escaped."""
    return "".join(
        f"<div style='color:#9a6700;line-height:1.4'>⚠ {html.escape(w)}</div>" for w in warnings
    )


def required(field: str, what: str) -> Callable[[str], str]:
    """A check that a text field is not empty; ``what`` says what to enter (already translated)."""

    def check(value: str) -> str:
        if not value.strip():
            raise ValidationError(field, what)
        return value.strip()

    return check


def registry_url_warnings(value: str) -> list[str]:
    """The non-blocking warnings about a registryUrl being typed (none while it is empty)."""
    if not value.strip():
        return []
    return [w.message for w in url_warnings(value)]


def text(description: str, *, wide: bool = False, **kw: Any) -> widgets.Text:
    """A text input with a label wide enough for the field names (and a wide box for URLs)."""
    return _sized(widgets.Text(description=description, **kw), wide)


def password(description: str, *, wide: bool = False, **kw: Any) -> widgets.Password:
    """A password input (its value is cleared by the form once read)."""
    return _sized(widgets.Password(description=description, **kw), wide)


def _sized(widget: Any, wide: bool) -> Any:
    widget.style.description_width = LABEL_WIDTH
    if wide:
        widget.layout.width = WIDE
    return widget


class Field:
    """An input widget, its CSS classes and a one-line error label under it.

    ``check`` validates the value as the user types (it raises
    ValidationError); ``warn`` lists non-blocking warnings, shown one per line.
    """

    def __init__(
        self,
        key: str,
        widget: widgets.ValueWidget,
        check: Callable[[Any], Any] | None = None,
        *,
        warn: Callable[[Any], list[str]] | None = None,
        optional: bool = False,
    ) -> None:
        self.key = key
        self.widget = widget
        self.check = check
        self.warn = warn
        self.optional = optional
        widget.add_class(f"lmreg-{key}")
        self.error = widgets.HTML("")
        self.error.add_class("lmreg-error")
        self.error.add_class(f"lmreg-{key}-error")
        # Indented to start under the input, not under its label.
        self.error.layout.margin = f"0 0 0 calc({LABEL_WIDTH} + 4px)"
        self.box = widgets.VBox([widget, self.error])
        self._taking = False
        widget.observe(self._changed, names="value")

    @property
    def value(self) -> Any:
        """The widget's current value."""
        return self.widget.value

    def validate(self) -> bool:
        """Check the current value now; show the error (or warnings) under the field."""
        return self.check_value(self.widget.value)

    def take(self) -> Any:
        """Read the value and clear the field at once (for secrets); check it with check_value."""
        value = self.widget.value
        self._taking = True
        try:
            self.widget.value = ""
        finally:
            self._taking = False
        return value

    def check_value(self, value: Any) -> bool:
        """Validate ``value`` (the current one, or one read by :meth:`take`); show the result."""
        if self.optional and value in ("", None):
            self.error.value = ""
            return True
        try:
            if self.check is not None:
                self.check(value)
        except LmregError as exc:
            # Under its field the rule is enough: the label beside it already names the field
            # (in the reader's language), so "contact_mobile: " would only repeat it.
            reason = exc.reason if isinstance(exc, ValidationError) else str(exc)
            self.error.value = error_html(reason)
            return False
        self.error.value = warnings_html(self.warn(value) if self.warn else [])
        return True

    def _changed(self, change: dict[str, Any]) -> None:
        if not self._taking:
            self.validate()


#: The platform's field names (as errors name them) and the forms' field keys.
_FIELD_KEYS = {"modelName": "model-name", "registryUrl": "registry-url", "apiKey": "api-key"}


class Form:
    """Fields, one button, a message line and a result area; the click calls one function.

    Layout, top to bottom: fields, ``extra``, the button, the message, ``after``,
    the result: what a click produces always appears below the button.
    """

    #: The onboarding run whose method the click calls (each form sets it).
    run_: Onboarding | None = None

    def __init__(
        self,
        css: str,
        fields: list[Field],
        button: widgets.Button,
        *extra: widgets.Widget,
        after: Sequence[widgets.Widget] = (),
    ) -> None:
        self.fields = {f.key: f for f in fields}
        self.button = button
        self.result = widgets.Output()
        self.result.add_class("lmreg-result")
        self.message = widgets.HTML("")
        self.message.add_class("lmreg-message")
        self.container = widgets.VBox(
            [*(f.box for f in fields), *extra, button, self.message, *after, self.result]
        )
        self.container.add_class(css)
        self.last_result: Any = None
        self.last_error: str | None = None
        button.on_click(lambda _b: self.submit())

    def submit(self) -> Any:  # pragma: no cover - each form defines it
        """What the button does."""
        raise NotImplementedError

    def valid(self, *, taken: dict[str, Any] | None = None) -> bool:
        """Validate every field, showing each error; ``taken``: secrets read and cleared."""
        taken = taken or {}
        return all(
            [
                f.check_value(taken[k]) if k in taken else f.validate()
                for k, f in self.fields.items()
            ]
        )

    def run(self, action: Callable[[], Any], *, step: str = "") -> Any:
        """Call ``action`` with the button disabled; show its result or its one-line error.

        The result replaces the previous one; nothing is shown for None. With
        ``step``, the widgets following the run hear that the step completed.
        """
        self.button.disabled = True
        self.message.value = html.escape(_("working…"))
        self.last_error = None
        self.result.clear_output()
        try:
            result = action()
        except Exception as exc:  # a click never ends in a traceback: one line, secrets masked
            if not isinstance(exc, LmregError):
                log.debug("form action failed", exc_info=True)
            if isinstance(exc, ValidationError):
                self._clear_secrets(exc)
            self.last_error = self._one_line(exc)
            self.message.value = error_html(_("error: {message}").format(message=self.last_error))
            return None
        finally:
            self.button.disabled = False
        self.message.value = ""
        self.last_result = result
        self.show(result)
        if step:
            step_done(self.run_, step)
        return result

    def _clear_secrets(self, exc: ValidationError) -> None:
        """Empty each field the error says holds a key (an apiKey pasted as the modelName):
        it should not stay on screen, nor in widget state a save may keep."""
        for error in exc.errors:
            key = _FIELD_KEYS.get(error.field)
            if error.holds_secret and key in self.fields:
                self.fields[key].take()

    def _one_line(self, exc: Exception) -> str:
        # The run knows the secrets to mask (appSecret, token, apiKey) and how to say it.
        if self.run_ is not None:
            return self.run_.failure_text(exc)
        return " ".join(str(exc).split()) or type(exc).__name__

    def show(self, result: Any) -> None:
        """Show ``result`` in the result area (a stray ``None`` is never shown)."""
        if result is None:
            return
        with self.result:
            for item in result if isinstance(result, tuple) else (result,):
                display(item)

    def _ipython_display_(self) -> None:
        display(self.container)
