#!/usr/bin/env bash
# Installs everything, then runs the whole test suite: the torch-free gtests (plain, ASan+UBSan, TSan)
# and the pytest suite against CPU PyTorch. Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh

jobs=$(nproc)
for variant in release:"" asan:address tsan:thread; do
  name=${variant%%:*}; sanitizer=${variant#*:}
  echo "== gtest ($name) =="
  cmake -S . -B "build/cpp-$name" -G Ninja -DNPU_SIM_BUILD_TORCH=OFF -DNPU_SIM_SANITIZE="$sanitizer" >/dev/null
  cmake --build "build/cpp-$name" -j "$jobs"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/cpp/tsan.supp" \
    ASAN_OPTIONS="detect_leaks=1" \
    UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" \
    ctest --test-dir "build/cpp-$name" --output-on-failure -j "$jobs" --timeout 300
done

echo "== pytest =="
${PYTHON:-python3} -m pytest tests/python -q --timeout=900 "$@"
