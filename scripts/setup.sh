# shellcheck shell=bash
# Shared set-up of scripts/test.sh and scripts/demo.sh. Source it; do not run it.
#
#   rmaop_setup_env      cd to the repo root, set RMAOP_ROOT, BUILD_DIR, JOBS, MPI-as-root variables
#   rmaop_setup_packages install missing Debian packages (as root) or print the apt-get command and fail
#   rmaop_setup_python   the Python package's test venv (build-venv/), sets RMAOP_TEST_PYTHON
#   rmaop_build          configure and build into $BUILD_DIR
#   rmaop_mpiexec_flags  print the mpiexec flags this machine needs (one per line)
#
# Variables read: BUILD_DIR (default build), CMAKE_BUILD_TYPE (default Release), CMAKE_ARGS (extra
# configure arguments, word-split), JOBS (default nproc), RMAOP_SKIP_PACKAGES=1 (do not check packages),
# SANITIZE=1 (AddressSanitizer + UBSan, CPU only; defaults BUILD_DIR=build-sanitize, CMAKE_BUILD_TYPE=Debug).

# Debian bookworm packages the CPU build and tests need (libfftw3-dev: the host FFTs; python3: the tree check,
# tests/tree_check.py, and the Python package's venv; clang and libclang-rt-dev: the libFuzzer targets,
# scripts/fuzz.sh).
RMAOP_DEB_PACKAGES=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin check libfftw3-dev python3 clang
                    libclang-rt-dev)

rmaop_log() { printf '%s: %s\n' "${RMAOP_SCRIPT:-rmaop}" "$*" >&2; }
rmaop_die() {
  rmaop_log "error: $*"
  exit 1
}

rmaop_setup_env() {
  RMAOP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$RMAOP_ROOT" || rmaop_die "cannot cd to $RMAOP_ROOT"
  if [ "${SANITIZE:-0}" = 1 ]; then
    # AddressSanitizer + UndefinedBehaviorSanitizer, CPU only, in a build folder of its own: CMake takes CFLAGS and
    # LDFLAGS on a folder's first configure (so does the installed-copy check's user project; its mpicc build
    # reads RMAOP_SANITIZE_FLAGS). Any report ends the process. Leaks are not checked: Open MPI keeps its own.
    BUILD_DIR="${BUILD_DIR:-build-sanitize}"
    CMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Debug}"
    export RMAOP_SANITIZE_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    case "${CFLAGS:-}" in
    *-fsanitize=*) ;;
    *) export CFLAGS="${CFLAGS:+$CFLAGS }$RMAOP_SANITIZE_FLAGS" LDFLAGS="${LDFLAGS:+$LDFLAGS }-fsanitize=address,undefined" ;;
    esac
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  fi
  BUILD_DIR="${BUILD_DIR:-build}"
  case "$BUILD_DIR" in
  /*) ;;
  *) BUILD_DIR="$RMAOP_ROOT/$BUILD_DIR" ;;
  esac
  JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
  export RMAOP_ROOT BUILD_DIR JOBS
  # Open MPI refuses to start as root unless told; CI containers run as root.
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

# Prints the packages of RMAOP_DEB_PACKAGES that dpkg does not report as installed.
rmaop_missing_packages() {
  local p status
  for p in "${RMAOP_DEB_PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    if [ "$status" != "install ok installed" ]; then
      printf '%s\n' "$p"
    fi
  done
}

rmaop_setup_packages() {
  if [ "${RMAOP_SKIP_PACKAGES:-0}" = 1 ]; then
    return 0
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: check the tools themselves and say what is missing.
    local tool missing=()
    for tool in cc cmake pkg-config mpicc mpiexec; do
      command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    pkg-config --exists check 2>/dev/null || missing+=("check (pkg-config module)")
    if [ "${#missing[@]}" -gt 0 ]; then
      rmaop_die "missing: ${missing[*]}. Install a C compiler, CMake >= 3.20, pkg-config, an MPI (Open MPI or MPICH) and Check."
    fi
    return 0
  fi
  local missing
  mapfile -t missing < <(rmaop_missing_packages)
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  local cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    rmaop_log "missing Debian packages: ${missing[*]}"
    rmaop_log "install them with:  sudo sh -c '$cmd'"
    exit 1
  fi
  rmaop_log "installing missing packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  # openssh-client: Open MPI's launcher wants an rsh agent on the PATH even for a single node.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" openssh-client
}

# The Python package's test interpreter: a venv in build-venv/ (shared by every build folder) with the pinned
# python/requirements-test.txt, made with the python3 on PATH (RMAOP_PYTHON overrides), mpi4py compiled against
# this machine's MPI, and the package itself installed from python/ (proves `pip install ./python` works).
# Sets RMAOP_TEST_PYTHON. Not in SANITIZE builds (python.cmake registers nothing there).
rmaop_setup_python() {
  [ "${SANITIZE:-0}" = 1 ] && return 0
  local venv="$RMAOP_ROOT/build-venv" req="$RMAOP_ROOT/python/requirements-test.txt" py="${RMAOP_PYTHON:-python3}"
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$req" | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rmaop_log "making the Python test venv $venv with $py ($("$py" --version 2>&1)): a few minutes (mpi4py compiles)"
    rm -rf "$venv"
    "$py" -m venv "$venv" || rmaop_die "$py -m venv failed (Debian's python3 needs python3-venv; set RMAOP_PYTHON)"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    MPICC="$(command -v mpicc)" "$venv/bin/python" -m pip install -q --no-binary mpi4py -r "$req" ||
      rmaop_die "pip could not install python/requirements-test.txt (PyPI must be reachable)"
    echo "$want" >"$stamp"
  fi
  "$venv/bin/python" -m pip install -q --no-deps "$RMAOP_ROOT/python" >/dev/null ||
    rmaop_die "pip install ./python failed"
  RMAOP_TEST_PYTHON="$venv/bin/python"
  export RMAOP_TEST_PYTHON
}

rmaop_build() {
  local extra=()
  if [ -n "${CMAKE_ARGS:-}" ]; then
    read -r -a extra <<<"$CMAKE_ARGS"
  fi
  [ "${SANITIZE:-0}" = 1 ] && extra=(-DRMAOP_WITH_CUDA=OFF "${extra[@]}")
  [ -n "${RMAOP_TEST_PYTHON:-}" ] && extra=(-DRMAOP_TEST_PYTHON="$RMAOP_TEST_PYTHON" "${extra[@]}")
  rmaop_log "configuring in $BUILD_DIR"
  cmake -S "$RMAOP_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "${extra[@]}"
  rmaop_log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# mpiexec flags: allow more ranks than cores (CI has 2) and, for Open MPI, root.
rmaop_mpiexec_flags() {
  if mpiexec --version 2>/dev/null | grep -qi 'open mpi\|openrte'; then
    printf '%s\n' --oversubscribe
    if [ "$(id -u)" -eq 0 ]; then
      printf '%s\n' --allow-run-as-root
    fi
  fi
}
