#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build ib_ipoib.ko (top-level Kbuild + ipoib*.[ch]) and softib.ko
# (tests/softib/) for one kernel, out of tree, from copies of the sources in
# build/<kver>/{ipoib,softib}/ so that several kernels build side by side and
# the source tree stays clean.
#
#   tests/vm/build.sh [EXTRA KBUILD ARGS...]     e.g. C=2 CF=-Wsparse-error
#
# Env: KERNEL=stock|debug, KVER=, KDIR= (see kernel.sh; KVER=7: sid's newest
# kernel, built in scripts/sid.sh's root). ALLOW_MISSING=1 lets
# a module whose sources do not exist yet be skipped instead of failing.
# Compiler output has build/<kver>/<mod>/ paths rewritten to the source paths.
set -euo pipefail
. "$(dirname "$0")/kernel.sh"

if [ -n "$KERNEL_SKIP" ]; then
	echo "build: skipped: $KERNEL_SKIP"
	exit 0
fi
if [ ! -e "$KDIR_HOST/Makefile" ]; then
	echo "build: no kernel headers at $KDIR (run scripts/deps.sh, or set KDIR=)" >&2
	exit 1
fi

mkdir -p "$KBUILD_DIR"
exec 9>"$KBUILD_DIR/.build.lock"
flock -w 900 9 || { echo "build: could not lock $KBUILD_DIR" >&2; exit 1; }

# sync_tree SRCDIR DSTDIR FILES...: copy FILES (names relative to SRCDIR, or
# absolute paths) if changed, keeping their mtime, and drop sources that
# disappeared.
sync_tree() {
	local src=$1 dst=$2 f s keep
	shift 2
	mkdir -p "$dst"
	for f in "$@"; do
		case $f in /*) s=$f ;; *) s=$src/$f ;; esac
		cmp -s "$s" "$dst/${f##*/}" || cp -p "$s" "$dst/${f##*/}"
	done
	for f in "$dst"/*.c "$dst"/*.h "$dst"/Kbuild; do
		[ -e "$f" ] || continue
		keep=0
		for s in "$@"; do
			[ "${s##*/}" = "${f##*/}" ] && keep=1
		done
		[ $keep = 1 ] || rm -f "$f"
	done
}

# kbuild DIR SRCPREFIX NAME: build and rewrite paths; fail on a build error.
kbuild() {
	local dir=$1 srcp=$2 name=$3
	echo "build: $name for $KVER"
	# shellcheck disable=SC2086
	$KMAKE -s -j"$(nproc)" -C "$KDIR" M="$dir" W=1 CONFIG_DEBUG_INFO_BTF_MODULES= "${EXTRA[@]}" modules 2>&1 |
		sed -e "s,$dir/,$srcp,g" -e "s,^\\(\\.\\./\\)*build/$KVER/[a-z]*/,$srcp,"
}

EXTRA=("$@")
rc=0

# --- ib_ipoib (top level) ---
cd "$REPO"
ipoib_src=$(ls Kbuild ipoib*.c ipoib*.h 2>/dev/null || true)
if [ -e Kbuild ] && ls ipoib*.c >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	sync_tree "$REPO" "$KBUILD_DIR/ipoib" $ipoib_src
	kbuild "$KBUILD_DIR/ipoib" "" ib_ipoib.ko || rm -f "$KBUILD_DIR/ipoib/ib_ipoib.ko"
	[ -e "$KBUILD_DIR/ipoib/ib_ipoib.ko" ] || rc=1
elif [ "${ALLOW_MISSING:-0}" = 1 ]; then
	echo "build: ib_ipoib sources (Kbuild, ipoib*.c) absent: not built"
	rm -f "$KBUILD_DIR/ipoib/ib_ipoib.ko"
else
	echo "build: ib_ipoib sources (Kbuild, ipoib*.c) absent" >&2
	rc=1
fi

# --- softib (tests/softib) ---
cd "$REPO/tests/softib" 2>/dev/null || true
if [ -e "$REPO/tests/softib/Kbuild" ] && ls "$REPO"/tests/softib/*.c >/dev/null 2>&1; then
	softib_src=$(ls Kbuild ./*.c ./*.h 2>/dev/null | sed 's,^\./,,')
	# softib shares the driver's kernel-version header
	softib_src="$softib_src $REPO/ipoib_compat.h"
	# shellcheck disable=SC2086
	sync_tree "$REPO/tests/softib" "$KBUILD_DIR/softib" $softib_src
	kbuild "$KBUILD_DIR/softib" "tests/softib/" softib.ko || rm -f "$KBUILD_DIR/softib/softib.ko"
	[ -e "$KBUILD_DIR/softib/softib.ko" ] || rc=1
elif [ "${ALLOW_MISSING:-0}" = 1 ]; then
	echo "build: softib sources (tests/softib/Kbuild, *.c) absent: not built"
	rm -f "$KBUILD_DIR/softib/softib.ko"
else
	echo "build: softib sources (tests/softib/Kbuild, *.c) absent" >&2
	rc=1
fi

# --- rdmacm_test (tests/rdmacm): a test-only rdma_cm consumer ---
if [ -e "$REPO/tests/rdmacm/Kbuild" ]; then
	cd "$REPO/tests/rdmacm"
	rdmacm_src=$(ls Kbuild ./*.c 2>/dev/null | sed 's,^\./,,')
	# shellcheck disable=SC2086
	sync_tree "$REPO/tests/rdmacm" "$KBUILD_DIR/rdmacm" $rdmacm_src
	kbuild "$KBUILD_DIR/rdmacm" "tests/rdmacm/" rdmacm_test.ko ||
		rm -f "$KBUILD_DIR/rdmacm/rdmacm_test.ko"
	[ -e "$KBUILD_DIR/rdmacm/rdmacm_test.ko" ] || rc=1
fi

if [ $rc != 0 ]; then
	echo "build: FAILED for $KVER" >&2
	exit 1
fi
ls "$KBUILD_DIR"/*/*.ko 2>/dev/null | sed "s,^$REPO/,build: built ,"
