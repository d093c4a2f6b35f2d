#!/usr/bin/env bash
# Register python/autofuse in the virtual environment in editable form, once (see scripts/dev_install.py for why not
# `pip install -e .`). A stamp keyed by pyproject.toml's hash and the source path makes later calls a no-op.
# Env: VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# The checkout that owns the venv is the one its .pth points at (worktrees sharing a venv use PYTHONPATH).
root=$(cd "$VENV/.." && pwd -P)
key=$( (sha256sum pyproject.toml; echo "$root") | sha256sum | cut -c1-16)
stamp=$VENV/.autofuse-dev-install-$key
if [ -f "$stamp" ] && "$VENV/bin/python" -c 'import importlib.metadata as m; m.distribution("autofuse")' 2>/dev/null
then
  exit 0
fi
"$VENV/bin/python" scripts/dev_install.py --python-dir "$root/python"
rm -f "$VENV"/.autofuse-dev-install-*
touch "$stamp"
