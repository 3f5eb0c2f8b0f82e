"""pandas views of registered models: apiKey masked, tz-aware datetimes, stable columns."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..models import MAX_TIMESTAMP_MS, RegisteredModel

__all__ = ["MODEL_COLUMNS", "models_frame"]

#: Column order of :func:`models_frame` (the wire's field names).
MODEL_COLUMNS = ("modelName", "modelId", "registryUrl", "apiKey", "createTime", "updateTime")

_TIME = pd.DatetimeTZDtype(unit="ms", tz="UTC")
# Declared, not inferred, so an empty account gives the same dtypes as a full one.
_DTYPES: dict[str, object] = {
    "modelName": pd.StringDtype(),
    "modelId": pd.StringDtype(),
    "registryUrl": pd.StringDtype(),
    "apiKey": pd.StringDtype(),
    "createTime": _TIME,
    "updateTime": _TIME,
}


def models_frame(models: Sequence[RegisteredModel]) -> pd.DataFrame:
    """One row per model, apiKey masked to its last 4 characters, times in UTC.

    When the platform sent a row out of range (RegisteredModel.invalid), an
    ``invalid`` column after the others says why; that row's bad times are empty.
    """
    columns: dict[str, pd.Series] = {
        "modelName": pd.Series([m.model_name for m in models], dtype=_DTYPES["modelName"]),
        "modelId": pd.Series([m.model_id for m in models], dtype=_DTYPES["modelId"]),
        "registryUrl": pd.Series([m.registry_url for m in models], dtype=_DTYPES["registryUrl"]),
        # Masked here, so no view built from this frame can show a whole key.
        "apiKey": pd.Series([m.api_key.masked for m in models], dtype=_DTYPES["apiKey"]),
        "createTime": _times([m.create_time_ms for m in models]),
        "updateTime": _times([m.update_time_ms for m in models]),
    }
    frame = pd.DataFrame(columns, columns=list(MODEL_COLUMNS))
    if any(m.invalid for m in models):
        frame["invalid"] = pd.Series([m.invalid or "" for m in models], dtype=pd.StringDtype())
    return frame


def _times(values: list[int | None]) -> pd.Series:
    # A model built by hand may hold any int; only 13-digit timestamps become times.
    values = [v if v is not None and 0 <= v <= MAX_TIMESTAMP_MS else None for v in values]
    ms = pd.Series(values, dtype="Int64")
    return pd.to_datetime(ms, unit="ms", utc=True).astype(_TIME)
