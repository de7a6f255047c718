#!/usr/bin/env bash
# Installs everything, then runs the whole test suite: the torch-free gtests (plain, ASan+UBSan, TSan)
# and the pytest suite against CPU PyTorch. Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh

jobs=$(nproc)
suites=(test_backend_sim test_kernels test_allocator test_hccl)
# release: in the extension's build tree, whose torch-free layers install.sh just compiled with the same flags,
# so only the suites (and the C++ benchmarks, kept building) compile. The sanitizer trees build the suites only.
ext=${NPU_SIM_BUILD_DIR:-build/ext}
for variant in release:"" asan:address tsan:thread; do
  name=${variant%%:*}; sanitizer=${variant#*:}
  echo "== gtest ($name) =="
  if [ "$name" = release ]; then
    dir=$ext
    cmake -S . -B "$dir" -DNPU_SIM_BUILD_TESTS=ON >/dev/null
    cmake --build "$dir" -j "$jobs"
  else
    dir=build/cpp-$name
    cmake -S . -B "$dir" -G Ninja -DNPU_SIM_BUILD_TORCH=OFF -DNPU_SIM_SANITIZE="$sanitizer" \
      -DNPU_SIM_DNNL_PREFIX="$(${PYTHON:-python3} -c 'import sys; print(sys.prefix)')" >/dev/null
    cmake --build "$dir" -j "$jobs" --target "${suites[@]}"
  fi
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/cpp/tsan.supp" \
    ASAN_OPTIONS="detect_leaks=1" \
    UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" \
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 300
done

echo "== pytest =="
${PYTHON:-python3} -m pytest tests/python -q --timeout=900 "$@"
