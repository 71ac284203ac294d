"""What runs the packed embedding graph (`embed.packed`): ONNX Runtime or OpenVINO.

Both read the same exported ONNX file and take the same inputs. OpenVINO's CPU plugin encodes
the library's sentences about 1.2x faster than ONNX Runtime in float32 (the same vectors, within
1e-6) and about 2x faster in bfloat16 on a CPU with native bfloat16 arithmetic (AVX512_BF16 or
AMX: matrix products in bfloat16, sums in float32; cosine to float32 at least 0.9999 on the
library's sentences). Measured in `benchmarks/results/library.md`.
"""

from __future__ import annotations

import importlib.util
import threading
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np

Feeds = dict[str, np.ndarray]


class GraphRunner(Protocol):
    """Runs the packed graph on one batch of rows; safe to call from several threads."""

    def run(self, feeds: Feeds) -> np.ndarray: ...


class OnnxRuntimeRunner:
    def __init__(self, model_file: Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        # A shelf's next file is parsed beside the embedder: ONNX Runtime's idle threads, left
        # spinning, would hold the core that parse needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )

    def run(self, feeds: Feeds) -> np.ndarray:
        return np.asarray(self._session.run(None, feeds)[0])


class OpenVinoRunner:
    """The graph compiled for the CPU, in bfloat16 where `bf16` (and the CPU computes it
    natively), else in float32: never the half precision OpenVINO picks by itself on ARM."""

    def __init__(self, model_file: Path, bf16: bool) -> None:
        import openvino

        self.precision = "bf16" if bf16 and native_bf16() else "f32"
        self._compiled = openvino.Core().compile_model(
            str(model_file),
            "CPU",
            {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "LATENCY"},
        )
        self._requests = threading.local()  # an infer request serves one thread at a time

    def run(self, feeds: Feeds) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        return np.array(request.infer(feeds)[0])  # a copy: the request reuses its buffers


def openvino_available() -> bool:
    return importlib.util.find_spec("openvino") is not None


@cache
def native_bf16() -> bool:
    """Whether OpenVINO's CPU plugin computes bfloat16 natively on this machine."""
    if not openvino_available():
        return False
    import openvino

    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return "BF16" in capabilities
