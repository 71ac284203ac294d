#!/usr/bin/env bash
# Database servers for the server set-up. The offline default needs none of them (Milvus Lite +
# SQLite under storage/).
#
#   bash db.sh start_all | stop_all | status | start_milvus | start_mongo | start_attu
#
# With Docker: Milvus standalone, MongoDB and Attu (Milvus's GUI) in containers, each waited on
# until healthy. Without Docker (or with DB_MODE=embedded): the Milvus standalone server that the
# PyPI package milvus==2.3.5 ships and nx-27017 (a MongoDB wire-protocol server over SQLite),
# both installed by setup.sh, run as background processes on 127.0.0.1; Attu needs Docker.
# Then point the engine at them:
#   export MILVUS_URI=http://127.0.0.1:19530 MONGODB_URI=mongodb://127.0.0.1:27017
# Attu (Docker only): http://localhost:3000 (connect to 127.0.0.1:19530, or host.docker.internal).
set -euo pipefail
cd "$(dirname "$0")"

MILVUS_IMAGE=${MILVUS_IMAGE:-milvusdb/milvus:v2.6.4}
MONGO_IMAGE=${MONGO_IMAGE:-mongo:7}
ATTU_IMAGE=${ATTU_IMAGE:-zilliz/attu:v2.6}
MILVUS_PORT=${MILVUS_PORT:-19530}
MONGO_PORT=${MONGO_PORT:-27017}
ATTU_PORT=${ATTU_PORT:-3000}
DATA_DIR=${DB_DATA_DIR:-$PWD/storage/servers}
PYTHON=${PYTHON:-$PWD/.venv/bin/python}
HEALTH_TIMEOUT_S=${HEALTH_TIMEOUT_S:-180}

die() { printf 'db.sh: %s\n' "$*" >&2; exit 1; }
say() { printf '%s\n' "$*"; }

have_docker() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

mode() {
    case "${DB_MODE:-auto}" in
        docker) have_docker || die "DB_MODE=docker but the Docker engine is not running; start Docker Desktop (or dockerd) and retry."; echo docker ;;
        embedded) echo embedded ;;
        auto) if have_docker; then echo docker; else echo embedded; fi ;;
        *) die "DB_MODE must be docker, embedded or auto" ;;
    esac
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {  # description, then a command that succeeds once the service is healthy
    local what=$1; shift
    local waited=0 rc
    while true; do
        "$@" && break
        rc=$?
        [ "$rc" -ne 2 ] || return 1  # 2: the process is gone, waiting is pointless
        sleep 2; waited=$((waited + 2))
        if [ "$waited" -ge "$HEALTH_TIMEOUT_S" ]; then
            printf 'db.sh: %s did not become healthy within %s s\n' "$what" "$HEALTH_TIMEOUT_S" >&2
            return 1
        fi
    done
    say "$what is healthy"
}

milvus_healthy() { "$PYTHON" - "$MILVUS_PORT" <<'PY' 2>/dev/null
import sys
from pymilvus import MilvusClient
MilvusClient(uri=f"http://127.0.0.1:{sys.argv[1]}", timeout=3).list_collections()
PY
}

mongo_healthy() { "$PYTHON" - "$MONGO_PORT" <<'PY' 2>/dev/null
import sys
from pymongo import MongoClient
MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}", serverSelectionTimeoutMS=2000).admin.command("ping")
PY
}

attu_healthy() { port_open "$ATTU_PORT"; }

# --- Docker -------------------------------------------------------------------------------------
running() { [ -n "$(docker ps -q -f "name=^$1\$")" ]; }

start_container() {  # name, then docker run arguments
    local name=$1; shift
    if running "$name"; then say "$name is already running"; return; fi
    docker rm -f "$name" >/dev/null 2>&1 || true
    docker run -d --name "$name" "$@" >/dev/null
    say "$name started"
}

docker_milvus() {
    mkdir -p "$DATA_DIR/milvus"
    start_container citerag-milvus -p "$MILVUS_PORT:19530" -p 9091:9091 \
        -e ETCD_USE_EMBED=true -e COMMON_STORAGETYPE=local -e DEPLOY_MODE=STANDALONE \
        -v "$DATA_DIR/milvus:/var/lib/milvus" "$MILVUS_IMAGE" milvus run standalone
    wait_for "Milvus (127.0.0.1:$MILVUS_PORT)" milvus_healthy || die "see \`docker logs citerag-milvus\`"
}

docker_mongo() {
    if ! running citerag-mongo && port_open "$MONGO_PORT"; then
        say "something already listens on $MONGO_PORT (a native MongoDB?); not starting the container"
        return
    fi
    mkdir -p "$DATA_DIR/mongo"
    start_container citerag-mongo -p "$MONGO_PORT:27017" -v "$DATA_DIR/mongo:/data/db" "$MONGO_IMAGE"
    wait_for "MongoDB (127.0.0.1:$MONGO_PORT)" mongo_healthy || die "see \`docker logs citerag-mongo\`"
}

docker_attu() {
    start_container citerag-attu -p "$ATTU_PORT:3000" -e "MILVUS_URL=host.docker.internal:$MILVUS_PORT" \
        --add-host=host.docker.internal:host-gateway "$ATTU_IMAGE"
    wait_for "Attu (http://localhost:$ATTU_PORT)" attu_healthy || die "see \`docker logs citerag-attu\`"
}

docker_stop() {
    for name in citerag-attu citerag-milvus citerag-mongo; do
        if docker rm -f "$name" >/dev/null 2>&1; then say "$name stopped"; fi
    done
}

docker_status() {
    docker ps -a --filter "name=citerag-" --format 'table {{.Names}}\t{{.Status}}\t{{.Ports}}'
}

# --- Embedded (no Docker) -----------------------------------------------------------------------
pid_file() { echo "$DATA_DIR/$1.pid"; }

alive() { local f; f=$(pid_file "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

embedded_start() {  # kind (milvus|mongodb), port, health check
    local kind=$1 port=$2 check=$3
    [ -x "$PYTHON" ] || die "$PYTHON is missing; run \`bash setup.sh\` first."
    if alive "$kind"; then say "$kind is already running (pid $(cat "$(pid_file "$kind")"))"; return; fi
    port_open "$port" && die "port $port is already in use; stop what listens there or set the port (MILVUS_PORT, MONGO_PORT)."
    mkdir -p "$DATA_DIR/$kind"
    nohup "$PYTHON" -m devservers "$kind" --data "$DATA_DIR/$kind" --port "$port" \
        >"$DATA_DIR/$kind.out" 2>&1 &
    echo $! >"$(pid_file "$kind")"
    if ! wait_for "$kind (127.0.0.1:$port)" embedded_check "$kind" "$check"; then
        stop_one "$kind" >/dev/null
        die "$kind did not start (nothing left running): $(tail -n 3 "$DATA_DIR/$kind.out" 2>/dev/null)"
    fi
}

embedded_check() {  # kind, health check; gives up at once when the process has died
    alive "$1" || return 2
    "$2"
}

stop_one() {  # SIGTERM, then SIGKILL after 15 s (Milvus 2.3 can hang on SIGTERM)
    local kind=$1 f pid server
    f=$(pid_file "$kind")
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
        say "$kind stopped"
    fi
    server="$DATA_DIR/$kind/server.pid"  # the server itself, should its wrapper have been killed
    if [ -f "$server" ] && kill -0 "$(cat "$server")" 2>/dev/null; then kill -KILL "$(cat "$server")"; fi
    rm -f "$f" "$server"
}

embedded_stop() { stop_one milvus; stop_one mongodb; }

embedded_status() {
    local kind port
    for kind in milvus mongodb; do
        port=$MILVUS_PORT; [ "$kind" = mongodb ] && port=$MONGO_PORT
        if alive "$kind"; then say "$kind: running (pid $(cat "$(pid_file "$kind")"), 127.0.0.1:$port)"
        else say "$kind: stopped"; fi
    done
    say "attu: needs Docker (use \`python main.py inspect COLLECTION\` instead)"
}

no_attu() {
    say "Attu needs Docker, which is not available here; \`python main.py inspect COLLECTION\` shows a collection's schema, rows per document and sample rows instead."
}

start_milvus() { if [ "$(mode)" = docker ]; then docker_milvus; else embedded_start milvus "$MILVUS_PORT" milvus_healthy; fi; }
start_mongo() { if [ "$(mode)" = docker ]; then docker_mongo; else embedded_start mongodb "$MONGO_PORT" mongo_healthy; fi; }
start_attu() { if [ "$(mode)" = docker ]; then docker_attu; else no_attu; fi; }

start_all() {
    start_milvus
    start_mongo
    start_attu
    say "export MILVUS_URI=http://127.0.0.1:$MILVUS_PORT MONGODB_URI=mongodb://127.0.0.1:$MONGO_PORT"
}

stop_all() { if [ "$(mode)" = docker ]; then docker_stop; fi; embedded_stop; }
status() { if [ "$(mode)" = docker ]; then docker_status; else embedded_status; fi; }

case "${1:-}" in
    start_all | start_milvus | start_mongo | start_attu | stop_all | status) "$1" ;;
    *) die "usage: bash db.sh start_all|stop_all|status|start_milvus|start_mongo|start_attu" ;;
esac
