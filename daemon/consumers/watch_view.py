"""`tabled watch`: a live terminal view of one or more tables, drawn with rich.

It subscribes to ``{prefix}/{table}/#`` (or every table under the prefix), verifies each
payload with the trusted keys before it changes anything (daemon/consumers/watch.py), and redraws:
per table its status, devices, the round under way card by card or die by die, recent
results (corrections applied), alerts, and duplicates and gaps by (journal_id, msg_seq).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field

import aiomqtt
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from daemon.consumers.watch import TableState, Watcher, result_header, result_line
from daemon.security.signing import Keyring

DEVICE_STYLE = {"ready": "green", "connecting": "yellow", "handshaking": "yellow",
                "lost": "bold red", "incompatible": "bold red"}


@dataclass(frozen=True)
class WatchBroker:
    host: str
    port: int
    tls: ssl.SSLContext | None = None
    username: str | None = None
    password: str | None = None


@dataclass
class WatchState:
    broker: WatchBroker
    watcher: Watcher
    tables: tuple[str, ...]
    connection: str = "connecting"
    received: int = 0
    kids: tuple[str, ...] = field(default_factory=tuple)


def _devices(t: TableState) -> Text:
    text = Text()
    for name, d in sorted(t.devices.items()):
        state = str(d.get("state", "?"))
        text.append(f"{name} ", style="bold")
        text.append(state, style=DEVICE_STYLE.get(state, ""))
        facts = [f"serial {d['serial']}" if d.get("serial") else "",
                 f"fw {d['firmware']}" if d.get("firmware") else "",
                 f"fault {d['fault']}" if d.get("fault") else "",
                 str(d.get("detail") or "")]
        shown = ", ".join(f for f in facts if f)
        text.append(f" ({shown})   " if shown else "   ")
    return text or Text("no device reports yet", style="dim")


def _table_panel(t: TableState) -> Panel:
    s = t.status or {}
    online = s.get("state") == "online"
    title = Text(f"table {t.table}", style="bold")
    if s:
        title.append(f"  {s.get('game', '?')} layout {s.get('layout', '?')}  ")
        title.append(str(s.get("state")), style="green" if online else "bold red")
        title.append(f" (session {s.get('session')}, v{s.get('version')})")
    body: list[RenderableType] = [_devices(t), Text(t.live_line(), style="bold cyan")]
    shown = t.shown_results()
    dice = any("dice" in r for r in shown)
    grid = Table.grid(padding=0)
    grid.add_row(Text(result_header(dice), style="dim"))
    for r in shown[-8:]:
        grid.add_row(Text(result_line(r), style="red" if r.get("status") == "void" or
                          r.get("type") == "correction" else ""))
    body.append(grid)
    for a in list(t.alerts)[-3:]:
        body.append(Text(f"ALERT {a.get('code')} clause {a.get('clause') or '-'}: "
                         f"{a.get('detail', '')}", style="bold red"))
    body.append(Text(t.numbers_line(), style="yellow" if t.missing() else "dim"))
    waiting = bool((s.get("backlog") or {}).get("messages"))
    body.append(Text(t.backlog_line(), style="yellow" if waiting else "dim"))
    return Panel(Group(*body), title=title, title_align="left")


def render(w: WatchState) -> RenderableType:
    head = Text(f"tabled watch  {w.broker.host}:{w.broker.port}  ", style="bold")
    head.append(w.connection, style="green" if w.connection == "connected" else "bold red")
    head.append(f"  {w.received} messages; verified with key(s) {', '.join(w.kids)}")
    parts: list[RenderableType] = [head]
    if w.watcher.rejected:
        parts.append(Text(f"{w.watcher.rejected} payloads REJECTED (not shown); last: "
                          f"{w.watcher.last_rejection}", style="bold red"))
    names = list(w.tables) or sorted(w.watcher.tables)
    for name in names:
        t = w.watcher.tables.get(name)
        parts.append(_table_panel(t) if t else Text(f"table {name}: nothing verified yet",
                                                    style="dim"))
    if not names:
        parts.append(Text("no table has published yet", style="dim"))
    return Group(*parts)


async def watch(broker: WatchBroker, keyring: Keyring, tables: tuple[str, ...],
                prefix: str, console: Console | None = None) -> None:
    """Runs until cancelled; reconnects after a broker outage."""
    w = WatchState(broker, Watcher(keyring, prefix), tables, kids=tuple(keyring.keys))
    topics = [f"{prefix}/{t}/#" for t in tables] or [f"{prefix}/#"]
    with Live(render(w), console=console or Console(), auto_refresh=False,
              redirect_stderr=False) as live:
        while True:
            try:
                async with aiomqtt.Client(broker.host, broker.port, tls_context=broker.tls,
                                          username=broker.username, password=broker.password
                                          ) as client:
                    for topic in topics:
                        await client.subscribe(topic, qos=1)
                    w.connection = "connected"
                    live.update(render(w), refresh=True)
                    async for m in client.messages:
                        raw = m.payload if isinstance(m.payload, bytes) else \
                            str(m.payload).encode()
                        w.received += 1
                        w.watcher.feed(str(m.topic), raw)
                        live.update(render(w), refresh=True)
            except aiomqtt.MqttError as exc:
                w.connection = f"disconnected: {exc}; retrying"
                live.update(render(w), refresh=True)
                await asyncio.sleep(1.0)
