#!/usr/bin/env bash
# One-time, idempotent set-up for Autofuse on Debian 12/13: system packages and the project-local .venv.
# Re-running is a no-op of a few milliseconds: a stamp file in the venv records what was installed, keyed by this
# script's hash (edit the package lists below and the next run installs the difference).
# As root (CI runs as root with CI=true) it installs the Debian packages itself; otherwise it names the missing ones
# and the apt-get command to run, and stops. Env: VENV (default .venv), PYTHON (interpreter that creates the venv).
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PKGS=(build-essential cmake ninja-build ccache git libgtest-dev libsleef-dev graphviz clang clang-format libclang-rt-dev
  python3-venv python3-dev)
PY_PKGS=("torch==2.13.0" numpy pytest pytest-xdist nanobind "scikit-build-core>=0.10" expecttest hypothesis
  "transformers" matplotlib)

VENV=${VENV:-.venv}
stamp=$VENV/.autofuse-setup-$(sha256sum scripts/setup.sh | cut -c1-16)
if [ -f "$stamp" ] && [ -x "$VENV/bin/python" ]; then exit 0; fi

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: install them as root, then rerun:  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $($PY --version)"
  $PY -m venv "$VENV"
fi
echo "setup: installing Python packages into $VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q "${PY_PKGS[@]}"
touch "$stamp"
echo "setup: done"
