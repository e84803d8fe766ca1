#!/usr/bin/env bash
# The installed and the packaged segadvise work on their own: `cmake --install` into a temporary
# prefix, `cpack -G DEB`, the package's file list, and `segadvise` run from the unpacked package.
# Usage: tests/package_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
[[ -x $tmp/prefix/bin/segadvise ]] || fail "cmake --install put no bin/segadvise"
(cd / && "$tmp/prefix/bin/segadvise" --model flux --gpu 4090 > "$tmp/installed.txt") ||
  [[ $? -eq 1 ]] || fail "installed segadvise --model flux --gpu 4090 did not answer"
grep -q "flux" -i "$tmp/installed.txt" || fail "installed segadvise printed no advice"
if grep -q "SEGADVISE_WITH_TORCH:BOOL=ON" "$build/CMakeCache.txt"; then
  [[ -x $tmp/prefix/bin/segadvise-torch ]] || fail "cmake --install put no bin/segadvise-torch"
  # segadvise profile|validate exec the segadvise-torch beside their own binary (cli/cmd_torch.cpp)
fi

(cd "$build" && cpack -G DEB -B "$tmp/deb" > "$tmp/cpack.log") || { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/deb/segadvise_*.deb)
dpkg-deb -c "$deb" | grep -q '\./usr/bin/segadvise$' || fail "the package lists no usr/bin/segadvise"
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libstdc++6* ]] || fail "Depends '$depends' lacks libstdc++6"
dpkg-deb -x "$deb" "$tmp/root"
(cd / && "$tmp/root/usr/bin/segadvise" --model flux --gpu 4090 > "$tmp/packaged.txt") ||
  [[ $? -eq 1 ]] || fail "packaged segadvise --model flux --gpu 4090 did not answer"
cmp -s "$tmp/installed.txt" "$tmp/packaged.txt" || fail "packaged and installed segadvise answer differently"
echo "ok: $(basename "$deb"), Depends: $depends"
