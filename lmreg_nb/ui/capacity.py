"""The capacity form: how many students of a class can chat at once within the wait allowed."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from ..display import Table
from ..errors import ValidationError
from ..i18n import _
from ..onboarding import Onboarding
from ..probe.text.capacity_table import level_headers, level_rows
from ..summary import StepName
from ._common import Field, Form

__all__ = ["CLASS_SIZES", "DEFAULT_SLO_TTFT_MS", "CapacityForm", "check_slo_ttft_ms"]

#: Class sizes offered as presets (students chatting at once).
CLASS_SIZES = (10, 20, 40)
#: The first-token wait a student accepts, p90: 2 s, as the capacity contract's default SLO.
DEFAULT_SLO_TTFT_MS = 2000
_SLO_RANGE = (100, 60_000)
#: Wider than the other forms' labels: "首字延迟（毫秒）" must not be cut to "首字延迟（毫…".
LABEL_WIDTH = "10em"


def check_class_size(value: object) -> int:
    """A class size: a whole number of students from 1 to 1000."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
        raise ValidationError("class_size", _("enter how many students chat at once, 1 to 1000"))
    return value


def check_slo_ttft_ms(value: object) -> int:
    """The first-token SLO in milliseconds, within a range a person can wait."""
    low, high = _SLO_RANGE
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValidationError(
            "slo_ttft_ms", _("enter a wait from {low} to {high} ms").format(low=low, high=high)
        )
    return value


def capacity_levels(levels: Any) -> Table:
    """The levels measured, as the record shows them (translated columns, whole ms)."""
    return Table(level_headers(), level_rows(levels))


class CapacityForm(Form):
    """Class size (presets 10 / 20 / 40, or any number) and the first-token wait allowed;
    "Measure capacity" runs the facade's capacity step and shows the verdict sentence,
    the table of levels and the charts. ``model_url``/``model`` name the endpoint
    (empty: the one the run's checks called), as for the chat box."""

    def __init__(
        self,
        run: Onboarding | None = None,
        *,
        class_size: int = 40,
        slo_ttft_ms: int = DEFAULT_SLO_TTFT_MS,
        model_url: str = "",
        model: str = "",
    ) -> None:
        self.run_: Onboarding = run or Onboarding("")
        self.model_url = model_url
        self.model = model
        self.preset = widgets.ToggleButtons(
            options=[(str(n), n) for n in CLASS_SIZES],
            value=class_size if class_size in CLASS_SIZES else None,
            description=_("class size"),
            style={"description_width": LABEL_WIDTH, "button_width": "4em"},
        )
        self.preset.add_class("lmreg-class-preset")
        self.class_size = widgets.IntText(value=class_size, description=_("students"))
        self.class_size.style.description_width = LABEL_WIDTH
        self.slo = widgets.IntText(value=slo_ttft_ms, description=_("first token (ms)"))
        self.slo.style.description_width = LABEL_WIDTH
        hint = widgets.HTML(
            _("A student waits at most this long for the reply to start (p90); 2000 ms is usual.")
        )
        hint.layout.margin = f"0 0 0 calc({LABEL_WIDTH} + 4px)"
        self.preset.observe(self._preset_chosen, names="value")
        button = widgets.Button(description=_("Measure capacity"), button_style="primary")
        button.add_class("lmreg-capacity-button")
        super().__init__(
            "lmreg-capacity-form",
            [
                Field("class-size", self.class_size, check_class_size),
                Field("slo-ttft", self.slo, check_slo_ttft_ms),
            ],
            button,
            hint,
        )
        self.container.children = (self.preset, *self.container.children)

    def progress(self, progress: Any) -> None:
        """Show where the search is (which level, how many requests so far) under the button.

        Called from the search's thread; the message line is one widget value.
        """
        from ..probe.text.capacity_text import progress_text

        self.message.value = html.escape(progress_text(progress))

    def _preset_chosen(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.class_size.value = change["new"]

    def submit(self) -> Any:
        """Validate, measure (progress under the button), then show the verdict, table, charts."""
        if not self.valid():
            return None
        size, slo = int(self.class_size.value), int(self.slo.value)
        self.preset.value = size if size in CLASS_SIZES else None
        return self.run(lambda: self._measure(size, slo), step=StepName.CAPACITY)

    def _measure(self, size: int, slo: int) -> tuple[Any, ...]:
        # Empty model_url/model: the run measures the endpoint its checks called.
        outcome = self.run_.capacity(
            size, slo, model_url=self.model_url, model=self.model, on_progress=self.progress
        )
        result = self.run_.capacity_result
        if result is None:
            return (outcome,)
        return (outcome, capacity_levels(result.levels), self.run_.capacity_figure())
