#!/usr/bin/env bash
# Installs what the Python tests need (torch, pytest, numpy, transformers)
# with pip, where missing. torch from PyPI brings its CUDA libraries (a few
# GB) and runs on the CPU here; transformers builds tiny random models for
# the patching tests (no weights are downloaded).
set -euo pipefail
python=${PYTHON:-python3}
if "$python" -c "import torch, pytest, numpy, transformers" 2>/dev/null; then
  echo "install-python-deps: torch, pytest, numpy and transformers present"
  exit 0
fi
echo "install-python-deps: installing torch, pytest, numpy, transformers"
"$python" -m pip install --quiet torch pytest numpy transformers
