#!/usr/bin/env bash
# Installs what the Python tests need (torch, pytest, numpy) with pip, where
# missing. torch from PyPI brings its CUDA libraries (a few GB) and runs on
# the CPU here.
set -euo pipefail
python=${PYTHON:-python3}
if "$python" -c "import torch, pytest, numpy" 2>/dev/null; then
  echo "install-python-deps: torch, pytest and numpy present"
  exit 0
fi
echo "install-python-deps: installing torch, pytest, numpy"
"$python" -m pip install --quiet torch pytest numpy
