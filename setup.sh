#!/usr/bin/env bash
# One-shot set-up, idempotent (a second run takes seconds):
#   .venv         the engine with its dev extras and every optional one (the tests use them all),
#                 torch 2.13.0 pinned (CPU here, MPS on Apple Silicon, CUDA where an NVIDIA GPU
#                 is present)
#   .mineru_env   MinerU in its own environment, for its model-free `flash` tier
#   servers       the dev extras include milvus==2.3.5 (a Milvus standalone binary, Linux x86_64)
#                 and nx-27017 (a MongoDB wire-protocol server): the `server` tests and
#                 `db.sh` without Docker run them; the Milvus binary is unpacked once here
#   chromium      Debian's, for the viewer's browser test (apt, only when missing)
#   tesseract     the OCR engine for scanned pages (apt tesseract-ocr + tesseract-ocr-eng, only
#                 when missing; on macOS: brew install tesseract)
# Set SKIP_MINERU=1 to skip MinerU (the engine then parses with PyMuPDF).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
TORCH_VERSION=2.13.0

say() { printf '[setup] %s\n' "$*" >&2; }

"$PYTHON" - <<'PY' || { say "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)"; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

fingerprint() {
    cat "$@" 2>/dev/null | "$PYTHON" -c "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"
}

is_current() {  # stamp file, wanted fingerprint
    [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}

install_torch() {
    local pip=".venv/bin/pip"
    if [ "$(uname -s)" = "Darwin" ] || command -v nvidia-smi >/dev/null 2>&1; then
        "$pip" install -q "torch==$TORCH_VERSION"   # MPS build on macOS, CUDA build on GPU Linux
    elif "$pip" install -q --retries 1 "torch==$TORCH_VERSION+cpu" 2>/dev/null; then
        :   # the configured index (or its find-links) serves the CPU build: no other index needed
    else
        "$pip" install -q --retries 2 "torch==$TORCH_VERSION" \
            --index-url https://download.pytorch.org/whl/cpu
    fi
}

setup_main_env() {
    local stamp=.venv/.setup_stamp want
    want=$(fingerprint pyproject.toml constraints.txt setup.sh)
    if is_current "$stamp" "$want"; then
        say ".venv is up to date"
        return
    fi
    [ -x .venv/bin/python ] || { say "creating .venv"; "$PYTHON" -m venv .venv; }
    .venv/bin/python -m pip install -q --upgrade pip
    say "installing torch $TORCH_VERSION"
    install_torch
    say "installing the engine with its dev and optional extras"
    .venv/bin/pip install -q -c constraints.txt -e ".[dev,all]"
    if [ "$(uname -s)" = "Linux" ] && ! command -v nvidia-smi >/dev/null 2>&1 \
        && .venv/bin/pip list 2>/dev/null | grep -qi '^nvidia-'; then
        say "CUDA packages were installed on a machine without a GPU; check constraints.txt"
        exit 1
    fi
    echo "$want" > "$stamp"
}

setup_mineru_env() {
    if [ "${SKIP_MINERU:-0}" = "1" ]; then
        say "SKIP_MINERU=1: not building .mineru_env"
        return
    fi
    local stamp=.mineru_env/.setup_stamp want
    want=$(fingerprint requirements_mineru.txt)
    if is_current "$stamp" "$want"; then
        say ".mineru_env is up to date"
        return
    fi
    [ -x .mineru_env/bin/python ] || { say "creating .mineru_env"; "$PYTHON" -m venv .mineru_env; }
    .mineru_env/bin/python -m pip install -q --upgrade pip
    say "installing MinerU into .mineru_env"
    .mineru_env/bin/pip install -q -r requirements_mineru.txt
    echo "$want" > "$stamp"
}

prepare_servers() {
    if .venv/bin/python -c "import milvus" 2>/dev/null; then
        .venv/bin/python -c "from devservers import milvus_binary; milvus_binary()"
        say "embedded Milvus server ready"
    else
        say "no embedded Milvus server on this platform (its wheel is Linux x86_64 only): db.sh needs Docker for Milvus"
    fi
}

setup_browser() {
    if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ]; then
        return
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no chromium: the viewer's browser test needs one (set CHROMIUM_PATH to its binary)"
        return
    fi
    local sudo=""
    if [ "$(id -u)" != "0" ]; then
        sudo="sudo -n"
    fi
    say "installing chromium (apt) for the viewer's browser test"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null \
        || say "could not install chromium; run: sudo apt-get install -y chromium"
}

setup_ocr() {
    if command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -qx eng; then
        return
    fi
    if command -v brew >/dev/null 2>&1; then
        say "installing tesseract (brew) to read scanned pages"
        brew install tesseract >/dev/null || say "could not install tesseract; run: brew install tesseract"
        return
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no tesseract: scanned pages cannot be read (install Tesseract 5 with English data)"
        return
    fi
    local sudo=""
    if [ "$(id -u)" != "0" ]; then
        sudo="sudo -n"
    fi
    say "installing tesseract (apt) to read scanned pages"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null \
        || say "could not install tesseract; run: sudo apt-get install -y tesseract-ocr tesseract-ocr-eng"
}

setup_main_env
prepare_servers
setup_mineru_env
setup_browser
setup_ocr
mkdir -p storage
say "ready"
