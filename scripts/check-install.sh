#!/usr/bin/env bash
# Installed-copy check: installs a build into a throwaway prefix, checks that librmaop.so exports the API alone,
# then builds examples/halo.c against the installed copy only, twice -- as a separate CMake project
# (find_package(rmaop) + rmaop::rmaop) and with `mpicc $(pkg-config --cflags --libs rmaop)` -- and runs both
# programs at 2 ranks.
#
#   scripts/check-install.sh [BUILD_DIR]     (default: $BUILD_DIR, else build/)
#
# ctest runs it as the test "install_check" (label "install"), so scripts/test.sh counts it.
set -euo pipefail

RMAOP_SCRIPT=check-install.sh
# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
if [ $# -gt 0 ]; then
  BUILD_DIR="$1"
fi
rmaop_setup_env
[ -f "$BUILD_DIR/CMakeCache.txt" ] || rmaop_die "$BUILD_DIR is not a configured build (run scripts/test.sh first)"

work="$(mktemp -d "${TMPDIR:-/tmp}/rmaop-install-check.XXXXXX")"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
prefix="$work/prefix"
np="${NP:-2}"
mapfile -t mpi_flags < <(rmaop_mpiexec_flags)

rmaop_log "installing $BUILD_DIR into $prefix"
if ! cmake --install "$BUILD_DIR" --prefix "$prefix" >"$work/install.log" 2>&1; then
  cat "$work/install.log" >&2
  rmaop_die "cmake --install failed"
fi
[ -f "$prefix/include/rmaop/rmaop.h" ] || rmaop_die "the install lacks include/rmaop/rmaop.h"
pcfile="$(find "$prefix" -name rmaop.pc -print -quit)"
config="$(find "$prefix" -name rmaopConfig.cmake -print -quit)"
[ -n "$pcfile" ] || rmaop_die "the install lacks rmaop.pc"
[ -n "$config" ] || rmaop_die "the install lacks rmaopConfig.cmake"
libdir="$(dirname "$(dirname "$pcfile")")"

# 0. The shared library exports the C API alone (cmake/rmaop.map): no internal or C++ runtime symbols that could
#    take the place of another library's in the same process.
if [ -f "$libdir/librmaop.so" ] && command -v nm >/dev/null; then
  extra="$(nm -D --defined-only "$libdir/librmaop.so" | awk 'NF == 3 && $3 !~ /^rmaop_/ {print $3}')"
  [ -z "$extra" ] || rmaop_die "librmaop.so exports $(wc -l <<<"$extra") symbols outside the API, e.g. $(head -3 <<<"$extra" | tr '\n' ' ')"
fi

# 1. A user's CMake project that knows nothing of the source tree.
app="$work/cmake-app"
mkdir -p "$app"
cp "$RMAOP_ROOT/examples/halo.c" "$app/"
cat >"$app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(rmaop_install_check LANGUAGES C)
find_package(rmaop 0.2 REQUIRED)
add_executable(halo halo.c)
target_link_libraries(halo PRIVATE rmaop::rmaop)
EOF
rmaop_log "building examples/halo.c with find_package(rmaop)"
if ! cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/app.log" 2>&1 ||
  ! cmake --build "$app/build" >>"$work/app.log" 2>&1; then
  cat "$work/app.log" >&2
  rmaop_die "the find_package(rmaop) build failed"
fi

# 2. pkg-config with the MPI compiler wrapper.
rmaop_log "building examples/halo.c with mpicc \$(pkg-config --cflags --libs rmaop)"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
read -r -a pc_flags <<<"$(pkg-config --cflags --libs rmaop)"
read -r -a san_flags <<<"${RMAOP_SANITIZE_FLAGS:-}" # SANITIZE=1 builds (setup.sh): the same instrumentation
mpicc -std=c11 "${san_flags[@]}" -o "$work/halo-pc" "$RMAOP_ROOT/examples/halo.c" "${pc_flags[@]}" ||
  rmaop_die "the pkg-config build failed"

for exe in "$app/build/halo" "$work/halo-pc"; do
  rmaop_log "running $(basename "$exe") at $np ranks"
  mpiexec "${mpi_flags[@]}" -n "$np" "$exe" || rmaop_die "$exe failed"
done
rmaop_log "installed copy OK (find_package and pkg-config)"
