"""What every form shares: a field and its one-line error, validation as you type."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from IPython.display import display

from ..errors import LmregError, ValidationError
from ..validate import url_warnings

__all__ = ["Field", "Form", "error_html", "registry_url_warnings", "required"]

log = logging.getLogger("lmreg_nb")


def error_html(message: str) -> str:
    """A one-line error, escaped (messages may quote what a server sent)."""
    return f"<span style='color:#cf222e'>{html.escape(message)}</span>" if message else ""


def required(field: str, what: str) -> Callable[[str], str]:
    """A check that a text field is not empty; ``what`` says what to enter."""

    def check(value: str) -> str:
        if not value.strip():
            raise ValidationError(field, what)
        return value.strip()

    return check


def registry_url_warnings(value: str) -> list[str]:
    """The non-blocking warnings about a registryUrl being typed (none while it is empty)."""
    return url_warnings(value) if value.strip() else []


class Field:
    """An input widget, its CSS classes and a one-line error label beside it.

    ``check`` validates the value as the user types (it raises
    ValidationError); ``warn`` lists non-blocking warnings.
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
        self.box = widgets.HBox([widget, self.error])
        self._taking = False
        widget.observe(self._changed, names="value")

    @property
    def value(self) -> Any:
        """The widget's current value."""
        return self.widget.value

    def validate(self) -> bool:
        """Check the current value now; show the error (or warnings) beside the field."""
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
            self.error.value = error_html(str(exc))
            return False
        warnings = self.warn(value) if self.warn else []
        self.error.value = (
            f"<span style='color:#9a6700'>{html.escape('; '.join(warnings))}</span>"
            if warnings
            else ""
        )
        return True

    def _changed(self, change: dict[str, Any]) -> None:
        if not self._taking:
            self.validate()


class Form:
    """A box of fields, one button and a result area; the click calls one function."""

    def __init__(
        self, css: str, fields: list[Field], button: widgets.Button, *extra: widgets.Widget
    ) -> None:
        self.fields = {f.key: f for f in fields}
        self.button = button
        self.result = widgets.Output()
        self.result.add_class("lmreg-result")
        self.message = widgets.HTML("")
        self.container = widgets.VBox(
            [*(f.box for f in fields), *extra, button, self.message, self.result]
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

    def run(self, action: Callable[[], Any]) -> Any:
        """Call ``action`` with the button disabled; show its result or its one-line error."""
        self.button.disabled = True
        self.message.value = "working…"
        self.last_error = None
        self.result.clear_output()
        try:
            result = action()
        except LmregError as exc:
            self.last_error = str(exc)
            self.message.value = error_html(f"error: {exc}")
            return None
        finally:
            self.button.disabled = False
        self.message.value = ""
        self.last_result = result
        with self.result:
            display(result)
        return result

    def _ipython_display_(self) -> None:
        display(self.container)
