"""Servers without Docker, from PyPI packages: a Milvus standalone server and a MongoDB wire server.

`milvus==2.3.5` ships a real Milvus standalone binary (embedded etcd, local storage) and
`nx-27017` an SQLite-backed server that speaks MongoDB's wire protocol. Both are started here
on loopback only: every Milvus component and its embedded etcd get 127.0.0.1 and a port chosen
free, so that several instances (tests, colleagues) can run side by side. Stopping sends SIGTERM
and kills after a timeout (Milvus 2.3 can hang on SIGTERM).

Used by the test fixtures and, through `python -m devservers`, by `db.sh`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from citerag.errors import BackendUnavailable

LOOPBACK = "127.0.0.1"
MILVUS_START_TIMEOUT_S = 120.0
MONGO_START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
MILVUS_PORT_KEYS = (
    "etcd_port",
    "root_coord_port",
    "proxy_port",
    "proxy_internal_port",
    "query_coord_port",
    "query_node_port",
    "index_coord_port",
    "index_node_port",
    "data_coord_port",
    "data_node_port",
)
_TEMPLATE_VALUE = re.compile(r"\{\{\s*(\w+)\s*(?:\(\w+\))?\s*(?::\s*([^}]*?))?\s*\}\}")
_UNSET_IP = re.compile(r"^(\s+)ip:\s*(#.*)?$", re.MULTILINE)


@dataclass
class LocalServer:
    """A server process started here: its URI, data folder, log file and process."""

    kind: str
    uri: str
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        stop_process(self.process, timeout_s)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL when the process has not exited within `timeout_s`."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports (held open together, so none is chosen twice)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def milvus_package_dir() -> Path:
    """The installed `milvus` package (the server binary), or an error that says how to get it."""
    try:
        import milvus
    except ImportError:
        raise BackendUnavailable(
            "The embedded Milvus server is not installed; run `bash setup.sh` (it installs "
            "milvus==2.3.5 on Linux x86_64) or use Docker (`bash db.sh start_all`)."
        ) from None
    return Path(milvus.__file__).parent


def milvus_binary(cache_dir: Path | None = None) -> Path:
    """The Milvus binary, unpacked once into a cache folder shared by every data folder."""
    package = milvus_package_dir()
    import milvus

    version = getattr(milvus, "__version__", "unknown")
    base = (
        cache_dir
        or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "citerag"
        / f"milvus-{version}"
    )
    base.mkdir(parents=True, exist_ok=True)
    milvus._initialize_data_files(str(base))  # unpacks bin/*.lzma, skipped when unchanged
    binary = base / "bin" / "milvus"
    if not binary.is_file():
        raise BackendUnavailable(f"No Milvus binary in {package}; reinstall milvus==2.3.5.")
    return binary


def render_milvus_config(template: str, values: dict[str, str]) -> str:
    """The package's milvus.yaml template with our values, every component bound to loopback."""

    def value(match: re.Match[str]) -> str:
        return values.get(match.group(1), (match.group(2) or "").strip())

    text = _TEMPLATE_VALUE.sub(value, template)
    text = _UNSET_IP.sub(lambda m: f"{m.group(1)}ip: {LOOPBACK}", text)
    text = text.replace("localhost:", f"{LOOPBACK}:")
    config_path = values["etcd_config_path"]
    return text.replace("etcd:\n", f"etcd:\n  config:\n    path: {config_path}\n", 1)


def etcd_config(data_dir: Path, client_port: int, peer_port: int) -> str:
    """The embedded etcd's own yaml: client and peer URLs on loopback ports chosen free."""
    client = f"http://{LOOPBACK}:{client_port}"
    peer = f"http://{LOOPBACK}:{peer_port}"
    return "\n".join(
        [
            "name: citerag-milvus",
            f"data-dir: {data_dir}",
            f"listen-client-urls: {client}",
            f"advertise-client-urls: {client}",
            f"listen-peer-urls: {peer}",
            f"initial-advertise-peer-urls: {peer}",
            f"initial-cluster: citerag-milvus={peer}",
            "initial-cluster-state: new",
            "",
        ]
    )


def write_milvus_config(data_dir: Path, proxy_port: int) -> tuple[Path, int]:
    """Write configs/milvus.yaml and configs/etcd.yaml under `data_dir`; returns (yaml, metrics)."""
    chosen = [p for p in free_ports(len(MILVUS_PORT_KEYS) + 3) if p != proxy_port]
    ports = dict(zip(MILVUS_PORT_KEYS, chosen, strict=False))
    ports["proxy_port"] = proxy_port
    peer_port, metrics_port = chosen[len(MILVUS_PORT_KEYS) : len(MILVUS_PORT_KEYS) + 2]
    configs, logs, data = (data_dir / name for name in ("configs", "logs", "data"))
    for folder in (configs, logs, data):
        folder.mkdir(parents=True, exist_ok=True)
    etcd_yaml = configs / "etcd.yaml"
    etcd_yaml.write_text(etcd_config(data / "etcd.data", ports["etcd_port"], peer_port))
    values = {key: str(port) for key, port in ports.items()}
    values.update(
        etcd_config_path=str(etcd_yaml),
        etcd_log_path=str(logs / "etcd.log"),
        etcd_data_dir=str(data / "etcd.data"),
        local_storage_dir=str(data),
        rocksmq_data_dir=str(data / "rocksmq"),
        system_log_path=str(logs),
    )
    template = (milvus_package_dir() / "data" / "config.yaml.template").read_text()
    milvus_yaml = configs / "milvus.yaml"
    milvus_yaml.write_text(render_milvus_config(template, values))
    shutil.copy(milvus_package_dir() / "data" / "glog.conf", configs / "glog.conf")
    return milvus_yaml, metrics_port


def start_milvus(
    data_dir: Path, port: int | None = None, timeout_s: float = MILVUS_START_TIMEOUT_S
) -> LocalServer:
    """Start Milvus standalone on 127.0.0.1:`port` (free when None) and wait until it is healthy."""
    data_dir = data_dir.resolve()
    binary = milvus_binary()
    proxy_port = port or free_port()
    _, metrics_port = write_milvus_config(data_dir, proxy_port)
    env = dict(os.environ)
    env.update(
        DEPLOY_MODE="STANDALONE",
        METRICS_PORT=str(metrics_port),
        MILVUS_RUN_DIR=str(data_dir / "run"),
        LD_LIBRARY_PATH=f"{binary.parent}:{env.get('LD_LIBRARY_PATH', '')}",
    )
    log_path = data_dir / "logs" / "milvus.log"
    process = _spawn([str(binary), "run", "standalone"], data_dir, env, log_path)
    server = LocalServer("milvus", f"http://{LOOPBACK}:{proxy_port}", data_dir, log_path, process)
    health = f"http://{LOOPBACK}:{metrics_port}/healthz"
    _wait(server, timeout_s, lambda: _http_ok(health) and _port_open(proxy_port))
    return server


def start_mongo_wire(
    data_dir: Path, port: int | None = None, timeout_s: float = MONGO_START_TIMEOUT_S
) -> LocalServer:
    """Start nx-27017 (MongoDB wire protocol over SQLite) on 127.0.0.1:`port`."""
    executable = shutil.which("nx-27017", path=str(Path(sys.executable).parent)) or shutil.which(
        "nx-27017"
    )
    if executable is None:
        raise BackendUnavailable(
            "The MongoDB wire server nx-27017 is not installed; run `bash setup.sh` "
            "(it installs nx-27017) or use Docker (`bash db.sh start_all`)."
        )
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    chosen = port or free_port()
    # Its PID file defaults to /tmp/nx_27017.pid: one instance per machine unless each has its own.
    pid_file = str(data_dir / "nx-27017.pid")
    command = [executable, "--data-dir", str(data_dir), "--host", LOOPBACK, "-p", str(chosen)]
    command += ["--pid-file", pid_file]
    log_path = data_dir / "nx-27017.log"
    process = _spawn(command, data_dir, dict(os.environ), log_path)
    server = LocalServer("mongodb", f"mongodb://{LOOPBACK}:{chosen}", data_dir, log_path, process)
    _wait(server, timeout_s, lambda: _port_open(chosen))
    return server


def _spawn(
    command: list[str], cwd: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the terminal does not reach it
        )


def _wait(server: LocalServer, timeout_s: float, ready: object) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise BackendUnavailable(
                f"The {server.kind} server exited with status {server.process.returncode} while "
                f"starting; see {server.log_path}."
            )
        if callable(ready) and ready():
            return
        time.sleep(0.2)
    server.stop()
    raise BackendUnavailable(
        f"The {server.kind} server did not start within {timeout_s:.0f} s; see {server.log_path}."
    )


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return b"OK" in response.read()
    except OSError:
        return False


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((LOOPBACK, port)) == 0


def main(argv: list[str] | None = None) -> int:
    """Run one server in the foreground until SIGTERM/SIGINT (what `db.sh` starts in background)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("kind", choices=("milvus", "mongodb"))
    parser.add_argument("--data", type=Path, required=True, help="the data folder")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    start = start_milvus if args.kind == "milvus" else start_mongo_wire
    try:
        server = start(args.data, args.port)
    except BackendUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    pid_file = server.data_dir / "server.pid"  # db.sh kills it should this wrapper be killed
    pid_file.write_text(str(server.pid))
    print(f"{args.kind} ready at {server.uri} (pid {server.pid}, data {server.data_dir})")
    sys.stdout.flush()
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping and server.process.poll() is None:
        time.sleep(0.5)
    server.stop()
    pid_file.unlink(missing_ok=True)
    return 0 if stopping else 1


if __name__ == "__main__":
    sys.exit(main())
