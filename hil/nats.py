"""A private NATS JetStream cluster on loopback, each node with its MQTT listener: the
clustered broker that tests and bench/floor.py stop, kill and restart.

NATS serves MQTT 3.1.1 on top of JetStream (sessions, QoS 1 messages and retained
messages live in streams replicated across the cluster), so each node needs a
``server_name`` and its own JetStream store directory. Every port is a free loopback port;
the shared NATS on 4222 is never touched. Nodes are started by this module and stopped by
it (``cleanup``), also when a test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hil.errors import ToolFailedError


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports: all bound at once, so none is handed out twice."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


DEBIAN_BINARY = Path("/usr/sbin/nats-server")
# The current release, pinned with its hash in scripts/nats-server.txt and installed by
# `scripts/setup.sh dev` into the virtualenv's bin (the wheel carries the binary; nothing
# is downloaded when it runs).
PINNED_BINARY = Path(sys.prefix) / "bin" / "nats-server"
# Names the binary to run instead (the floor bench runs each it is given in turn).
BINARY_ENV = "TABLED_NATS_SERVER"


def nats_binary() -> str:
    """The nats-server to run: $TABLED_NATS_SERVER, else the pinned release in the
    virtualenv, else one on PATH, else Debian's (in /usr/sbin, which is not on an
    ordinary user's PATH)."""
    if chosen := os.environ.get(BINARY_ENV):
        if not Path(chosen).is_file():
            raise ToolFailedError(f"{BINARY_ENV}={chosen}: no such file")
        return chosen
    for binary in (PINNED_BINARY, shutil.which("nats-server"), DEBIAN_BINARY):
        if binary is not None and Path(binary).is_file():
            return str(binary)
    raise ToolFailedError("nats-server is not installed (bash scripts/setup.sh dev installs the "
                       "pinned release; Debian: apt-get install nats-server)")


def nats_binaries() -> list[str]:
    """Every distinct nats-server found ($TABLED_NATS_SERVER, the pinned release, PATH's,
    Debian's), for a run against each version."""
    found: list[str] = []
    for binary in (os.environ.get(BINARY_ENV), PINNED_BINARY, shutil.which("nats-server"),
                   DEBIAN_BINARY):
        if binary and Path(binary).is_file() and \
                Path(binary).resolve() not in {Path(f).resolve() for f in found}:
            found.append(str(binary))
    return found


def nats_version(binary: str) -> str:
    """``v2.9.10`` for Debian's, as the binary prints it."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                         check=True).stdout
    return out.strip().rsplit(" ", 1)[-1]


@dataclass
class NatsNode:
    name: str
    client_port: int
    cluster_port: int
    mqtt_port: int
    http_port: int
    store: Path
    conf: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.mqtt_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None


class NatsCluster:
    """``size`` nodes, routes between all of them, JetStream and MQTT on each;
    ``mqtt_conf`` adds settings to each node's mqtt block (``js_api_timeout: "2s"``)."""

    def __init__(self, workdir: Path, size: int = 3, name: str = "tabled",
                 extra_conf: str = "", binary: str | None = None, mqtt_conf: str = ""
                 ) -> None:
        self.binary = binary or nats_binary()
        self.version = nats_version(self.binary)
        self.workdir = workdir
        self.nodes: list[NatsNode] = []
        ports = iter(free_ports(4 * size))
        for i in range(size):
            n = f"n{i + 1}"
            self.nodes.append(NatsNode(n, next(ports), next(ports), next(ports), next(ports),
                                       workdir / f"nats-{n}", workdir / f"nats-{n}.conf",
                                       workdir / f"nats-{n}.log"))
        routes = ", ".join(f'"nats-route://127.0.0.1:{x.cluster_port}"' for x in self.nodes)
        for node in self.nodes:
            node.store.mkdir(parents=True, exist_ok=True)
            node.conf.write_text(
                f'server_name: "{node.name}"\n'
                f'listen: "127.0.0.1:{node.client_port}"\n'
                f'http: "127.0.0.1:{node.http_port}"\n'
                f'jetstream {{ store_dir: "{node.store}", max_memory_store: 256MB, '
                'max_file_store: 2GB }\n'
                # One node alone is no cluster: with a cluster block it would wait for
                # routes to a meta leader for ever.
                + (f'cluster {{ name: "{name}", listen: "127.0.0.1:{node.cluster_port}", '
                   f"routes: [{routes}] }}\n" if size > 1 else "")
                # A QoS 1 message waits this long for its PUBACK before NATS sends it again.
                + f'mqtt {{ listen: "127.0.0.1:{node.mqtt_port}", ack_wait: "10s"'
                + (f", {mqtt_conf}" if mqtt_conf else "") + " }\n"
                f"{extra_conf}", encoding="utf-8")

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    def start(self, timeout: float = 60) -> None:
        for i in range(len(self.nodes)):
            self._spawn(i)
        self.wait_healthy(timeout)

    def _spawn(self, i: int) -> None:
        node = self.nodes[i]
        with node.log.open("ab") as out:
            node.proc = subprocess.Popen([self.binary, "-c", str(node.conf)], stdout=out,
                                         stderr=subprocess.STDOUT)

    def start_node(self, i: int, timeout: float = 60) -> None:
        self._spawn(i)
        self.wait_healthy(timeout)

    def kill_node(self, i: int) -> None:
        """SIGKILL: the node vanishes mid-stream, no goodbye to clients or routes."""
        self._end(i, signal.SIGKILL)

    def stop_node(self, i: int) -> None:
        self._end(i, signal.SIGTERM)

    def _end(self, i: int, sig: signal.Signals) -> None:
        proc = self.nodes[i].proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.nodes[i].proc = None

    def running(self) -> list[NatsNode]:
        return [n for n in self.nodes if n.pid is not None]

    def wait_healthy(self, timeout: float = 60) -> None:
        """Every running node is current with the JetStream meta leader (/healthz with
        js-server-only: the full check also waits for every stream and consumer, and a
        consumer of a session that died with a killed node can stay "not current" for
        good), knows who that leader is, and accepts MQTT connections."""
        deadline = time.monotonic() + timeout
        pending = list(self.running())
        while pending:
            node = pending[0]
            assert node.proc is not None
            if node.proc.poll() is not None:
                raise ToolFailedError(f"nats-server {node.name} exited: "
                                   f"{node.log.read_text(errors='replace')[-800:]}")
            if self._healthy(node):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise ToolFailedError(f"nats-server {node.name} not healthy after {timeout}s: "
                                   f"{node.log.read_text(errors='replace')[-800:]}")
            time.sleep(0.2)

    @staticmethod
    def _healthy(node: NatsNode) -> bool:
        base = f"http://127.0.0.1:{node.http_port}"
        try:
            with urllib.request.urlopen(f"{base}/healthz?js-server-only=true", timeout=1) as r:
                if json.loads(r.read()).get("status") != "ok":
                    return False
            # NATS 2.15 answers "ok" above before its cluster has elected a meta leader
            # (2.9 did not); an MQTT client then waits 5 s for the sessions stream and is
            # refused. A clustered node is ready once it names the leader.
            with urllib.request.urlopen(f"{base}/jsz", timeout=1) as r:
                meta = json.loads(r.read()).get("meta_cluster") or {}
            if meta.get("cluster_size", 1) > 1 and not meta.get("leader"):
                return False
            with socket.create_connection(("127.0.0.1", node.mqtt_port), timeout=0.5):
                return True
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def cleanup(self) -> None:
        for i in range(len(self.nodes)):
            self._end(i, signal.SIGTERM)
        for node in self.nodes:
            shutil.rmtree(node.store, ignore_errors=True)
