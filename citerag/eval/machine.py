"""A one-paragraph description of the machine a benchmark ran on."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from citerag.embed.graph_runners import native_bf16

LIBRARIES = (
    "torch",
    "sentence-transformers",
    "onnxruntime",
    "openvino",
    "pymilvus",
    "milvus-lite",
    "bm25s",
    "pymupdf",
    "llama-index-core",
)


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe_machine() -> str:
    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return (
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), {platform.system()} "
        f"{platform.machine()}, Python {platform.python_version()}, no GPU used, "
        f"{'native' if native_bf16() else 'no native'} bfloat16; " + ", ".join(versions) + "."
    )
