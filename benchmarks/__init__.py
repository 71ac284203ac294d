"""The benchmark suite: `python -m benchmarks run --suite NAME`, `python -m benchmarks report`.

Benchmarks never reach the network: every model they load is on disk, so the libraries are told
so before any of them is imported (here, the first module of the package to run).
"""

import os

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
