"""The broker settings of a table's config ([broker], daemon/config.py checks them): in
a module of their own, so that the replay process, which needs them and little else,
does not import the whole config and its games (daemon/replay/worker.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BrokerConfig:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None
    ca_file: Path | None
    cert_file: Path | None
    key_file: Path | None
    client_id: str
    # Every node, in the order tried ([broker] urls); the first is host:port above.
    nodes: tuple[tuple[str, int], ...] = ()
    # The replay process's own broker user (daemon/replay/), where the broker gives each
    # user one connection (use_username_as_clientid); None: the table's user.
    replay_username: str | None = None
    replay_password: str | None = None

    @property
    def replay_login(self) -> tuple[str | None, str | None]:
        """The replay process's username and password."""
        if self.replay_username is None:
            return self.username, self.password
        return self.replay_username, self.replay_password


def broker_nodes(b: BrokerConfig) -> list[str]:
    """The broker URLs the daemon may connect to, in failover order (for a check of each)."""
    scheme = "mqtts" if b.tls else "mqtt"
    return [f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
            for host, port in b.nodes or ((b.host, b.port),)]
