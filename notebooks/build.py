"""Write the notebooks of this folder from the cell lists below (the source of truth).

    python notebooks/build.py                      # rewrite the six notebooks (checked
                                                   # outputs kept when their cell is unchanged)
    python notebooks/build.py --outputs-from DIR   # keep the outputs of the cells nbval checks,
                                                   # taken from executed copies in DIR

Stored notebooks carry no widget state, no papermill metadata and no outputs,
except the cells tagged ``nbval-check-output`` (nbval compares those, after
``nbval_sanitize.cfg``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
CHECK = "nbval-check-output"

SETUP = """\
import lmreg_nb.onboarding as ob
from lmreg_nb import ui

ob.notebook_setup()  # a toolkit error shows as one line: `error: ...`"""

CONFIG_HELP = """\
If a step fails, the line starting with `error:` says what to fix. Check the
configuration below first: the variables come from the environment or from a
`.env` file in the folder where Jupyter was started (see `.env.example`).
Secrets are shown masked (`…a1b2`); they are never typed into a notebook
parameter."""


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text)


def code(text: str, *tags: str) -> nbformat.NotebookNode:
    cell = new_code_cell(text)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def params(text: str) -> nbformat.NotebookNode:
    return code(text, "parameters")


NOTEBOOKS: dict[str, list[nbformat.NotebookNode]] = {
    "01_get_token": [
        md(
            "# Step 1: get a token\n\n"
            "**What it does.** Exchanges the school's `appId` and `appSecret` for a temporary "
            "token and its `env` (spec section 5). Every registration call carries both. The "
            "token is valid for 3 days and is cached, so the next notebooks reuse it.\n\n"
            "**What you need.** `LMREG_BASE_URL` (your platform's address), `LMREG_APP_ID` and "
            "`LMREG_APP_SECRET` (from the provider), in the environment or in `.env`.\n\n"
            + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run).\n"
            "exchange: bool = False  # True: get the token now from LMREG_APP_ID/LMREG_APP_SECRET, "
            "without the form"
        ),
        md("## Your configuration"),
        code("ob.configuration()", CHECK),
        md(
            "## Connect\n\n"
            "Type the appSecret into the form (or leave it empty to use `LMREG_APP_SECRET`) and "
            "click **Connect**. The field is cleared as soon as it is read.\n\n"
            "**When it fails:** `wrong appId or appSecret` means the pair is wrong: check it with "
            "the provider. `could not reach` means `LMREG_BASE_URL` is wrong or the platform is "
            "down. `must be an https:// address` means the base address needs `https://`."
        ),
        code("run = ob.Onboarding('')\nrun.connect() if exchange else ui.CredentialsForm(run)"),
        md("Next: `02_register_model` registers your model with this token."),
    ],
    "02_register_model": [
        md(
            "# Step 2: register your model\n\n"
            "**What it does.** Registers the school's model with the platform (spec 4.1): its "
            "`modelName`, the `registryUrl` the platform will call (your "
            "`.../v1/chat/completions`) and the `apiKey` the platform will send as "
            "`Authorization: Bearer`.\n\n"
            "**What you need.** A token (step 1; this notebook gets one itself when "
            "`LMREG_APP_ID`/`LMREG_APP_SECRET` are set), `LMREG_MODEL_URL` and "
            "`LMREG_MODEL_API_KEY` (or type them in the form).\n\n" + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run).\n"
            'model_name: str = ""  # the modelName to register; '
            "empty: show the form, register nothing\n"
            'registry_url: str = ""  # the chat endpoint; empty: LMREG_MODEL_URL'
        ),
        md(
            "## Register\n\n"
            "Fill in the form and click **Register**. Each field is checked as you type; a "
            "warning (plain http, a private address) does not stop you, but the platform may "
            "not reach such an address. The reserved fields are accepted and stored, not used.\n\n"
            "**When it fails:** `modelName already used` means the account has a model of that "
            "name: change it in `03_modify_model` instead. `registryUrl: ...` says what is wrong "
            "with the address. `get a new token` means the token expired: run step 1 again."
        ),
        code(
            "run = ob.Onboarding('')\n"
            "run.register(model_name, registry_url, update_existing=False) if model_name "
            "else ui.RegisterForm(run)"
        ),
        md("Next: `04_list_models` shows what is registered."),
    ],
    "03_modify_model": [
        md(
            "# Step 3: change a registered model\n\n"
            "**What it does.** Overwrites a registered model's `modelName`, `registryUrl` and "
            "`apiKey` (spec 4.2). The platform keeps `createTime` and sets a new `updateTime`.\n\n"
            "**What you need.** A token (step 1) and a model registered in step 2. The modify "
            "operation always overwrites apiKey: leave the apiKey field empty to keep the "
            "current key.\n\n" + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run).\n"
            'model_name: str = ""  # the model to change, by its current modelName; '
            "empty: show the form\n"
            'new_model_name: str = ""  # empty: keep the name\n'
            'new_registry_url: str = ""  # empty: keep the address\n'
            "api_key_from_env: bool = False  # True: send LMREG_MODEL_API_KEY as the new apiKey"
        ),
        md(
            "## Modify\n\n"
            "Choose the model, change its fields, click **Modify…**, read what will be "
            "overwritten, then click **Confirm overwrite**.\n\n"
            "**When it fails:** `no model named ...` or `modelId unknown` means the model is not "
            "in this account: list them with `04_list_models`. `modelName already used` means "
            "another of your models has that name."
        ),
        code(
            "run = ob.Onboarding('')\n"
            "run.update(model_name, new_model_name=new_model_name, "
            "new_registry_url=new_registry_url,\n"
            "           api_key_from_env=api_key_from_env) if model_name else ui.ModifyForm(run)"
        ),
    ],
    "04_list_models": [
        md(
            "# Step 4: list the registered models\n\n"
            "**What it does.** Shows every model of the account in the order they were "
            "registered (spec 4.3), apiKey masked to its last 4 characters, times in UTC. It "
            "changes nothing.\n\n"
            "**What you need.** A token (step 1).\n\n" + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run).\n"
            'name_contains: str = ""  # show only models whose modelName contains this text'
        ),
        md(
            "## The models\n\n"
            "**When it fails:** `get a new token` means the token expired (run step 1); "
            "`X-ENV` errors mean the env does not match the token: unset `LMREG_ENV`."
        ),
        code("run = ob.Onboarding('')\nrun.models_frame(name_contains)"),
        code("run.overview()", CHECK),
        md("Click **Refresh** after registering or changing a model elsewhere."),
        code("ui.ModelsTable(run, load=False)"),
    ],
    "05_test_chat_endpoint": [
        md(
            "# Step 5: test your chat endpoint\n\n"
            "**What it does.** Calls your model the way the platform will (spec 4.5: "
            "`POST .../v1/chat/completions`, `Authorization: Bearer <apiKey>`, streamed and not) "
            "and checks every answer against the convention. Optionally it runs a small load "
            "test and plots time to first token, inter-token latency and throughput. The "
            "platform is not involved: nothing is registered.\n\n"
            "**What you need.** `LMREG_MODEL_URL`, `LMREG_MODEL_API_KEY` and `LMREG_MODEL_NAME` "
            "(the `model` field your server expects).\n\n" + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run).\n"
            'model_url: str = ""  # the chat endpoint; empty: LMREG_MODEL_URL\n'
            'model: str = ""  # the body field `model`; empty: LMREG_MODEL_NAME\n'
            "check_requests: int = 0  # requests of the load test; 0 skips it\n"
            "check_concurrency: int = 1  # requests in flight at once during the load test\n"
            'prompt: str = ""  # non-empty: send this prompt and stream the reply below'
        ),
        md(
            "## Conformance\n\n"
            "Each row is one check. `error` rows must pass before go-live; `warning` rows are "
            "advice.\n\n"
            "**When it fails:** a 401 means the apiKey does not match what your server "
            "expects; a `stream` failure means your server does not send `data: ...` events "
            "ending with `data: [DONE]`; a connection error means the address is wrong or your "
            "server is down."
        ),
        code(
            "run = ob.Onboarding('')\n"
            "run.check_endpoint(check_requests, check_concurrency, "
            "model_url=model_url, model=model)"
        ),
        code("run.verdict()", CHECK),
        md("## Performance (when the load test ran)"),
        code("run.figure()"),
        md(
            "## Chat with your model\n\n"
            "The reply appears as it streams in. It is shown as plain text, never as HTML."
        ),
        code("ui.stream_reply(run, prompt) if prompt else ui.ChatBox(run)"),
        md(
            "## Capacity: how many students can chat at once\n\n"
            "Choose the class size and how long a student may wait for the reply to start, "
            "then click **Measure capacity** (a few minutes at most). The verdict says how "
            "many chats at once your model serves within that wait."
        ),
        code("ui.CapacityForm(run)"),
    ],
    "onboarding": [
        md(
            "# Onboarding: the whole integration in one notebook\n\n"
            "**What it does.** Records the school's contact for monitoring alerts, gets a "
            "token, registers the school's model (or updates it when the name is already "
            "registered), lists the account's models, checks the chat endpoint, and records a "
            "summary. The executed notebook is the onboarding record that provider support "
            "keeps.\n\n"
            "**What you need.** `LMREG_BASE_URL`, `LMREG_APP_ID`, `LMREG_APP_SECRET`, "
            "`LMREG_MODEL_URL`, `LMREG_MODEL_API_KEY` and `LMREG_MODEL_NAME` in the environment "
            "or `.env`. Run it top to bottom and fill in each form, or headless: "
            "`lmreg-nb onboard -p school ... -p model_name ...`.\n\n" + CONFIG_HELP
        ),
        code(SETUP),
        params(
            "# Parameters (papermill sets these for a headless run; all empty: use the forms).\n"
            'school: str = ""  # the school, e.g. "Example Middle School"\n'
            'contact_name: str = ""  # who gets monitoring alerts about the model\n'
            'contact_mobile: str = ""  # mainland China mobile number, e.g. 13812345678\n'
            'contact_email: str = ""  # e.g. ai-ops@school.edu.cn\n'
            'model_name: str = ""  # modelName to register, or to update when it exists\n'
            'registry_url: str = ""  # the chat endpoint; empty: LMREG_MODEL_URL\n'
            "check_requests: int = 20  # requests of the load test; 0 skips it\n"
            "check_concurrency: int = 4  # requests in flight at once; 0 skips the load test\n"
            'chat_prompt: str = "Hello! Introduce yourself in one sentence."  '
            "# sent once, reply shown"
        ),
        md("## Configuration"),
        code("ob.configuration()"),
        md(
            "## 1. Contact card\n\n"
            "The platform sends monitoring alerts about your model to this contact (spec "
            "section 1, phase 2). An invalid card stops the onboarding here, before anything "
            "is registered: fix the parameter the `error:` line names."
        ),
        code(
            "run = ob.Onboarding.begin(school, contact_name, contact_mobile, contact_email)\n"
            "run.contact_card() if run.headless else ui.ContactForm(run)"
        ),
        md(
            "## 2. Token\n\n"
            "**When it fails:** `wrong appId or appSecret`: check them with the provider; "
            "`could not reach`: check `LMREG_BASE_URL`."
        ),
        code("run.connect() if run.headless else ui.CredentialsForm(run)"),
        md(
            "## 3. Register or update the model\n\n"
            "A model of the same name is updated, never duplicated, so running the onboarding "
            "again is safe.\n\n"
            "**When it fails:** the `error:` line names the field to fix (`registryUrl`, "
            "`apiKey`, `modelName`)."
        ),
        code(
            "run.register(model_name, registry_url) if run.headless "
            "else ui.RegisterForm(run, update_existing=True)"
        ),
        md("## 4. The account's models"),
        code("run.list_models() if run.headless else ui.ModelsTable(run, load=False)"),
        md(
            "## 5. Chat checks\n\n"
            "The chat endpoint is called as the platform will call it. `error` rows must pass; "
            "`warning` rows are advice. With `check_requests` and `check_concurrency` above 0 a "
            "small load test runs and its figures are kept in the summary.\n\n"
            "**When it fails:** see `05_test_chat_endpoint` for what each check means."
        ),
        code(
            "# Interactive: the checks run here by themselves once the model is registered.\n"
            "load = check_requests if check_concurrency > 0 else 0\n"
            "run.check_endpoint(load, check_concurrency) if run.headless else ui.ChecksPanel(run)"
        ),
        code("run.verdict()", CHECK),
        code("run.figure()"),
        code(
            "ui.stream_reply(run, chat_prompt) if run.headless and chat_prompt else ui.ChatBox(run)"
        ),
        md(
            "## Summary\n\n"
            "The summary is recorded in this notebook (`lmreg_nb.read_records`) and shown at the "
            "top of the HTML copy. `status` is `ok` when every step and every required check "
            "passed; warnings do not fail it. Provider support then switches the active model "
            "in the back office (go-live)."
        ),
        code("run.finish()"),
    ],
}


def build(stem: str, outputs_from: Path | None = None) -> nbformat.NotebookNode:
    """The notebook ``stem`` with clean metadata (and checked outputs from an executed copy)."""
    nb = new_notebook(cells=[nbformat.from_dict(dict(c)) for c in NOTEBOOKS[stem]])
    nb.metadata = nbformat.from_dict(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
    )
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{stem.replace('_', '-')}-{i:02d}"
    source = outputs_from / f"{stem}.ipynb" if outputs_from else HERE / f"{stem}.ipynb"
    if source.is_file():
        executed = nbformat.read(source, as_version=4)
        for cell, done in zip(nb.cells, executed.cells, strict=False):
            # Without --outputs-from, the stored outputs of unchanged checked cells are kept.
            if CHECK in cell.metadata.get("tags", []) and done.source == cell.source:
                # nbval treats a cell with outputs and no execution count as never run.
                cell.execution_count = done.execution_count
                cell.outputs = [_clean_output(o) for o in done.outputs]
    return nb


def _sanitize(text: str) -> str:
    """Apply nbval_sanitize.cfg, so stored outputs hold placeholders, not a run's ports and ids."""
    import re

    config = (HERE / "nbval_sanitize.cfg").read_text(encoding="utf-8")
    for regex, replace in re.findall(r"^regex: (.*)$\n^replace: (.*)$", config, flags=re.MULTILINE):
        text = re.sub(regex, replace, text)
    return text


def _clean_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    output = nbformat.from_dict(dict(output))
    output.pop("metadata", None)
    if "text" in output:
        output["text"] = _sanitize(output["text"])
    for mime, value in output.get("data", {}).items():
        if isinstance(value, str) and mime.startswith("text/"):
            output["data"][mime] = _sanitize(value)
    if output.get("output_type") in ("display_data", "execute_result"):
        output["metadata"] = {}
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs-from", type=Path)
    args = parser.parse_args()
    for stem in NOTEBOOKS:
        nb = build(stem, args.outputs_from)
        nbformat.validate(nb)
        nbformat.write(nb, HERE / f"{stem}.ipynb")
        print(f"wrote {stem}.ipynb")


if __name__ == "__main__":
    main()
