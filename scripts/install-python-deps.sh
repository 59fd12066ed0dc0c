#!/usr/bin/env bash
# Installs what the Python tests need (torch, pytest, numpy, transformers,
# deepspeed) and the linter CI runs (ruff, pinned: its rules change between
# releases) with pip, where missing. torch from PyPI brings its CUDA libraries (a few
# GB) and runs on the CPU here; transformers builds tiny random models for
# the patching tests (no weights are downloaded).
set -euo pipefail
python=${PYTHON:-python3}
ruff_version=0.17.6
deepspeed_version=0.19.8
if "$python" -c "import torch, pytest, numpy, transformers" 2>/dev/null &&
  [ "$("$python" -m ruff --version 2>/dev/null)" = "ruff $ruff_version" ] &&
  [ "$("$python" -c 'import importlib.metadata as m; print(m.version("deepspeed"))' \
    2>/dev/null)" = "$deepspeed_version" ]; then
  echo "install-python-deps: torch, pytest, numpy, transformers, ruff and deepspeed present"
  exit 0
fi
echo "install-python-deps: installing torch, pytest, numpy, transformers, ruff, deepspeed"
"$python" -m pip install --quiet torch pytest numpy transformers \
  "ruff==$ruff_version"
# DeepSpeed for the distributed tests' ZeRO cases (CPU: its CPU accelerator
# over gloo), pure Python: its CUDA ops are never built (DS_BUILD_OPS=0).
DS_BUILD_OPS=0 "$python" -m pip install --quiet "deepspeed==$deepspeed_version"
