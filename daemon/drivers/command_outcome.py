"""What became of a command sent to a device, said truthfully.

A command whose answer was lost may well have run: `lock_gate` sent while the
device-to-host direction was dead locked the gate, and the service reported
`device_command_failed "lock_gate to shoe failed: "` (issue #24). So:

- never sent (the device was not ready) or refused (a `command_result` that is not ok):
  failed, with the reason;
- answered: done;
- sent, and its answer lost (a timeout, or the session ended while it waited): the
  device is asked its state (`status`, the protocol's only state query) before anything
  is called failed, and what it says decides:

  - a command that sets the table's state (the gate, the arm: idempotent, from the
    table's ``device_ready``) is sent again as the state the table wants now when the
    device answers; its answer is the truth. A device that does not answer is sent that
    state anyway when it reconnects;
  - a command whose work the device shows by events (``SHOWN_BY``: start_shuffle by
    shuffle_started or shuffle_complete) waits, if status went unanswered too, until the
    device is back (``RECOVER_S``) and asks again. Every event the device sent before its
    `status_reply` has arrived by then (in order; version 3 re-sends what a session
    lost), so: one of them shows it carried it out: done; none, and the device is
    ready (idle): it never took it, and it is sent again, exactly once, under its own
    command number, which a device that did take it answers without acting twice
    (issue 24: a start_shuffle dropped with its session was never made, and the table
    waited for a shuffle forever); busy or faulted: outcome unknown, not sent again;
  - any other command: outcome unknown, never sent again.

Every reason names the exception and what was waited for; none is ever empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from daemon.drivers.device import AnswerTimeoutError, DeviceDriver, DeviceNotReadyError, Watch
from firmware_protocols.common import (
    CommandResult,
    CommandResultCode,
    DeviceState,
    Status,
    StatusReply,
)
from firmware_protocols.wire import Message

RECOVER_S = 300.0  # how long a device is waited for, to learn what became of a command
RETRY_S = 0.5  # between status queries while the device comes and goes


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
                  restate: Callable[[], list[Message]],
                  meanwhile: Callable[[str], None] = lambda _: None,
                  owed: Callable[[], bool] = lambda: True) -> Outcome:
    """Send ``message`` and find out what became of it. ``restate``: the device's state as
    the table wants it now (idempotent commands), sent again when an answer was lost.
    ``meanwhile``: told, once, while the device is waited for (the alert of an outcome
    still unknown, and what will be done). ``owed``: False once the table took an event
    that shows the command carried out (pending.py: the journal's word, across
    restarts)."""
    name = message.NAME
    with driver.watching(message.SHOWN_BY) as watch:
        try:
            answer = await driver.command(message)
        except DeviceNotReadyError as exc:
            if not exc.sent:
                return Outcome(Verdict.NOT_SENT, f"{name} to {driver.name} not sent: "
                                                 f"{reason(exc)}")
            lost, number = reason(exc), exc.number
        except TimeoutError as exc:
            lost = reason(exc)
            number = exc.number if isinstance(exc, AnswerTimeoutError) else 0
        else:
            return _answered(driver.name, message, answer)
        head = f"{name} to {driver.name}: outcome unknown: its answer was lost ({lost})"
        if message.SHOWN_BY and number:
            return await _ask_again(driver, message, number, watch, head, meanwhile, owed)
        return await _restate(driver, message, restate, head, lost)


async def _status(driver: DeviceDriver) -> StatusReply | str:
    """The device's state, or why it did not say."""
    try:
        reply = await driver.command(Status(0))
    except (DeviceNotReadyError, TimeoutError) as exc:
        return reason(exc)
    if not isinstance(reply, StatusReply):
        return f"{reply.NAME} in answer to status"
    return reply


async def _when_back(driver: DeviceDriver) -> StatusReply | str:
    """The device's state once it is back and answers, within ``RECOVER_S``."""
    loop = asyncio.get_running_loop()
    deadline, why = loop.time() + RECOVER_S, f"not back within {RECOVER_S:g} s"
    while (left := deadline - loop.time()) > 0:
        try:
            await driver.wait_ready(left)
        except TimeoutError:
            break
        got = await _status(driver)
        if isinstance(got, StatusReply):
            return got
        why = got
        await asyncio.sleep(RETRY_S)
    return why


def _state_name(state: int) -> str:
    try:
        return DeviceState(state).name.lower()
    except ValueError:
        return f"state {state}"


async def recover(driver: DeviceDriver, message: Message, owed: Callable[[], bool],
                  meanwhile: Callable[[str], None]) -> Outcome:
    """A command this process did not send (a restart found it owed, pending.py): the
    device, once back, is asked its state, and sent it again if it never took it. Not
    under its old number (another process's ORIGIN): the decision rests on what the device
    showed, as the journal kept it."""
    head = (f"{message.NAME} to {driver.name}: outcome unknown: the daemon restarted before "
            f"the {driver.name} showed it carried it out")
    with driver.watching(message.SHOWN_BY) as watch:
        return await _ask_again(driver, message, None, watch, head, meanwhile, owed)


async def _ask_again(driver: DeviceDriver, message: Message, number: int | None,
                     watch: Watch, head: str, meanwhile: Callable[[str], None],
                     owed: Callable[[], bool]) -> Outcome:
    """A command whose work shows in the device's events: asked its state, the device
    tells whether it took it; one that never did is sent again, once, as the same command
    (its number, when this process sent it)."""
    device, name = driver.name, message.NAME
    status = await _status(driver)
    if isinstance(status, str):
        meanwhile(f"{head}, and the {device} did not answer status either ({status}); it "
                  f"is asked its state when it is back, and {name} is sent again, once, "
                  f"if the {device} shows it never took it")
        status = await _when_back(driver)
        if isinstance(status, str):
            return Outcome(Verdict.UNKNOWN, f"{head}; the {device} did not answer status "
                                            f"({status}): {name} is not sent again")
    shown = " or ".join(k.NAME for k in message.SHOWN_BY)
    if watch.seen or not owed():
        what = watch.seen[0].NAME if watch.seen else shown
        return Outcome(Verdict.DONE, f"{head}; the {device} answered status after "
                                     f"{what}: it carried {name} out")
    if status.state != DeviceState.READY:
        return Outcome(Verdict.UNKNOWN, f"{head}; the {device} answers status "
                                        f"{_state_name(status.state)} ({status.detail}), "
                                        f"and sent no {shown}: {name} is not sent again")
    outcome = await _again(driver, message, number, (
        f"{head}; the {device} showed it never took it (ready, no {shown}), and {name} "
        f"sent again {_as(number)}, not to be sent again, lost its answer too"))
    if outcome.verdict is not Verdict.DONE:
        return outcome
    return Outcome(Verdict.DONE, f"{head}; the {device} "
                                 f"showed it never took it (ready, no {shown}): sent again "
                                 f"{_as(number)}, and accepted")


async def _again(driver: DeviceDriver, message: Message, number: int | None,
                 lost_too: str) -> Outcome:
    """``message`` sent again: the device's answer judged, or UNKNOWN when that answer
    is lost as well (``lost_too``, and why)."""
    try:
        answer = await driver.command(message, number=number)
    except (DeviceNotReadyError, TimeoutError) as exc:
        return Outcome(Verdict.UNKNOWN, f"{lost_too} ({reason(exc)})")
    return _answered(driver.name, message, answer)


def _as(number: int | None) -> str:
    return f"as command {number}" if number else "as a new command"


async def _restate(driver: DeviceDriver, message: Message,
                   restate: Callable[[], list[Message]], head: str, lost: str) -> Outcome:
    """A command of the table's state (or one nothing shows): the state sent again."""
    device, name = driver.name, message.NAME
    restated = any(type(m) is type(message) for m in restate())  # of its kind, at all
    try:
        await driver.command(Status(0))
    except (DeviceNotReadyError, TimeoutError) as exc:
        # Only the table's state (the gate, the arm) is sent again on reconnect; anything
        # else is not, and the alert must not say it is (issue 24).
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
        outcome = await _again(driver, again, None, (
            f"{head}; {again.NAME} sent again as the state the table wants, and that "
            "answer was lost too"))
        if outcome.verdict is not Verdict.DONE:
            return outcome
    return Outcome(Verdict.DONE, f"{name} to {device}: its answer was lost ({lost}); the "
                                 f"{device} answered status, and accepted the state the "
                                 f"table wants sent again")
