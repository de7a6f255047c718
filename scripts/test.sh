#!/usr/bin/env bash
# Installs everything, then runs the whole test suite: the torch-free gtests (plain, ASan+UBSan, TSan)
# and the pytest suite against CPU PyTorch. Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh

jobs=$(nproc)
all_suites=(test_backend_sim test_kernels test_allocator test_hccl)
# TSan runs the suites of the layers with threads and processes of their own (stream workers, AI-core pool,
# allocator, collectives); NPU_SIM_TEST_FULL=1 adds the kernel suite (another kernel library compiled under
# TSan: ~15 min on 2 cores), which the release and ASan runs always cover.
tsan_suites=(test_backend_sim test_allocator test_hccl)
[ "${NPU_SIM_TEST_FULL:-0}" = 1 ] && tsan_suites=("${all_suites[@]}")
# release: in the extension's build tree, whose torch-free layers install.sh just compiled with the same flags,
# so only the suites (and the C++ benchmarks, kept building) compile. The sanitizer trees build the suites only.
ext=${NPU_SIM_BUILD_DIR:-build/ext}
for variant in release:"" asan:address tsan:thread; do
  name=${variant%%:*}; sanitizer=${variant#*:}
  suites=("${all_suites[@]}")
  [ "$name" = tsan ] && suites=("${tsan_suites[@]}")
  echo "== gtest ($name) == ${SECONDS} s into the run"
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
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" --timeout 300 -L "^($(IFS='|'; echo "${suites[*]}"))\$"
done

# Most tests are one Python thread: they run with a pytest-xdist worker per core. The tests that start processes
# (marked `processes`, tests/python/conftest.py) run afterwards, also a worker per core: each spends much of its
# time starting interpreters and waiting out its peers' timeouts, so two of them share the cores better than one
# does alone (on 2 cores 283-366 s, one at a time 386 s on the same host); they check only their own ranks' /dev/shm
# segments and each takes its own port. --durations: the slowest tests, to keep CI's time in view.
echo "== pytest == ${SECONDS} s into the run"
${PYTHON:-python3} -m pytest tests/python -q --timeout=900 -n "$jobs" -m "not processes" --durations=20 "$@"
echo "== pytest (processes) == ${SECONDS} s into the run"
${PYTHON:-python3} -m pytest tests/python -q --timeout=900 -n "$jobs" -m processes --durations=10 "$@"
