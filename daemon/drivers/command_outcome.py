"""What became of a command sent to a device, said truthfully.

A command whose answer was lost may well have run: `lock_gate` sent while the
device-to-host direction was dead locked the gate, and the service reported
`device_command_failed "lock_gate to shoe failed: "` (issue #24). So:

- never sent (the device was not ready) or refused (a `command_result` that is not ok):
  failed, with the reason;
- answered: done;
- sent, and its answer lost (a timeout, or the session ended while it waited): the
  device is asked its state (`status`, the protocol's only state query). If it answers,
  the line works again, and the state the table wants now is sent again when that
  state is what the lost command set (the gate, the arm: idempotent, from the table's
  ``device_ready``); its answer is the truth. Otherwise, and for any other command,
  the outcome is unknown: `status_reply` carries no gate or arm, so it cannot say
  whether the command ran. A device that reconnects is sent that state anyway; any
  other command (start_shuffle) is not sent again, and its alert says so (issue 24: it
  promised a re-send that never came, and the shuffle asked for was never made).

Every reason names the exception and what was waited for; none is ever empty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from daemon.drivers.device import DeviceDriver, DeviceNotReadyError
from firmware_protocols.common import CommandResult, CommandResultCode, Status
from firmware_protocols.wire import Message


class Verdict(StrEnum):
    DONE = "done"
    NOT_SENT = "not_sent"
    REFUSED = "refused"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    detail: str  # why; for DONE, what happened on the way (empty if nothing)


def reason(exc: BaseException) -> str:
    """An exception as a reason: its type, and its text when it has one."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _answered(device: str, message: Message, answer: Message) -> Outcome:
    if isinstance(answer, CommandResult) and answer.result != 0:
        try:
            code = CommandResultCode(answer.result).name.lower()
        except ValueError:
            code = "unknown result"
        why = f": {answer.detail}" if answer.detail else ""
        return Outcome(Verdict.REFUSED, f"{device} refused {message.NAME}: result "
                                        f"{answer.result} ({code}){why}")
    return Outcome(Verdict.DONE, "")


async def deliver(driver: DeviceDriver, message: Message,
                  restate: Callable[[], list[Message]]) -> Outcome:
    """Send ``message`` and find out what became of it. ``restate``: the device's state as
    the table wants it now (idempotent commands), sent again when an answer was lost."""
    device, name = driver.name, message.NAME
    try:
        answer = await driver.command(message)
    except DeviceNotReadyError as exc:
        if not exc.sent:
            return Outcome(Verdict.NOT_SENT, f"{name} to {device} not sent: {reason(exc)}")
        lost = reason(exc)
    except TimeoutError as exc:
        lost = reason(exc)
    else:
        return _answered(device, message, answer)
    head = f"{name} to {device}: outcome unknown: its answer was lost ({lost})"
    restated = any(type(m) is type(message) for m in restate())  # of its kind, at all
    try:
        await driver.command(Status(0))
    except (DeviceNotReadyError, TimeoutError) as exc:
        # Only the table's state (the gate, the arm) is sent again on reconnect; anything
        # else (start_shuffle) is not, and the alert must not say it is (issue 24).
        then = (f"the state the table wants is sent again when the {device} is back"
                if restated else f"{name} is not sent again: whether the {device} carried it "
                             f"out shows only in what it reports next")
        return Outcome(Verdict.UNKNOWN, f"{head}, and the {device} did not answer status "
                                        f"either ({reason(exc)}); {then}")
    same = [m for m in restate() if type(m) is type(message)]
    if not same:
        return Outcome(Verdict.UNKNOWN, f"{head}; the {device} answers status again, which "
                                        f"does not say whether {name} was carried out")
    outcome = Outcome(Verdict.DONE, "")
    for again in same:
        try:
            answer = await driver.command(again)
        except (DeviceNotReadyError, TimeoutError) as exc:
            return Outcome(Verdict.UNKNOWN, f"{head}; {again.NAME} sent again as the state "
                                            f"the table wants, and that answer was lost "
                                            f"too ({reason(exc)})")
        outcome = _answered(device, again, answer)
        if outcome.verdict is not Verdict.DONE:
            return outcome
    return Outcome(Verdict.DONE, f"{name} to {device}: its answer was lost ({lost}); the "
                                 f"{device} answered status, and accepted the state the "
                                 f"table wants sent again")
