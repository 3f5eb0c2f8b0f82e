"""The seven notebooks' cells, every sentence a person reads through ``_()``.

``build.py`` (beside this file) calls each function after choosing the
language, and writes the notebooks; this file is their one source of truth.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell

from lmreg_nb.i18n import _, current_language

#: Cells whose outputs nbval compares (stored in the notebooks, sanitized).
CHECK = "nbval-check-output"

SETUP = """\
import lmreg_nb.onboarding as ob
from lmreg_nb import ui

{call}  # {comment}"""


def setup() -> str:
    """The first code cell; a notebook rendered in another language makes it the kernel's
    (its comment in that language too)."""
    lang = current_language()
    call = "ob.notebook_setup()" if lang == "en" else f'ob.notebook_setup(lang="{lang}")'
    comment = _("a toolkit error shows as one line: `error: ...`")
    return SETUP.format(call=call, comment=comment)


def config_help() -> str:
    return _(
        "If a step fails, the line starting with `error:` says what to fix. Check the "
        "configuration below first: the variables come from the environment or from a `.env` "
        "file in the notebook's folder or one of the folders above it (see `.env.example`); "
        "the configuration shows which file was read. Secrets are shown masked (`…a1b2`); they "
        "are never typed into a notebook parameter."
    )


def _literal(text: str) -> str:
    """``text`` as a Python string literal, non-ASCII as itself (你好, not \\u4f60)."""
    return json.dumps(text, ensure_ascii=False)


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text)


def code(text: str, *tags: str) -> nbformat.NotebookNode:
    cell = new_code_cell(text)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def params(*lines: tuple[str, str]) -> nbformat.NotebookNode:
    """The parameters cell: each line is (code, comment a person reads)."""
    body = "\n".join(f"{line}  # {comment}" for line, comment in lines)
    head = _("Parameters (papermill sets these for a headless run).")
    return code(f"# {head}\n{body}", "parameters")


def get_token() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 1: get a token")
            + "\n\n"
            + _(
                "**What it does.** Exchanges the school's `appId` and `appSecret` for a "
                "temporary token and its `env` (spec section 5). Every registration call carries "
                "both. The token is valid for 3 days and is cached, so the next notebooks reuse "
                "it."
            )
            + "\n\n"
            + _(
                "**What you need.** `LMREG_BASE_URL` (your platform's address), `LMREG_APP_ID` "
                "and `LMREG_APP_SECRET` (from the provider), in the environment or in `.env`."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                "exchange: bool = False",
                _("True: get the token now from LMREG_APP_ID/LMREG_APP_SECRET, without the form"),
            )
        ),
        md(_("## Your configuration")),
        code("ob.configuration()", CHECK),
        md(
            _("## Connect")
            + "\n\n"
            + _(
                "Type the appSecret into the form (or leave it empty to use `LMREG_APP_SECRET`) "
                "and click **Connect**. The field is cleared as soon as it is read."
            )
            + "\n\n"
            + _(
                "**When it fails:** `wrong appId or appSecret` means the pair is wrong: check it "
                "with the provider. `could not reach` means `LMREG_BASE_URL` is wrong or the "
                "platform is down. `must be an https:// address` means the base address needs "
                "`https://`."
            )
        ),
        code("run = ob.Onboarding('')\nrun.connect() if exchange else ui.CredentialsForm(run)"),
        md(_("Next: `02_register_model` registers your model with this token.")),
    ]


def register_model() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 2: register your model")
            + "\n\n"
            + _(
                "**What it does.** Registers the school's model with the platform (spec 4.1): "
                "its `modelName`, the `registryUrl` the platform will call (your "
                "`.../v1/chat/completions`) and the `apiKey` the platform will send as "
                "`Authorization: Bearer`."
            )
            + "\n\n"
            + _(
                "**What you need.** A token (step 1; this notebook gets one itself when "
                "`LMREG_APP_ID`/`LMREG_APP_SECRET` are set), `LMREG_MODEL_URL` and "
                "`LMREG_MODEL_API_KEY` (or type them in the form)."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                'model_name: str = ""',
                _("the modelName to register; empty: show the form, register nothing"),
            ),
            ('registry_url: str = ""', _("the chat endpoint; empty: LMREG_MODEL_URL")),
        ),
        md(
            _("## Register")
            + "\n\n"
            + _(
                "Fill in the form and click **Register**. Each field is checked as you type; a "
                "warning (plain http, a private address) does not stop you, but the platform "
                "cannot reach such an address. The reserved fields are accepted and stored, not "
                "used."
            )
            + "\n\n"
            + _(
                "**When it fails:** `modelName already used` means the account has a model of "
                "that name: change it in `03_modify_model` instead. `registryUrl: ...` says what "
                "is wrong with the address. `get a new token` means the token expired: run step "
                "1 again."
            )
        ),
        code(
            "run = ob.Onboarding('')\n"
            "run.register(model_name, registry_url, update_existing=False) if model_name "
            "else ui.RegisterForm(run)"
        ),
        md(_("Next: `04_list_models` shows what is registered.")),
    ]


def modify_model() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 3: change a registered model")
            + "\n\n"
            + _(
                "**What it does.** Overwrites a registered model's `modelName`, `registryUrl` "
                "and `apiKey` (spec 4.2). The platform keeps `createTime` and sets a new "
                "`updateTime`. The result shows each old and new value."
            )
            + "\n\n"
            + _(
                "**What you need.** A token (step 1) and a model registered in step 2. The "
                "modify operation always overwrites apiKey: leave the apiKey field empty to keep "
                "the current key."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                'model_name: str = ""',
                _("the model to change, by its current modelName; empty: show the form"),
            ),
            ('new_model_name: str = ""', _("empty: keep the name")),
            ('new_registry_url: str = ""', _("empty: keep the address")),
            (
                "api_key_from_env: bool = False",
                _("True: send LMREG_MODEL_API_KEY as the new apiKey"),
            ),
        ),
        md(
            _("## Modify")
            + "\n\n"
            + _(
                "Choose the model, change its fields, click **Modify…**, read what will be "
                "overwritten, then click **Confirm overwrite**."
            )
            + "\n\n"
            + _(
                "**When it fails:** `no model named ...` or `modelId unknown` means the model is "
                "not in this account: list them with `04_list_models`. `modelName already used` "
                "means another of your models has that name."
            )
        ),
        code(
            "run = ob.Onboarding('')\n"
            "run.update(model_name, new_model_name=new_model_name, "
            "new_registry_url=new_registry_url,\n"
            "           api_key_from_env=api_key_from_env) if model_name else ui.ModifyForm(run)"
        ),
    ]


def list_models() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 4: list the registered models")
            + "\n\n"
            + _(
                "**What it does.** Shows every model of the account in the order they were "
                "registered (spec 4.3), apiKey masked to its last 4 characters, times in your "
                "local time with the zone. It changes nothing."
            )
            + "\n\n"
            + _("**What you need.** A token (step 1).")
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                'name_contains: str = ""',
                _("show only models whose modelName contains this text"),
            )
        ),
        md(
            _("## The models")
            + "\n\n"
            + _(
                "Run this cell again after registering or changing a model elsewhere. "
                "**When it fails:** `get a new token` means the token expired (run step 1); "
                "`X-ENV` errors mean the env does not match the token: unset `LMREG_ENV`."
            )
        ),
        code("run = ob.Onboarding('')\nrun.list_models(name_contains)"),
    ]


def chat_endpoint() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 5: test your chat endpoint")
            + "\n\n"
            + _(
                "**What it does.** Calls your model the way the platform will (spec 4.5: "
                "`POST .../v1/chat/completions`, `Authorization: Bearer <apiKey>`, streamed and "
                "not) and checks every answer against the convention. Optionally it runs a small "
                "load test, and measures how many students of a class can chat at once. The "
                "platform is not involved: nothing is registered."
            )
            + "\n\n"
            + _(
                "**What you need.** `LMREG_MODEL_URL`, `LMREG_MODEL_API_KEY` and "
                "`LMREG_MODEL_NAME` (the `model` field your server expects)."
            )
            + "\n\n"
            + _(
                "**Or check the model registered in step 2** as the platform will call it: set "
                "`registered` below to its modelName. Its registryUrl and apiKey are read from "
                "the platform (with the token of step 1), so nothing needs copying into `.env`."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                'registered: str = ""',
                _("modelName of a registered model to check as the platform calls it"),
            ),
            ('model_url: str = ""', _("the chat endpoint; empty: LMREG_MODEL_URL")),
            ('model: str = ""', _("the body field `model`; empty: LMREG_MODEL_NAME")),
            ("check_requests: int = 0", _("requests of the load test; 0 skips it")),
            (
                "check_concurrency: int = 1",
                _("requests in flight at once during the load test"),
            ),
            ("class_size: int = 0", _("students chatting at once; 0: show the capacity form")),
            ('prompt: str = ""', _("non-empty: send this prompt and stream the reply below")),
        ),
        md(
            _("## Conformance")
            + "\n\n"
            + _(
                "Each row is one check. Rows marked required must pass before go-live; "
                "recommended rows are advice; info rows only inform."
            )
            + "\n\n"
            + _(
                "**When it fails:** a 401 means the apiKey does not match what your server "
                "expects; a `stream` failure means your server does not send `data: ...` events "
                "ending with `data: [DONE]`; a connection error means the address is wrong or "
                "your server is down."
            )
        ),
        code("run = ob.Onboarding('')\nrun.use_registered(registered) if registered else None"),
        code(
            "run.check_endpoint(check_requests, check_concurrency, "
            "model_url=model_url, model=model)"
        ),
        code("run.verdict()", CHECK),
        md(_("## Performance (when the load test ran)")),
        code("run.figure()"),
        md(
            _("## Capacity")
            + "\n\n"
            + _(
                "How many students can chat at once while the reply still starts within the "
                "wait you allow (2 seconds for 9 in 10 replies is usual). It takes up to a few "
                "minutes."
            )
        ),
        code(
            "run.capacity(class_size, model_url=model_url, model=model) if class_size "
            "else ui.CapacityForm(run, model_url=model_url, model=model)"
        ),
        code("run.capacity_figure() if class_size else None"),
        md(
            _("## Chat with your model")
            + "\n\n"
            + _(
                "The reply appears as it streams in, from the endpoint checked above. It is "
                "shown as plain text, never as HTML."
            )
        ),
        code(
            "(\n"
            "    ui.stream_reply(run, prompt, model_url=model_url, model=model)\n"
            "    if prompt\n"
            "    else ui.ChatBox(run, model_url=model_url, model=model)\n"
            ")"
        ),
    ]


def onboarding() -> list[nbformat.NotebookNode]:
    # The default chat prompt in the notebook's language: a Chinese record chats in Chinese.
    prompt = _("Hello! Introduce yourself in one sentence.")
    return [
        md(
            _("# Onboarding: the whole integration in one notebook")
            + "\n\n"
            + _(
                "**What it does.** Records the school's contact for monitoring alerts, gets a "
                "token, registers the school's model (or updates it when the name is already "
                "registered), lists the account's models, checks the registered model as the "
                "platform will call it, measures the capacity for a class, and records a "
                "summary. The executed notebook is the onboarding record that provider support "
                "keeps."
            )
            + "\n\n"
            + _(
                "**What you need.** `LMREG_BASE_URL`, `LMREG_APP_ID`, `LMREG_APP_SECRET`, "
                "`LMREG_MODEL_URL`, `LMREG_MODEL_API_KEY` and `LMREG_MODEL_NAME` in the "
                "environment or `.env`. Run it top to bottom and fill in each form, or "
                "headless: `lmreg-nb onboard -p school ... -p model_name ...`. A step that "
                "fails is shown and recorded; the summary at the end is always written."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup()),
        params(
            (
                'school: str = ""',
                _('the school, e.g. "Example Middle School"; all empty: use the forms'),
            ),
            ('contact_name: str = ""', _("who gets monitoring alerts about the model")),
            ('contact_mobile: str = ""', _("mainland China mobile number, e.g. 13812345678")),
            ('contact_email: str = ""', _("e.g. ai-ops@school.edu.cn")),
            ('model_name: str = ""', _("modelName to register, or to update when it exists")),
            ('registry_url: str = ""', _("the chat endpoint; empty: LMREG_MODEL_URL")),
            ("check_requests: int = 20", _("requests of the load test; 0 skips it")),
            (
                "check_concurrency: int = 4",
                _("requests in flight at once; 0 skips the load test"),
            ),
            (
                f"chat_prompt: str = {_literal(prompt)}",
                _("sent once, with the checks; reply shown"),
            ),
            (
                "class_size: int = 40",
                _("students of one class chatting at once; 0 skips the capacity test"),
            ),
            (
                "context_need: int = 8000",
                _("tokens of the longest prompt the course apps send (a long lesson)"),
            ),
            (
                "lesson_tokens: int = 1500",
                _("tokens of the lesson the class shares in the load test and capacity test"),
            ),
            (
                "max_tokens: int = 300",
                _("tokens of each reply the load test and capacity test ask for"),
            ),
            ('lang: str = ""', _("zh-CN or en; empty: LMREG_LANG or the locale")),
        ),
        md(_("## Configuration")),
        code("ob.configuration()"),
        md(
            _("## 1. Contact card")
            + "\n\n"
            + _(
                "The platform sends monitoring alerts about your model to this contact (spec "
                "section 1, phase 2). An invalid card stops the onboarding here, before "
                "anything is registered: fix the parameter the error names."
            )
        ),
        code(
            "run = ob.Onboarding.begin(school, contact_name, contact_mobile, contact_email,\n"
            "                          class_size=class_size, context_need=context_need,\n"
            "                          lesson_tokens=lesson_tokens, max_tokens=max_tokens,\n"
            "                          lang=lang)\n"
            "run.contact_card() if run.headless else ui.ContactForm(run)"
        ),
        md(
            _("## 2. Token")
            + "\n\n"
            + _(
                "**When it fails:** `wrong appId or appSecret`: check them with the provider; "
                "`could not reach`: check `LMREG_BASE_URL`."
            )
        ),
        code("run.connect() if run.headless else ui.CredentialsForm(run)"),
        md(
            _("## 3. Register or update the model")
            + "\n\n"
            + _(
                "A model of the same name is updated, never duplicated, so running the "
                "onboarding again is safe."
            )
            + "\n\n"
            + _(
                "**When it fails:** the error names the field to fix (`registryUrl`, `apiKey`, "
                "`modelName`)."
            )
        ),
        code(
            "run.register(model_name, registry_url) if run.headless "
            "else ui.RegisterForm(run, update_existing=True)"
        ),
        md(_("## 4. The account's models")),
        code("run.list_models() if run.headless else ui.ModelsTable(run)"),
        md(
            _("## 5. Chat checks")
            + "\n\n"
            + _(
                "The registered model is called as the platform will call it (its registryUrl "
                "and apiKey). Rows marked required must pass; recommended rows are advice. With "
                "`check_requests` and `check_concurrency` above 0 a small load test runs and "
                "its figures are kept in the summary; with 0, the figures are those of one "
                "request. Interactive, the checks run by themselves once the model is "
                "registered."
            )
            + "\n\n"
            + _(
                "The checks also send what the course apps send: a system message (the teacher "
                "persona), a prompt of `context_need` tokens (a long lesson) and two chats at "
                "once; and they look for a reasoning model's thinking in the answer."
            )
            + "\n\n"
            + _("**When it fails:** see `05_test_chat_endpoint` for what each check means.")
        ),
        code(
            "load = check_requests if check_concurrency > 0 else 0\n"
            "run.check_endpoint(load, check_concurrency, chat_prompt=chat_prompt) "
            "if run.headless else ui.ChecksPanel(run, load, check_concurrency)"
        ),
        code("run.live(run.verdict)", CHECK),
        code("run.live(run.figure)"),
        code("run.reply() if run.headless else ui.ChatBox(run)"),
        md(
            _("## 6. Capacity for a class")
            + "\n\n"
            + _(
                "How many students can chat at once while the reply still starts within 2 "
                "seconds (for 9 in 10 replies). A capacity below the class size stands in the "
                "way of go-live."
            )
            + "\n\n"
            + _(
                "Each chat is measured as a student in a lesson: the app's instructions, a "
                "lesson of `lesson_tokens` tokens shared by the class, then three questions in "
                "a row; the reply must also stream at reading pace (under 150 ms between "
                "tokens for 9 in 10). A one-line question would hide what a long lesson costs "
                "the server."
            )
            + "\n\n"
            + _(
                "So does a capacity not measured: `class_size` 0 skips the test, and go-live "
                "then lacks the evidence that the model serves a class."
            )
        ),
        code(
            "run.capacity(class_size) if run.headless "
            "else ui.CapacityForm(run, class_size=class_size or 40)"
        ),
        code("run.capacity_figure() if run.headless and class_size else None"),
        md(
            _("## Summary")
            + "\n\n"
            + _(
                "The summary is recorded in this notebook (`lmreg_nb.read_records`) and shown "
                "at the top of the HTML copy, with two verdicts: whether every onboarding step "
                "ran and passed (`ok`, `failed` or `incomplete`), and whether the platform can "
                "go live with this model, with what stands in the way. Provider support then "
                "switches the active model in the back office (go-live)."
            )
        ),
        code("run.finish()"),
    ]


def monitor() -> list[nbformat.NotebookNode]:
    return [
        md(
            _("# Step 6: monitor the registered models")
            + "\n\n"
            + _(
                "**What it does.** After go-live, `lmreg-nb watch` calls every registered model "
                "each round as the platform does (its registryUrl and apiKey, one short streamed "
                "chat in Chinese with a small `max_tokens`) and alerts the school's contact when "
                "one fails several rounds in a row, then once more when it works again. Here you "
                "choose where alerts go, send a test alert, run one round and look at the state."
            )
            + "\n\n"
            + _(
                "**What you need.** The platform's settings (as for step 1) and, for alerts, "
                "Apprise URLs in `LMREG_NOTIFY` (comma-separated) or added in the form below: "
                "`mailtos://USER:PASSWORD@SMTP.SERVER?to=CONTACT` for e-mail, "
                "`dingtalk://TOKEN/`, `wecombot://KEY`, `feishu://TOKEN/`, `json://HOST/PATH` "
                "for a webhook. They hold secrets and are shown masked."
            )
            + "\n\n"
            + config_help()
        ),
        code(setup() + "\nfrom lmreg_nb.watch import Monitor"),
        params(
            ('school: str = ""', _("the school's name in alerts; empty: the platform's host")),
            (
                'contact_email: str = ""',
                _("the contact card's e-mail, offered as an alert target"),
            ),
            ('state_path: str = ""', _("the state file; empty: the one `lmreg-nb watch` uses")),
            ("fail_after: int = 3", _("failed rounds in a row before a model is down")),
            ("test_alert: bool = False", _("True: send a test alert to every target")),
            ("one_round: bool = True", _("True: run one round of the watch below")),
            (
                "rehearsal: bool = True",
                _("True: alerts go only to the targets given here, never to the contact"),
            ),
        ),
        md(
            _("## Alert targets")
            + "\n\n"
            + _(
                "The targets from `LMREG_NOTIFY`, masked. Add one for this session in the form "
                "(it is not saved), then **Send a test alert**: each target should receive it. "
                "**When it fails:** the line says why (a wrong password, a bot token the service "
                "refuses, a server that does not answer)."
            )
            + "\n\n"
            + _(
                "**Rehearsal** (on by default): alerts go only to the targets listed here, never "
                "to the school's contact, and the rounds are kept apart from the watch's (their "
                "own state file). Turn it off (`rehearsal = False`, or untick it in the form) to "
                "run rounds of the real watch: the contact's `contact_email` then gets the "
                "alerts too, by the sender in `LMREG_NOTIFY_MAIL`."
            )
        ),
        code(
            "monitor = Monitor(school, state_path=state_path, fail_after=fail_after,\n"
            "                  rehearsal=rehearsal, contact_email=contact_email)\n"
            "monitor.targets_table()"
        ),
        code("ui.MonitorForm(monitor, contact_email=contact_email)"),
        code("monitor.send_test_alert() if test_alert else None"),
        md(
            _("## One round")
            + "\n\n"
            + _(
                "Each registered model is called once. A model is down after `fail_after` failed "
                "rounds in a row; only then does an alert go out, and one recovery when it "
                "answers again. The round's log is shown with its result. Out of rehearsal the "
                "state is kept in the same file as the watch's, so a round here counts as one "
                "of its rounds. Models on the sandbox (a loopback address) are called only with "
                "`LMREG_ALLOW_PRIVATE=1` in the environment or in `.env`."
            )
        ),
        code("monitor.run_round() if one_round else None"),
        md(
            _(
                "A round with no alert target is marked ✘: it ran, but an alert would go "
                "nowhere. A target added by mistake: **Remove the last added** in the form, or "
                "`monitor.remove_target(N)` for the N-th added."
            )
        ),
        md(_("## State and recent latency")),
        code("monitor.state_table()"),
        code("monitor.latency_chart()"),
        md(
            _("## Run it for real")
            + "\n\n"
            + _(
                'On a server that stays on: `lmreg-nb watch --school "..." --metrics-port 9108` '
                "with `LMREG_NOTIFY` set. The README has a systemd unit and a docker-compose "
                "example. A page with the same table is written beside the state file after "
                "each round."
            )
            + "\n\n"
            + _(
                "**Provider support: every school at once.** With the batch plan the schools "
                "were onboarded from (`run_id`, `env_file`, `school`, `contact_email`, `lang`, "
                "...), one watch reads each school's models with its own account and mails each "
                "school's alerts to its own contact, in its language; your own targets get "
                "every alert (a digest when many fail at once):"
            )
            + "\n\n"
            + "```bash\n"
            + "export LMREG_NOTIFY='dingtalk://TOKEN/'\n"
            + "export LMREG_NOTIFY_MAIL='mailtos://USER:PASSWORD@SMTP.SERVER.EXAMPLE'\n"
            + "lmreg-nb watch --plan schools.csv --metrics-port 9108\n"
            + "```\n\n"
            + _(
                "`LMREG_NOTIFY_MAIL` names the sender and its SMTP server, without a recipient: "
                "the watch fills in each school's `contact_email`. A row it cannot sign in with "
                "is reported to you and never stops the others. Models registered at a loopback "
                "or private address are not called (the platform cannot reach them either); "
                "`--allow-private` calls them for a rehearsal on the sandbox."
            )
        ),
    ]


#: stem -> the function making its cells (called after the language is chosen).
CELLS: dict[str, Callable[[], list[nbformat.NotebookNode]]] = {
    "01_get_token": get_token,
    "02_register_model": register_model,
    "03_modify_model": modify_model,
    "04_list_models": list_models,
    "05_test_chat_endpoint": chat_endpoint,
    "06_monitor": monitor,
    "onboarding": onboarding,
}
