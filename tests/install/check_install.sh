#!/usr/bin/env bash
# check_install.sh — the installed tree, as a user sees it (tests/install.cmake).
#
#   check_install.sh install BUILD_DIR WORK_DIR CMAKE
#       cmake --install BUILD_DIR --prefix WORK_DIR/prefix, into a fresh WORK_DIR
#   check_install.sh pkg-config WORK_DIR VERSION CC
#       builds consumer.c with `pkg-config --cflags --libs superkernel` (shared)
#       and with --static (libsuperkernel.a + Libs.private), runs both
#   check_install.sh find-package WORK_DIR VERSION CMAKE CC
#       builds this directory's CMake project (find_package(superkernel)),
#       runs its shared and static programs
#   check_install.sh sk-tool WORK_DIR VERSION
#       runs the installed bin/sk --version (its RPATH finds the library)
#
# Each program must print exactly "superkernel VERSION, team of 2 cores".
# $SK_CONSUMER_FLAGS: extra compiler and linker flags (a sanitizer build's).
# Exit 0 pass, 1 fail, 77 skipped (pkg-config not installed).
set -u

here=$(cd "$(dirname "$0")" && pwd)
fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}
# expect_output WHAT CMD...: runs CMD, whose stdout must be the one line.
expect_output() {
  local what=$1
  shift
  local out
  out=$("$@") || fail "$what exited with $?: $*"
  echo "$what: $out"
  [ "$out" = "superkernel $version, team of 2 cores" ] ||
    fail "$what printed '$out', expected 'superkernel $version, team of 2 cores'"
}
# The directory holding superkernel.pc (lib/ or lib64/ or lib/<triplet>/).
pc_dir() {
  local pc
  pc=$(find "$prefix" -name superkernel.pc -path '*/pkgconfig/*' | head -n 1)
  [ -n "$pc" ] || fail "no pkgconfig/superkernel.pc under $prefix"
  dirname "$pc"
}

mode=${1:?usage: check_install.sh install|pkg-config|find-package|sk-tool ...}
shift
case $mode in
  install)
    build=${1:?BUILD_DIR} work=${2:?WORK_DIR} cmake=${3:?CMAKE}
    rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"
    "$cmake" --install "$build" --prefix "$work/prefix" || fail "cmake --install $build failed"
    prefix=$work/prefix
    [ -f "$prefix/include/superkernel.h" ] || fail "no include/superkernel.h under $prefix"
    libdir=$(dirname "$(pc_dir)")
    for f in libsuperkernel.a libsuperkernel.so superkernel.pc; do
      [ -n "$(find "$prefix" -name "$f")" ] || fail "$f not installed under $prefix"
    done
    [ -f "$libdir/cmake/superkernel/superkernelConfig.cmake" ] &&
      [ -f "$libdir/cmake/superkernel/superkernelConfigVersion.cmake" ] &&
      [ -f "$libdir/cmake/superkernel/superkernelTargets.cmake" ] ||
      fail "the CMake package files are not all in $libdir/cmake/superkernel"
    # Nothing installed may point back into the build or source tree.
    if grep -rl -e "$build" "$prefix/include" "$libdir/pkgconfig" "$libdir/cmake"; then
      fail "installed files mention the build directory $build"
    fi
    echo "check_install: ok, installed into $prefix"
    ;;

  pkg-config)
    work=${1:?WORK_DIR} version=${2:?VERSION} cc=${3:?CC}
    prefix=$work/prefix
    if ! command -v pkg-config >/dev/null 2>&1; then
      echo "SKIPPED: pkg-config is not installed (scripts/install-deps.sh installs it)"
      exit 77
    fi
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(pc_dir)
    got=$(pkg-config --modversion superkernel) || fail "pkg-config cannot read superkernel.pc"
    [ "$got" = "$version" ] || fail "pkg-config --modversion says '$got', expected '$version'"
    flags=$(pkg-config --cflags --libs superkernel) || fail "pkg-config --cflags --libs failed"
    echo "pkg-config --cflags --libs superkernel: $flags"
    # shellcheck disable=SC2086  # the flags are words
    "$cc" ${SK_CONSUMER_FLAGS:-} -o "$work/consumer_pc" "$here/consumer.c" $flags ||
      fail "building against the shared library with pkg-config's flags failed"
    libdir=$(pkg-config --variable=libdir superkernel)
    LD_LIBRARY_PATH=$libdir expect_output "shared (pkg-config)" "$work/consumer_pc"
    # Static: the archive by name, then what --static adds (Libs.private).
    static=$(pkg-config --static --cflags --libs superkernel) || fail "pkg-config --static failed"
    echo "pkg-config --static --cflags --libs superkernel: $static"
    static=${static/-lsuperkernel/-l:libsuperkernel.a}
    # shellcheck disable=SC2086
    "$cc" ${SK_CONSUMER_FLAGS:-} -o "$work/consumer_pc_static" "$here/consumer.c" $static ||
      fail "building against the static library with pkg-config --static's flags failed"
    expect_output "static (pkg-config --static)" "$work/consumer_pc_static"
    echo "check_install: ok"
    ;;

  find-package)
    work=${1:?WORK_DIR} version=${2:?VERSION} cmake=${3:?CMAKE} cc=${4:?CC}
    prefix=$work/prefix
    rm -rf "$work/consumer_cmake"
    "$cmake" -S "$here" -B "$work/consumer_cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DSK_EXPECT_VERSION="$version" \
      -DCMAKE_C_FLAGS="${SK_CONSUMER_FLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${SK_CONSUMER_FLAGS:-}" ||
      fail "configuring a project with find_package(superkernel $version) failed"
    "$cmake" --build "$work/consumer_cmake" || fail "building the find_package project failed"
    expect_output "superkernel::superkernel" "$work/consumer_cmake/consumer_shared"
    expect_output "superkernel::superkernel_static" "$work/consumer_cmake/consumer_static"
    echo "check_install: ok"
    ;;

  sk-tool)
    work=${1:?WORK_DIR} version=${2:?VERSION}
    out=$(env -u LD_LIBRARY_PATH "$work/prefix/bin/sk" --version) || fail "the installed sk --version exited with $?"
    [ "$out" = "sk (superkernel) $version" ] || fail "the installed sk --version printed '$out'"
    echo "check_install: ok: $out"
    ;;

  *) fail "unknown mode '$mode'" ;;
esac
