#!/usr/bin/env bash
# Checks the module layering (README's Layout) on a source tree and a build:
#   io <- costmodel <- families <- trainers <- {calibration, planner} <- report <- cli; profiler <- costmodel, families;
#   io (the input/output floor) depends on nothing of the project and every library may use it;
#   only the segadvise-torch executable joins profiler and cli; no symbol defined in two libraries.
# usage: scripts/check-layering.sh [BUILD_DIR]   (exit 1 and one line per violation)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
fail=0
declare -A allowed=([io]="" [costmodel]="io" [families]="io costmodel" [trainers]="io costmodel families"
                    [calibration]="io costmodel families trainers" [planner]="io costmodel families trainers"
                    [report]="io costmodel families trainers calibration planner" [profiler]="io costmodel families")
# 1. includes: a module includes only its own headers and those of the modules below it
for m in io costmodel families trainers calibration planner report profiler; do
  for d in $(grep -rhoE '#include "segadvise/[a-z]+/' "$m" | sed -E 's|.*segadvise/([a-z]+)/|\1|' | sort -u); do
    if [[ $d != "$m" && " ${allowed[$m]} " != *" $d "* ]]; then
      echo "layering: $m/ includes segadvise/$d/"; fail=1
    fi
  done
  if grep -rlE '#include "(\.\./)?cli/|#include <CLI/' "$m" >/dev/null 2>&1; then
    echo "layering: $m/ includes the CLI"; fail=1
  fi
done
# the report layer prints for both executables: never LibTorch (segadvise-torch hands it plain values)
if grep -rlE '#include <(torch|ATen|c10)/' report >/dev/null 2>&1; then
  echo "layering: report/ includes LibTorch"; fail=1
fi
# 2. link lines: a library's CMakeLists links only libraries below it
declare -A libname=([io]=segadvise_io [costmodel]=segadvise_costmodel [families]=segadvise_families [trainers]=segadvise_trainers
                    [calibration]=segadvise_calibration [report]=segadvise_report
                    [planner]=segadvise_planner [profiler]=segadvise_torch_lib [cli]=segadvise_cli_lib)
for m in io costmodel families trainers calibration planner report profiler; do
  for other in io costmodel families trainers calibration planner report profiler cli; do
    [[ $other == "$m" || " ${allowed[$m]} " == *" $other "* ]] && continue
    if grep -E "target_link_libraries\(${libname[$m]}[^)]*" -A3 "$m/CMakeLists.txt" 2>/dev/null | grep -qw "${libname[$other]}"; then
      echo "layering: ${libname[$m]} links ${libname[$other]}"; fail=1
    fi
  done
done
# 3. no symbol defined in two libraries (strong text/data symbols of the built static libraries)
libs=$(find "$build" -name 'libsegadvise_*.a' 2>/dev/null | sort)
if [[ -n $libs ]]; then
  dups=$(for l in $libs; do nm -C --defined-only "$l" 2>/dev/null | awk -v lib="$(basename "$l")" \
           '$2 ~ /^[TDBR]$/ { $1=""; $2=""; sub(/^  /, ""); print lib "\t" $0 }' | sort -u; done |
         awk -F'\t' '{ n[$2]++; where[$2]=where[$2] " " $1 } END { for (s in n) if (n[s] > 1) print s " :" where[s] }')
  if [[ -n $dups ]]; then
    echo "layering: symbols defined in two libraries:"; echo "$dups" | head -20; fail=1
  fi
else
  echo "layering: no built libraries under $build (symbol check skipped)"
fi
# 4. advise, predict and check answer in milliseconds: the segadvise executable never links LibTorch
if [[ -x $build/segadvise ]] && readelf -d "$build/segadvise" | grep -qi torch; then
  echo "layering: $build/segadvise links LibTorch (only segadvise-torch may)"; fail=1
fi
((fail == 0)) && echo "layering: ok"
exit $fail
