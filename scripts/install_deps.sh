#!/usr/bin/env bash
# Installs the build and test dependencies with apt-get, only those that are missing.
# Uses sudo when not root. Safe to run again: it does nothing when everything is installed.
# --fuzz also installs clang and its runtimes (libFuzzer, sanitizers) for scripts/fuzz.sh.
# --plots also installs python3-matplotlib for scripts/plot_results.py (nothing else needs it).
set -euo pipefail

# librsvg2-bin: rsvg-convert, for scripts/plot_runs.py's PNG (tested in CI).
PACKAGES=(cmake g++ make pkg-config libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev openmpi-bin libopenmpi-dev
          libre2-dev librsvg2-bin)
for arg in "$@"; do
  case "$arg" in
    --fuzz) PACKAGES+=(clang libclang-rt-dev) ;;
    --plots) PACKAGES+=(python3-matplotlib) ;;
    *) echo "install_deps: unknown flag '$arg' (known: --fuzz, --plots)" >&2; exit 2 ;;
  esac
done

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
