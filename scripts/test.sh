#!/usr/bin/env bash
# Installs what is missing, builds everything (Release) into build/, and runs every test
# (unit, CLI, MPI; GPU tests skip themselves without a device). Exits non-zero on any failure.
# Opt-in extra jobs (environment): RESHARD_CI_SANITIZE=1 runs scripts/sanitize.sh (ASan + UBSan
# build, unit and MPI tests); RESHARD_CI_FUZZ=1 runs scripts/fuzz.sh for RESHARD_CI_FUZZ_SECONDS
# (default 60) per target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
# Open MPI refuses to start as root unless told; CI containers often run as root.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
ctest --test-dir "${RESHARD_BUILD_DIR:-build}" --output-on-failure
if [ "${RESHARD_CI_SANITIZE:-0}" = 1 ]; then
  bash scripts/sanitize.sh
fi
if [ "${RESHARD_CI_FUZZ:-0}" = 1 ]; then
  bash scripts/fuzz.sh "${RESHARD_CI_FUZZ_SECONDS:-60}"
fi
