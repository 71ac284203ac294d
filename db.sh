#!/usr/bin/env bash
# Database servers for the server set-up: Milvus standalone, MongoDB and Attu (Milvus's GUI),
# each in Docker. The offline default needs none of them (Milvus Lite + SQLite under storage/).
#
#   bash db.sh start_all | stop_all | status | start_milvus | start_mongo | start_attu
#
# Then point the engine at them:
#   export MILVUS_URI=http://127.0.0.1:19530 MONGODB_URI=mongodb://127.0.0.1:27017
# Attu: http://localhost:3000 (connect to 127.0.0.1:19530, or host.docker.internal:19530).
set -euo pipefail

MILVUS_IMAGE=${MILVUS_IMAGE:-milvusdb/milvus:v2.6.4}
MONGO_IMAGE=${MONGO_IMAGE:-mongo:7}
ATTU_IMAGE=${ATTU_IMAGE:-zilliz/attu:v2.6}
DATA_DIR=${DB_DATA_DIR:-$(cd "$(dirname "$0")" && pwd)/storage/servers}

die() { printf 'db.sh: %s\n' "$*" >&2; exit 1; }

require_docker() {
    command -v docker >/dev/null 2>&1 || die "docker is not installed; install Docker Desktop or Docker Engine first."
    docker info >/dev/null 2>&1 || die "the Docker engine is not running; start Docker Desktop (or dockerd) and retry."
}

running() { [ -n "$(docker ps -q -f "name=^$1\$")" ]; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_container() {  # name, then docker run arguments
    local name=$1; shift
    if running "$name"; then echo "$name is already running"; return; fi
    docker rm -f "$name" >/dev/null 2>&1 || true
    docker run -d --name "$name" "$@" >/dev/null
    echo "$name started"
}

start_milvus() {
    mkdir -p "$DATA_DIR/milvus"
    start_container citerag-milvus -p 19530:19530 -p 9091:9091 \
        -e ETCD_USE_EMBED=true -e COMMON_STORAGETYPE=local -e DEPLOY_MODE=STANDALONE \
        -v "$DATA_DIR/milvus:/var/lib/milvus" "$MILVUS_IMAGE" milvus run standalone
}

start_mongo() {
    if ! running citerag-mongo && port_in_use 27017; then
        echo "something already listens on 27017 (a native MongoDB?); not starting the container"
        return
    fi
    mkdir -p "$DATA_DIR/mongo"
    start_container citerag-mongo -p 27017:27017 -v "$DATA_DIR/mongo:/data/db" "$MONGO_IMAGE"
}

start_attu() {
    start_container citerag-attu -p 3000:3000 -e MILVUS_URL=host.docker.internal:19530 \
        --add-host=host.docker.internal:host-gateway "$ATTU_IMAGE"
}

stop_all() {
    for name in citerag-attu citerag-milvus citerag-mongo; do
        docker rm -f "$name" >/dev/null 2>&1 && echo "$name stopped" || true
    done
}

status() {
    docker ps -a --filter "name=citerag-" --format 'table {{.Names}}\t{{.Status}}\t{{.Ports}}'
}

case "${1:-}" in
    start_all) require_docker; start_milvus; start_mongo; start_attu ;;
    start_milvus) require_docker; start_milvus ;;
    start_mongo) require_docker; start_mongo ;;
    start_attu) require_docker; start_attu ;;
    stop_all) require_docker; stop_all ;;
    status) require_docker; status ;;
    *) die "usage: bash db.sh start_all|stop_all|status|start_milvus|start_mongo|start_attu" ;;
esac
