#!/usr/bin/env bash
# Installs what building and testing Tile needs on Debian 12, skipping what is
# already there. Needs root (or sudo) only when something is missing.
# Arguments name further packages (scripts/fuzz.sh adds clang's).
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libzstd-dev libgtest-dev nlohmann-json3-dev
  clang-format-14
  "$@"
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else

  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

"$(dirname "$0")/install-cutlass.sh"
