"""A checkpoint: a table's folded state as the body of one journal record, so that a
restart folds from the latest checkpoint instead of from the journal's first record,
and retention may prune the records before it (daemon/store/journal.py,
``prune_records``). It is folded like any record (``RoundLifecycle._fold_checkpoint``):
one interpreter of the journal still.

What is captured is found, not listed: every attribute of the table (and, inside plain
objects such as the dice watch, of those) whose value differs from a table freshly made
with the same config, so that no state a table folds can be forgotten here. What the
config gives (the game, the layout, the decks, the dice watch's settings) is equal in
both and so not captured: a restart with another config applies its own, as a fold of
every record would. Callables (the state machine's triggers, the clock) are not state.

A checkpoint is written only if it proves itself: a fresh table restored from it must
equal the live table in every attribute (``exact``). A class of state this module
cannot encode makes it refuse (``CheckpointError``), and then nothing is pruned.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from enum import Enum
from typing import Any

from transitions import Machine

from daemon.errors import TabledError
from daemon.games.model import GameRules

KIND = "checkpoint"
FORMAT = 2


def upcast_v1_v2(b: dict[str, Any]) -> dict[str, Any]:
    """Format 2: a round holds its holds' ids (issue 23). A round written in format 1 has
    answered no hold by id: no hold id, no hold counted."""
    def step(v: Any) -> Any:
        if isinstance(v, list):
            return [step(x) for x in v]
        if not isinstance(v, dict):
            return v
        out = {k: step(x) for k, x in v.items()}
        if out.get("$obj") == "daemon.round.lifecycle:RoundData":
            out["f"] = {"hold_id": None, "holds": 0, **out["f"]}
        return out

    return {**b, "format": 2, "vars": step(b["vars"])}


# One step from each format to the next (eventsourcing's upcasters): a checkpoint of an
# earlier format is brought to this one before it is folded.
STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: upcast_v1_v2}
READS = (*sorted(STEPS), FORMAT)
# Only classes of the daemon's own state are rebuilt from a checkpoint.
MODULES = ("daemon.", "firmware_protocols.")


class CheckpointError(TabledError, ValueError):
    """The table holds state a checkpoint cannot carry exactly: none is written."""


def _state_attrs(obj: object) -> dict[str, Any]:
    # TRANSIENT: what a table keeps in memory only, by design, and a restart forgets (the
    # chunks of a reveal are not journalled): neither captured nor compared.
    transient: frozenset[str] = getattr(type(obj), "TRANSIENT", frozenset())
    return {k: v for k, v in vars(obj).items()
            if not callable(v) and not isinstance(v, Machine) and k != "state"
            and k not in transient}


def _plain(v: object) -> bool:
    """An object whose attributes are diffed one by one (the table, the dice watch)."""
    return hasattr(v, "__dict__") and not dataclasses.is_dataclass(v) and \
        not isinstance(v, GameRules | Enum | type) and type(v).__module__.startswith(MODULES)


def capture(live: object, fresh: object) -> dict[str, Any]:
    """The attributes of ``live`` that differ from ``fresh`` (same class, same config)."""
    out: dict[str, Any] = {}
    base = _state_attrs(fresh)
    for name, value in _state_attrs(live).items():
        before = base.get(name, _MISSING)
        if _plain(value) and type(before) is type(value):
            diff = capture(value, before)
            if diff:
                out[name] = {"$diff": diff}
        elif before is _MISSING or encode(value) != encode(before):
            out[name] = encode(value)
    return out


def restore(target: object, captured: dict[str, Any], game: GameRules[Any]) -> None:
    for name, value in captured.items():
        if isinstance(value, dict) and "$diff" in value:
            restore(getattr(target, name), value["$diff"], game)
        else:
            setattr(target, name, decode(value, game))


def body(live: Any, fresh: Any) -> dict[str, Any]:
    """The checkpoint record's body for ``live`` (a RoundLifecycle)."""
    return {"format": FORMAT, "state": live.state, "vars": capture(live, fresh)}


def make(live: Any, new_table: Callable[[], Any]) -> dict[str, Any]:
    """A checkpoint of ``live`` that has proved itself: stored as JSON, and folded into a
    fresh table, it gives ``live`` again exactly; else CheckpointError."""
    b = body(live, new_table())
    stored = json.loads(json.dumps(b, separators=(",", ":"), sort_keys=True))
    restored = new_table()
    apply(restored, stored)
    if not exact(live, restored):
        raise CheckpointError("a table restored from the checkpoint differs from the live "
                              "table; none written, so no record is pruned")
    return b


def apply(target: Any, b: dict[str, Any]) -> None:
    """Fold a checkpoint record into ``target`` (a RoundLifecycle)."""
    if b.get("format") not in READS:
        raise CheckpointError(f"checkpoint format {b.get('format')!r}; this release reads "
                              f"formats {', '.join(map(str, READS))}")
    while b["format"] < FORMAT:
        b = STEPS[b["format"]](b)
    restore(target, b["vars"], target.game)
    target.machine.set_state(b["state"])


def exact(live: Any, restored: Any) -> bool:
    """Every attribute of ``restored`` (config and state, recursively) equals ``live``'s."""
    return bool(live.state == restored.state and _everything(live) == _everything(restored))


def _everything(obj: object) -> Any:
    return {k: (_everything(v) if _plain(v) else encode(v))
            for k, v in _state_attrs(obj).items()}


_MISSING = object()


def encode(v: Any) -> Any:
    """JSON for a value of the table's state; tagged where JSON has no type of its own."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, Enum):
        return {"$enum": _name(type(v)), "v": encode(v.value)}
    if isinstance(v, GameRules):
        return {"$game": v.id}
    if isinstance(v, bytes):
        return {"$bytes": v.hex()}
    if isinstance(v, Counter):
        return {"$counter": [[encode(k), n] for k, n in v.items()]}
    if isinstance(v, OrderedDict):
        return {"$odict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, dict):
        return {"$dict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, deque):
        return {"$deque": [encode(x) for x in v], "maxlen": v.maxlen}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, set | frozenset):
        return {"$set": sorted((encode(x) for x in v), key=repr),
                "frozen": isinstance(v, frozenset)}
    if type(v).__module__.startswith(MODULES) and (dataclasses.is_dataclass(v)
                                                   or hasattr(v, "__dict__")):
        fields = ({f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
                  if dataclasses.is_dataclass(v) else _state_attrs(v))
        return {"$obj": _name(type(v)), "f": {k: encode(x) for k, x in fields.items()}}
    raise CheckpointError(f"cannot checkpoint a {type(v).__module__}.{type(v).__qualname__}")


def decode(v: Any, game: GameRules[Any]) -> Any:
    if not isinstance(v, dict | list):
        return v
    if isinstance(v, list):
        return [decode(x, game) for x in v]
    tag = next(iter(v), "")
    d: dict[str, Callable[[], Any]] = {
        "$enum": lambda: _class(v["$enum"])(decode(v["v"], game)),
        "$game": lambda: _game(v["$game"], game),
        "$bytes": lambda: bytes.fromhex(v["$bytes"]),
        "$counter": lambda: Counter({decode(k, game): n for k, n in v["$counter"]}),
        "$odict": lambda: OrderedDict((decode(k, game), decode(x, game))
                                      for k, x in v["$odict"]),
        "$dict": lambda: {decode(k, game): decode(x, game) for k, x in v["$dict"]},
        "$deque": lambda: deque((decode(x, game) for x in v["$deque"]), v["maxlen"]),
        "$tuple": lambda: tuple(decode(x, game) for x in v["$tuple"]),
        "$set": lambda: (frozenset if v["frozen"] else set)(decode(x, game)
                                                             for x in v["$set"]),
        "$obj": lambda: _object(v["$obj"], {k: decode(x, game) for k, x in v["f"].items()}),
    }
    if tag not in d:
        raise CheckpointError(f"not a checkpoint value: {str(v)[:80]}")
    return d[tag]()


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class(name: str) -> Any:
    module, _, qual = name.partition(":")
    if not module.startswith(MODULES):
        raise CheckpointError(f"a checkpoint names {name}, not a class of the daemon's state")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _object(name: str, fields: dict[str, Any]) -> Any:
    cls = _class(name)
    obj = cls.__new__(cls)
    if dataclasses.is_dataclass(cls):  # a field added since the checkpoint: its default
        for f in dataclasses.fields(cls):
            if f.name not in fields and f.default is not dataclasses.MISSING:
                object.__setattr__(obj, f.name, f.default)
            elif f.name not in fields and f.default_factory is not dataclasses.MISSING:
                object.__setattr__(obj, f.name, f.default_factory())
    for k, x in fields.items():
        object.__setattr__(obj, k, x)  # frozen dataclasses too
    return obj


def _game(game_id: str, game: GameRules[Any]) -> GameRules[Any]:
    if game_id != game.id:
        raise CheckpointError(f"a checkpoint of game {game_id} cannot restore a {game.id} "
                              "table")
    return game
