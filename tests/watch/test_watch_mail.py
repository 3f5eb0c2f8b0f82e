"""The schools' mail: one digest per contact a round, sent concurrently, failures told (issue 41,
42). In-process: a notifier that records (and sleeps like a slow SMTP server)."""

from __future__ import annotations

from typing import Any

import pytest
from watch_fakes import KEY, model

from lmreg_nb.watch.service import recipients


def test_a_contact_gets_one_mail_for_five_alerts_of_one_round(make_fleet: Any) -> None:
    models = [model(f"m{i}", f"qwen-{i}", "a", "down") for i in range(5)]
    fleet = make_fleet({"a": ("School A", models, "li@a.example")})
    report = fleet.round()
    assert len([e for e in report.events if e.type == "alert"]) == 5
    (mail,) = fleet.notifier.to("li@a.example")
    assert mail.title == "[School A] 5 models changed state"
    assert all(f"qwen-{i}" in mail.body for i in range(5))


def test_a_mass_outage_mails_every_contact_at_once_not_one_after_another(
    make_fleet: Any,
) -> None:
    delay, schools = 0.15, 48
    fleet = make_fleet(
        {f"s{i:02d}": (f"School {i:02d}", [model("m", "qwen", f"s{i}", "down")],
                       f"ai{i}@school{i}.example") for i in range(schools)},
        delay=delay,
    )  # fmt: skip
    fleet.round()
    mails = [t for t, _id, shown, _m in fleet.notifier.sent if shown.startswith("ai")]
    assert len(mails) == schools
    spread = max(mails) - min(mails)
    # One after another: 48 x 0.15 s = 7.2 s. At once within the bound: a few 0.15 s steps.
    assert spread < schools * delay / 3, spread


def test_a_contact_whose_mail_keeps_failing_is_told_to_the_provider(make_fleet: Any) -> None:
    fleet = make_fleet({"a": ("School A", [model("m", "qwen", "a", "down")], "li@a.example")})
    (unit,) = fleet.watcher.units
    assert unit.mail is not None
    fleet.notifier.fail[unit.mail.id] = "the mail server refused the recipient (550 no such user)"
    for _ in range(4):
        fleet.round()
    told = [m for m in fleet.notifier.to(fleet.watcher.targets[0].shown)
            if "cannot be mailed" in m.title]  # fmt: skip
    assert len(told) == 1, [m.title for _t, _i, _s, m in fleet.notifier.sent]
    assert told[0].title == "[School A] alerts cannot be mailed to the contact li@a.example"
    assert "550 no such user" in told[0].body


def test_the_start_line_says_who_gets_mail(make_fleet: Any) -> None:
    fleet = make_fleet({k: (f"School {k}", [], f"{k}@{k}.example") for k in ("a", "b", "c", "d")})
    said = recipients(fleet.watcher)
    assert said.startswith("alerts go to the contacts of 4 schools and 1 provider target (json://")
    alone = make_fleet({"a": ("School a", [], "a@a.example")}, provider=False)
    assert recipients(alone.watcher) == "alerts go to the contacts of 1 school; no provider target"


def test_a_contact_is_mailed_at_exactly_the_address_checked() -> None:
    from watch_fakes import MAIL

    from lmreg_nb.errors import ConfigurationError
    from lmreg_nb.validate import check_email
    from lmreg_nb.watch.fleet import mail_target, parse_mail

    sender = parse_mail(MAIL)
    address = check_email("o'brien+x@school-g.cn")
    target = mail_target(sender, address)
    assert target.shown == "o'brien+x@school-g.cn" and "%40" not in target.shown
    import apprise

    plugin = apprise.Apprise.instantiate(target.url.reveal())
    assert [a for _n, a in plugin.targets] == ["o'brien+x@school-g.cn"]
    with pytest.raises(ConfigurationError, match="cannot be mailed as it is"):
        mail_target(sender, "two@a.example, three@b.example")


def test_known_secrets_are_masked_inside_model_names_everywhere(make_fleet: Any) -> None:
    secret = "app-secret-Z9q8W7e6Lk"
    fleet = make_fleet(
        {"a": ("School A", [model("m1", f"qwen-{KEY}", "a", "down"),
                            model("m2", f"x-{secret}", "a", "down")], "li@a.example")},
        secrets={"a": secret},
    )  # fmt: skip
    from lmreg_nb.watch.metrics import WatchMetrics

    metrics = WatchMetrics()
    fleet.watcher.metrics = metrics
    report = fleet.round()
    written = [
        "\n".join(s.model_name for s in report.states),
        "\n".join(m.title + m.body for _t, _i, _s, m in fleet.notifier.sent),
        metrics.text(),
        fleet.watcher.config.status_path.read_text(encoding="utf-8"),
        repr(fleet.watcher.store.models()),
    ]
    for text in written:
        assert KEY not in text and secret not in text
        assert KEY[-12:] not in text and secret[-12:] not in text


def test_addresses_are_shown_decoded_and_secrets_masked() -> None:
    from lmreg_nb.watch.notify import parse_targets

    (target,) = parse_targets(
        ["mailtos://alerts%40provider.cn:Pw-0123456789@smtp.provider.cn?to=wangfang%40a.example"]
    )
    assert (
        target.shown == "mailtos://alerts@provider.cn:…6789@smtp.provider.cn?to=wangfang@a.example"
    )
    assert "%40" not in target.shown and "Pw-0123456789" not in target.shown


def test_after_a_kill_mid_send_the_contact_gets_nothing_twice_and_the_provider_is_told(
    make_fleet: Any,
) -> None:
    from lmreg_nb.watch.messages import Message

    fleet = make_fleet({"a": ("School A", [model("m1", "qwen", "a")], "li@a.example")})
    (unit,) = fleet.watcher.units
    store = fleet.watcher.store
    alert = Message("[School A] model qwen is down", "body", "failure")
    store.enqueue([(unit.mail.id, 1000, alert)])
    (row,) = store.pending(unit.mail.id)
    store.sending([row.id], 2000)  # the watch was killed here, the mail in flight
    fleet.round()
    assert fleet.notifier.to("li@a.example") == []  # never sent again
    (told,) = fleet.notifier.to(fleet.watcher.targets[0].shown)
    assert told.title.startswith("1 notification may not have arrived")
    assert "li@a.example: [School A] model qwen is down" in told.body
