"""The command desk: commands on ``{prefix}/{table}/cmd/{name}`` (docs/mqtt.md),
authenticated, judged, carried out and answered on ``replies``; and a reload of the
config (systemctl reload: SIGHUP, daemon/reload.py).

Every authenticated command is journalled with its outcome and its reply, in one
transaction; unauthenticated input is counted, and answered directly within a rate limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import ssl
from collections.abc import Mapping
from typing import Any

import structlog

from daemon import reload
from daemon.config import TableConfig
from daemon.mqtt.client import tls_context
from daemon.mqtt.publisher import Publisher
from daemon.round.effects import Alert, CommandRefusedError
from daemon.round.tai_sai import TaiSaiTable
from daemon.security.authority import ACCEPTED, REFUSED, CommandAuthority, Untrusted
from daemon.security.commands import (
    Command,
    CommandError,
    check_irregularity,
    check_round,
    parse_command,
    reply,
)
from daemon.service.effects import Effects
from daemon.service.state import ServiceState
from daemon.service.storage import StorageWatch
from daemon.store.journal import JournalError, Publish
from daemon.system.metrics import TableMetrics

log = logging.getLogger(__name__)
slog = structlog.get_logger("tabled.table")


class CommandDesk:
    def __init__(self, state: ServiceState, effects: Effects, storage: StorageWatch,
                 publisher: Publisher, metrics: TableMetrics) -> None:
        self.state = state
        self.effects = effects
        self.storage = storage
        self.publisher = publisher
        self.metrics = metrics
        cfg = state.cfg
        self.prefix = f"{state.base}/cmd/"
        self.authority = CommandAuthority(cfg.table_id, cfg.principals, cfg.command_max_age,
                                          state.clock, cfg.webauthn)
        self.untrusted = Untrusted(state.clock)

    def execute(self, name: str, payload: bytes) -> dict[str, Any]:
        """Run one command. Every authenticated command is journalled with its outcome and
        answered; unauthenticated input is counted and answered within a rate limit."""
        s = self.state
        # Authenticated first, whatever the journal's state: an id is used from here on,
        # so a command refused now (storage_failed included) can never run later, and
        # unauthenticated input takes the rate-limited path on a full disk too.
        try:
            cmd = parse_command(name, payload)
            principal = self.authority.authenticate(cmd)
        except CommandError as exc:
            return self._unauthenticated(exc)
        who = principal.name
        if s.storage_error is not None:
            return self._refused(cmd, who, self._storage_refusal(cmd))
        try:
            self.authority.permit(cmd, principal)
            check_irregularity(cmd, s.game)
            check_round(cmd, s.open_round())
        except CommandError as exc:
            return self._refused(cmd, who, exc)
        t = s.table
        actions = t.commands(who, cmd.args)
        action = actions.get(cmd.name)
        try:
            if action is None:
                raise CommandRefusedError(f"{cmd.name} does not apply to {s.game.id}")
            effects = action()
        except CommandRefusedError as exc:
            return self._refused(cmd, who, CommandError("wrong_state", str(exc), cmd.id,
                                                        cmd.name))
        else:
            # The command, what it caused and its reply: one transaction, one fsync.
            try:
                with s.journal.batch():
                    s.journal.append(ACCEPTED, {"name": cmd.name, "id": cmd.id,
                                                "by": who, "issued_at":
                                                cmd.body["issued_at"], **cmd.args,
                                                **self.authority.trail(cmd)})
                    commands = self.effects.record(effects)
                    answer = reply(cmd.id, cmd.name, ok=True, state=t.state,
                                   round_id=s.open_round())
                    s.journal.append("reply", answer, publish=(self._reply(answer),))
            except JournalError as exc:
                self.storage.failed(exc)
                # The table in memory may have moved; it is rebuilt from the journal when
                # the journal can be written again. Refused, and said so directly.
                return self._refused(cmd, who, self._storage_refusal(cmd))
            self.authority.settle(cmd.id, "accepted")
            self.metrics.accepted.labels(cmd.name).inc()
            self.effects.send(commands)
            return answer

    def _storage_refusal(self, cmd: Command) -> CommandError:
        return CommandError("storage_failed", f"the journal cannot be written "
                            f"({self.state.storage_error}); no command is carried out "
                            "until it can", cmd.id, cmd.name)

    def _refused(self, cmd: Command, who: str, exc: CommandError) -> dict[str, Any]:
        """An authenticated command that is not carried out: journalled with its reply
        (and an alert if it was denied), so its id can never be used again. While the
        journal cannot be written, its id is kept in memory (the authority) and its record
        waits for the next commit (storage.py's probe); the reply goes out directly."""
        s = self.state
        answer = reply(cmd.id, cmd.name, ok=False, state=s.table.state, error=exc,
                       round_id=s.open_round())
        self.authority.settle(cmd.id, f"refused ({exc.code})")
        self.metrics.refused.labels(exc.code).inc()
        record = {"name": cmd.name, "id": cmd.id, "by": who,
                  "issued_at": cmd.body["issued_at"], "code": exc.code, **cmd.args,
                  **self.authority.trail(cmd)}
        try:
            if s.storage_error is not None:
                raise JournalError(s.storage_error)
            with s.journal.batch():
                s.journal.append(REFUSED, record)
                s.journal.append("reply", answer, publish=(self._reply(answer),))
                if exc.code == "denied":
                    self.effects.record([Alert("command_denied", "",
                                               f"{cmd.name} ({cmd.id}): {exc}")])
        except JournalError as err:
            self.storage.failed(err)
            self.storage.refused_unjournalled.append(record)
            s.spawn(self.publisher.publish_now(s.topics["replies"], s.out_of_band(answer)))
        else:
            self.publisher.wake()
        return answer

    def _unauthenticated(self, exc: CommandError) -> dict[str, Any]:
        """Anyone on the broker can send this: a counter, not a journal row; the reply and
        the alert go out directly, each within its rate limit."""
        s = self.state
        self.untrusted.note(exc.code)
        answer = reply(exc.command_id, exc.name, ok=False, state=s.table.state, error=exc,
                       round_id=s.open_round())
        if exc.code == "denied" and s.storage_error is None:
            more = self.untrusted.alert()
            if more is not None:
                self.effects.apply([Alert("command_denied", "",
                                          f"{exc.name} ({exc.command_id}): {exc}{more}")])
                if s.storage_error is None:  # stored: the slot is taken, not before
                    self.untrusted.alerted()
        if self.untrusted.may_reply():  # not journalled, so not numbered
            s.spawn(self.publisher.publish_now(s.topics["replies"], s.out_of_band(answer)))
        return answer

    def _reply(self, answer: Mapping[str, Any]) -> Publish:
        return Publish(self.state.topics["replies"], self.state.stamp(answer))

    # -- reload (systemctl reload: SIGHUP, daemon/reload.py) -------------------------------

    def reconfigure(self, new: TableConfig, by: str = "reload") -> reload.Plan:
        """Apply what may change mid-round, all of it or none: journalled first (what
        changed and who may now command the table), then applied with no await in
        between, so no command is judged half by the old config and half by the new."""
        s = self.state
        p = reload.plan(s.cfg, new)
        if p.refused:
            return self.refuse_reload(p.refused, by)
        try:
            tls = tls_context(new.broker)  # a certificate that does not load: refused
        except (OSError, ssl.SSLError) as exc:
            return self.refuse_reload([f"broker: the TLS files do not load: {exc}"], by)
        body = {"by": by, "changed": p.changed, **reload.principal_changes(s.cfg, new),
                "principals": reload.principals_view(new)}
        try:
            s.journal.append("config_reloaded", body)
        except JournalError as exc:
            self.storage.failed(exc)
            return self.refuse_reload([f"the journal cannot be written ({exc}): nothing is "
                                       "changed that it cannot record"], by)
        self.authority.reconfigure(new.principals, new.command_max_age, new.webauthn)
        if isinstance(s.table, TaiSaiTable):
            s.table.watch = reload.rewatch(s.table.watch, new.rules.dice_watch)
        b = new.broker  # used from the next connection on
        self.publisher.broker = dataclasses.replace(
            self.publisher.broker, username=b.username, password=b.password, tls=tls)
        s.cfg = new
        slog.warning("config reloaded", **body)
        return p

    def refuse_reload(self, reasons: list[str], by: str = "reload") -> reload.Plan:
        """A reload not applied: logged as an error and journalled, with every reason."""
        log.error("reload refused, the running config is kept: %s", "; ".join(reasons))
        if self.state.storage_error is None:
            with contextlib.suppress(JournalError):  # the log says it either way
                self.state.journal.append("config_reload_refused",
                                          {"by": by, "reasons": reasons})
        return reload.Plan(reasons, [])
