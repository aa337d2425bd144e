#!/usr/bin/env bash
# Installs what is missing, builds everything (Release) into build/, and runs every test
# (unit, CLI, MPI; GPU tests skip themselves without a device). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
# Open MPI refuses to start as root unless told; CI containers often run as root.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
ctest --test-dir "${RESHARD_BUILD_DIR:-build}" --output-on-failure
