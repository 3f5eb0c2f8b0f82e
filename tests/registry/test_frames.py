"""models_frame: one row per model, masked apiKey, UTC datetimes, stable columns and dtypes."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from lmreg_nb.models import RegisteredModel
from lmreg_nb.registry.frames import MODEL_COLUMNS, models_frame
from lmreg_nb.secret import Secret

KEY = "sk-school-0123456789wxyz"
MODELS = [
    RegisteredModel(
        "m1",
        "first",
        "https://a.example/v1/chat/completions",
        Secret(KEY),
        1_763_780_000_000,
        1_763_780_500_123,
    ),
    RegisteredModel(
        "m2", "second", "https://b.example/v1/chat/completions", Secret(""), None, None
    ),
]


def test_one_row_per_model_in_order_with_stable_columns() -> None:
    frame = models_frame(MODELS)
    assert list(frame.columns) == list(MODEL_COLUMNS) == [
        "modelName", "modelId", "registryUrl", "apiKey", "createTime", "updateTime",
    ]  # fmt: skip
    assert frame["modelId"].tolist() == ["m1", "m2"] and len(frame) == 2


def test_api_key_is_masked() -> None:
    frame = models_frame(MODELS)
    assert frame["apiKey"].tolist() == ["…wxyz", "(not set)"]
    for view in (frame.to_string(), frame.to_html(), frame.to_json(date_format="iso")):
        assert KEY not in view


def test_times_are_tz_aware_utc() -> None:
    frame = models_frame(MODELS)
    created = frame.loc[0, "createTime"]
    assert created == pd.Timestamp(datetime(2025, 11, 22, 2, 53, 20, tzinfo=UTC))
    assert str(created.tz) == "UTC"
    assert frame.loc[0, "updateTime"].microsecond == 123_000
    assert pd.isna(frame.loc[1, "createTime"]) and pd.isna(frame.loc[1, "updateTime"])
    assert isinstance(frame["createTime"].dtype, pd.DatetimeTZDtype)


def test_empty_account_gives_the_same_columns_and_dtypes() -> None:
    empty, full = models_frame([]), models_frame(MODELS)
    assert len(empty) == 0
    assert list(empty.columns) == list(full.columns)
    assert empty.dtypes.to_dict() == full.dtypes.to_dict()
    # Still usable like a full one.
    assert empty.sort_values("createTime").empty and empty["createTime"].dt.tz is not None


def test_a_row_out_of_range_is_marked_not_fatal() -> None:
    good = {"modelId": "m1", "modelName": "ok", "registryUrl": "https://a.example", "apiKey": KEY,
            "createTime": 1_763_780_000_000, "updateTime": 1_763_780_000_001}  # fmt: skip
    bad = {**good, "modelId": "m2", "modelName": "bad", "updateTime": 99999999999999999}
    models = [RegisteredModel.from_api(good), RegisteredModel.from_api(bad)]
    assert models[0].invalid is None
    assert models[1].invalid and "updateTime" in models[1].invalid
    assert models[1].update_time is None and models[1].create_time is not None
    frame = models_frame(models)
    assert list(frame.columns) == [*MODEL_COLUMNS, "invalid"]
    assert frame["invalid"].tolist()[0] == "" and "updateTime" in frame["invalid"].tolist()[1]
    assert pd.isna(frame.loc[1, "updateTime"])
    assert "invalid" in models[1].row() and "invalid" not in models[0].row()


def test_other_bad_times_are_marked_too() -> None:
    for value in (-1, "soon", 1e30, float("nan"), True):
        model = RegisteredModel.from_api({"modelId": "m", "createTime": value})
        assert model.create_time is None and model.invalid, value
    assert RegisteredModel.from_api({"modelId": "m", "createTime": None}).invalid is None


def test_a_hand_made_model_with_an_impossible_time_shows_no_time() -> None:
    model = RegisteredModel("m", "n", "https://a.example", Secret(KEY), 99999999999999999, -1)
    frame = models_frame([model])
    assert pd.isna(frame.loc[0, "createTime"]) and pd.isna(frame.loc[0, "updateTime"])
