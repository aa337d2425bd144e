#!/usr/bin/env bash
# Installs the build and test dependencies with apt-get, only those that are missing.
# Uses sudo when not root. Safe to run again: it does nothing when everything is installed.
set -euo pipefail

PACKAGES=(cmake g++ make libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev openmpi-bin libopenmpi-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
echo "install_deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
