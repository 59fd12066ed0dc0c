#!/usr/bin/env bash
# The formatting and lint checks CI runs (scripts/test.sh calls this):
# every tracked C, C++ and CUDA file as .clang-format has it (clang-format 14,
# Debian 12's), and the Python under ruff's rules in pyproject.toml.
# Exits non-zero, naming the files, where anything is off;
# `scripts/lint.sh --fix` rewrites the C++ and applies ruff's safe fixes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python3}
clang_format=$(command -v clang-format-14 || command -v clang-format)

mapfile -t sources < <(git ls-files '*.c' '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i "${sources[@]}"
  "$python" -m ruff check --fix .
  exit 0
fi
"$clang_format" --dry-run --Werror "${sources[@]}"
"$python" -m ruff check .
echo "lint: ${#sources[@]} C/C++ files formatted, Python clean"
