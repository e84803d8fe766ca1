#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, into build-fuzz/) and runs each for SECONDS.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 60 s each, every target (fuzz/CMakeLists.txt);
#                                             0: build only
# Each target starts from its seeds (fuzz/corpus/<target>/, copied from the project's fixtures) plus
# what earlier runs found (build-fuzz/corpus/<target>/). An input that crashes, breaks an invariant,
# runs past 10 s or past 2 GB is copied to tests/fuzz-regressions/<target>/, where the ctest test
# fuzz_regressions_<target> replays it from then on. Exit 1 when anything was found.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(config family profile coefficients runs schedule resolution trainer_text onetrainer accelerate log plan)
fi
jobs=${FUZZ_BUILD_JOBS:-$(nproc)}
# FUZZ_SEED: libFuzzer's seed (0, the default, draws one; CI fixes it so that a landing is judged on
# the same inputs each time, and longer exploratory runs with fresh seeds are this script by hand)
# FUZZ_BUILD_DIR: an existing build configured with -DSEGADVISE_FUZZ=ON (CI reuses build-asan)
build=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ -z ${FUZZ_BUILD_DIR:-} ]]; then
  CXX=${FUZZ_CXX:-clang++} cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSEGADVISE_WITH_TORCH=OFF -DSEGADVISE_BUILD_TESTS=OFF -DSEGADVISE_FUZZ=ON >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/fuzz_}"
if ((secs <= 0)); then  # build only (libFuzzer's -max_total_time=0 would run without end)
  exit 0
fi
found=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t artifacts=$build/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  rm -f "$artifacts"/*
  echo "== fuzz_$t for ${secs}s"
  set +e
  "$build"/fuzz/fuzz_"$t" -seed="${FUZZ_SEED:-0}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "fuzz/corpus/$t" >"$build/fuzz-$t.log" 2>&1
  rc=$?
  set -e
  grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' "$build/fuzz-$t.log" | tail -2 || true
  shopt -s nullglob
  hits=("$artifacts"/*)
  shopt -u nullglob
  if ((rc != 0 || ${#hits[@]} > 0)); then
    found=1
    mkdir -p "tests/fuzz-regressions/$t"
    for h in "${hits[@]}"; do cp "$h" "tests/fuzz-regressions/$t/"; done
    echo "FINDING in $t (rc $rc): ${hits[*]:-none saved}; log $build/fuzz-$t.log"
    grep -m3 -E 'ERROR|SUMMARY|invariant|terminate|runtime error' "$build/fuzz-$t.log" || true
  fi
done
exit $found
