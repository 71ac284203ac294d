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


def cpu_fields() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo ({} where there is none)."""
    cpuinfo = Path("/proc/cpuinfo")
    fields: dict[str, str] = {}
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return fields


def cpu_model() -> str:
    """The CPU's name with its family and model numbers: the name alone ("Intel(R) Xeon(R)
    Processor", "AMD EPYC") covers generations whose speeds differ by half."""
    fields = cpu_fields()
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        return f"{name}, family {fields['cpu family']} model {fields['model']}"
    return name


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
