"""Chinese punctuation in the zh-CN catalog: full-width marks between Chinese words.

No ASCII comma or semicolon next to a Chinese character ("1 个请求, 0 个错误",
"只有 role; 最后"), and no space before a full-width parenthesis ("设置 （参见").
Code, identifiers and numbers between ASCII words keep their ASCII marks.
"""

from __future__ import annotations

import re
from typing import Any

from fakes.catalog import translations

from lmreg_nb.summary.performance import Performance

CJK = "\u3400-\u9fff\u3000-\u303f\uff00-\uffef"
ASCII_MARK_BY_CHINESE = re.compile(rf"[{CJK}][ \t]*[,;]|[,;][ \t]*[{CJK}]")
SPACE_BEFORE_PAREN = re.compile(r"[ \t]（")


def test_no_ascii_comma_or_semicolon_between_chinese_words() -> None:
    bad = [(i, s) for i, s in translations() if ASCII_MARK_BY_CHINESE.search(s)]
    assert not bad, "\n".join(f"{i!r}\n  -> {s}" for i, s in bad)


def test_no_space_before_a_full_width_parenthesis() -> None:
    bad = [(i, s) for i, s in translations() if SPACE_BEFORE_PAREN.search(s)]
    assert not bad, "\n".join(f"{i!r}\n  -> {s}" for i, s in bad)


def _chinese(render: object) -> str:
    from lmreg_nb import i18n

    with i18n.speaking("zh-CN"):
        return str(render() if callable(render) else render)


def test_sentences_put_together_in_code_follow_the_same_rules() -> None:
    """Pieces joined in code (a list of causes, a hint after a message) are punctuated
    by the language too: "1 个请求, 0 个错误" and "设置 （参见" came from such joins."""
    from lmreg_nb.errors import ConfigurationError
    from lmreg_nb.probe.wire.reasons import kinds_text
    from lmreg_nb.records.text import perf_sentence
    from lmreg_nb.settings import Settings

    def missing() -> str:
        try:
            Settings.load(environ={}).require("base_url", "app_id")
        except ConfigurationError as exc:
            return str(exc)
        raise AssertionError("nothing missing")

    texts = [
        _chinese(missing),
        _chinese(lambda: kinds_text({"timeout": 3, "status 500": 2, "connect": 1})),
        _chinese(lambda: perf_sentence(Performance(requests=2, errors=1, requests_per_s=1.5))),
    ]
    for text in texts:
        assert not ASCII_MARK_BY_CHINESE.search(text), text
        assert not SPACE_BEFORE_PAREN.search(text), text


# -- issue 32 item 9: the joins the third walkthrough saw -------------------------------
#: "联系人信息: …": an ASCII colon after a Chinese word.
COLON_AFTER_CHINESE = re.compile(rf"[{CJK}]:[ \t]")
#: "HTTP 404: Not Found. 请…": an ASCII full stop before a Chinese sentence.
PERIOD_BEFORE_CHINESE = re.compile(rf"[A-Za-z)\]][.][ \t]*[{CJK}]")
#: "…请先完成。；…": two marks in a row where clauses were joined.
TWO_MARKS = re.compile(r"[。！？；][；，。]")
#: "LMREG_MODEL_URL, LMREG_MODEL_API_KEY 未设置": a list joined with an ASCII comma.
ASCII_LIST = re.compile(r"\b[A-Z][A-Z0-9_]{2,}, [A-Z][A-Z0-9_]{2,}\b")


def _join_problems(text: str) -> list[str]:
    rules = {
        "ASCII mark by Chinese": ASCII_MARK_BY_CHINESE,
        "space before （": SPACE_BEFORE_PAREN,
        "ASCII colon after Chinese": COLON_AFTER_CHINESE,
        "ASCII full stop before Chinese": PERIOD_BEFORE_CHINESE,
        "two marks in a row": TWO_MARKS,
    }
    found = [name for name, rule in rules.items() if rule.search(text)]
    if re.search(f"[{CJK}]", text) and ASCII_LIST.search(text):
        found.append("list joined with an ASCII comma")
    return found


def test_the_catalog_has_none_of_the_joins() -> None:
    # A translation may quote code ("model, prompt, temperature"): lists are judged in code.
    bad = [
        (i, s, p)
        for i, s in translations()
        for p in _join_problems(s)
        if p != "list joined with an ASCII comma"
    ]
    assert not bad, "\n".join(f"{i!r}\n  -> {s}  [{p}]" for i, s, p in bad)


def test_the_rules_catch_the_joins_the_walkthrough_saw() -> None:
    """Each rule fails on the sentence that was seen (so a passing test means something)."""
    seen = [
        "联系人信息: 缺少 contact_email",
        "必需检查 model-name-served 未通过：HTTP 404: Not Found. 请注册服务器提供的 modelName",
        "以下步骤还没有完成：并发容量。请先完成。；必需检查 reachable 未通过",
        "LMREG_MODEL_URL, LMREG_MODEL_API_KEY 未设置：请在环境变量或 .env 中设置",
    ]
    assert all(_join_problems(text) for text in seen), [_join_problems(t) for t in seen]


def _code_built_sentences() -> list[str]:
    """Sentences the code puts together from pieces, in Chinese."""
    from pathlib import Path as P
    from types import SimpleNamespace

    from lmreg_nb.batch.plan import _kind_words
    from lmreg_nb.commands.runs import report_lines
    from lmreg_nb.errors import ConfigurationError
    from lmreg_nb.i18n import _, clauses
    from lmreg_nb.probe.checks.golive import MODEL_NAME_SERVED
    from lmreg_nb.probe.target import Target
    from lmreg_nb.probe.text.checks import judged
    from lmreg_nb.settings import Settings
    from lmreg_nb.summary import Check, Step, build_summary

    def missing() -> str:
        try:
            Settings.load(environ={"LMREG_BASE_URL": "https://a.example"}).require(
                "model_url", "model_api_key"
            )
        except ConfigurationError as exc:
            return str(exc)
        raise AssertionError("nothing missing")

    def summary() -> Any:
        steps = [Step("contact card", False, "contact_email: 不是电子邮件地址")]
        return build_summary(
            school="S", contact=None, base_url=None, env=None, steps=steps, models=[],
            checks=[Check("reachable", False, "error", "127.0.0.1:9 上没有服务在监听")],
            class_size=40, target_urls=[],
        )  # fmt: skip

    def not_found() -> str:
        from lmreg_nb.probe.wire.exchange import Exchange

        ex = Exchange(stream_requested=False)
        ex.status = 404
        ex.json_body = {"error": {"message": "Not Found"}}  # what vLLM's router says
        target = Target("https://a.example/v1/chat/completions", "sk-0123456789", "my-llm")
        found = judged(MODEL_NAME_SERVED, target, {"plain": ex}, stage="failed")
        assert found is not None
        return found.detail

    def onboard() -> str:
        built = summary()
        result = SimpleNamespace(
            summary=built, status="failed", duration_s=1.0, kernel_retried=False, error="",
            notebook=P("o.ipynb"), html=P("o.html"), short_html=P("s.html"),
        )  # fmt: skip
        return "\n".join(report_lines(result)[0])

    return [
        _chinese(missing),
        _chinese(lambda: summary().reason),
        _chinese(lambda: clauses(summary().go_live.blockers)),
        _chinese(not_found),
        _chinese(onboard),
        _chinese(lambda: _("{column}: {value} is not a {kind}").format(
            column="第 3 行，class_size 列", value="'二十'", kind=_kind_words("int"))),
    ]  # fmt: skip


def test_code_built_sentences_have_none_of_the_joins() -> None:
    texts = _code_built_sentences()
    bad = [(t, _join_problems(t)) for t in texts if _join_problems(t)]
    assert not bad, "\n".join(f"{t}\n  [{p}]" for t, p in bad)
    assert "不是整数" in texts[-1]  # not "不是 int"
