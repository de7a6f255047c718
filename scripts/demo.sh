#!/usr/bin/env bash
# Installs everything, then runs the demo (examples/demo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
${PYTHON:-python3} examples/demo.py "$@"
