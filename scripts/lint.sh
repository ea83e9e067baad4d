#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make lint: over every .c/.h file of the repository (the driver at the top
# level and tests/softib/):
#  1. a clean W=1 build with sparse (C=1 CF=-Wsparse-error) in the modules'
#     usual trees build/<kver>/<module>/ (their objects deleted first, so
#     every file is compiled and checked again), for the default kernel
#     (6.1, or KVER=), for 6.12 (KVER612=, see tests/vm/kernel.sh) and for
#     sid's newest 7.x, in scripts/sid.sh's root (made first if missing:
#     2-3 minutes of download beside the other builds); missing 6.12
#     headers or a sid root that cannot be made are findings;
#  2. checkpatch.pl --no-tree --strict (flags in .checkpatch.conf) from Debian's
#     linux-source-6.1, extracted once into build/checkpatch/.
# Prints every finding as file:line and fails if there is any.
set -uo pipefail
. "$(dirname "$0")/../tests/vm/kernel.sh" || exit 1
cd "$REPO"
findings=0

# --- 1. W=1 + sparse, per kernel ---
# lint_kernel KVER KDIR: every module compiled again from scratch in its
# usual tree (build/<kver>/<module>/, tests/vm/build.sh) with sparse, so
# that the build which follows (make check's build stage, the tiers, make
# install) finds it done instead of compiling it a second time.
lint_kernel() {
	local kver=$1 kdir=$2 out rc
	rm -rf "$BUILD/$kver/lint"	# the copies older versions made
	find "$BUILD/$kver/ipoib" "$BUILD/$kver/softib" "$BUILD/$kver/rdmacm" \
		-name '*.o' -delete 2>/dev/null
	out=$("${KERNEL_ENV[@]}" KERNEL=stock KVER="$kver" KDIR="$kdir" ALLOW_MISSING=1 \
		"$REPO/tests/vm/build.sh" C=1 CF=-Wsparse-error 2>&1)
	rc=$?
	# (a kernel that finds no usable sparse says so once, with no
	# "warning:", and builds without it)
	if [ $rc != 0 ] || printf '%s\n' "$out" |
		grep -qE '(warning|error):|sparse is not available'; then
		echo "lint: $kver: W=1/sparse findings:"
		printf '%s\n' "$out" | grep -vE '^build: ' | sed 's/^/  /'
		return 1
	fi
	echo "lint: $kver: W=1 + sparse clean (ib_ipoib, softib, rdmacm_test)"
}
# The two kernels' builds and checkpatch run at once: each build's serial
# steps (modpost, linking, one module after the other) leave a core idle
# (together 40 s less than one after the other, 2026-12-07). Each build's
# report goes to a file, printed in order once it is done.
mkdir -p "$BUILD"
lint_out=$(mktemp "$BUILD/lint.XXXXXX")
trap 'rm -f "$lint_out" "$lint_out".*' EXIT
lint_kernel "$KVER" "$KDIR" >"$lint_out.1" 2>&1 &
lint_pids=$!
if [ -z "$KVER612" ] || [ ! -e "$KDIR612/Makefile" ]; then
	echo "lint: no Linux 6.12 headers (${KDIR612:-/usr/src/linux-headers-6.12.*-amd64}): run scripts/deps.sh" \
		>"$lint_out.2"
	findings=$((findings + 1))
elif [ "$KVER612" != "$KVER" ]; then
	lint_kernel "$KVER612" "$KDIR612" >"$lint_out.2" 2>&1 &
	lint_pids="$lint_pids $!"
fi
# sid's 7.x: its root first (once), then the build in it
lint_sid() {
	local kver
	kver=$("$REPO/scripts/sid.sh" root) || {
		echo "lint: no sid root for Linux 7.x (scripts/sid.sh root failed)"
		return 1
	}
	lint_kernel "$kver" "/usr/src/linux-headers-$kver"
}
lint_sid >"$lint_out.3" 2>&1 &
lint_pids="$lint_pids $!"
# lint_kernels_wait: the builds' reports, a finding per failed build
lint_kernels_wait() {
	local p f
	for p in $lint_pids; do
		wait "$p" || findings=$((findings + 1))
	done
	for f in "$lint_out".1 "$lint_out".2 "$lint_out".3; do
		[ -e "$f" ] && cat "$f"
	done
}

# --- 2. checkpatch ---
CP=$BUILD/checkpatch/scripts/checkpatch.pl
if [ ! -e "$CP" ]; then
	src=/usr/src/linux-source-6.1.tar.xz
	if [ ! -e "$src" ]; then
		echo "lint: $src missing (scripts/deps.sh installs linux-source-6.1)" >&2
		exit 1
	fi
	echo "lint: extracting checkpatch.pl from $src (once)"
	rm -rf "$BUILD/checkpatch.tmp" && mkdir -p "$BUILD/checkpatch.tmp"
	tar -xJf "$src" -C "$BUILD/checkpatch.tmp" --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch' \
		'*/Documentation/dev-tools/checkpatch.rst' || exit 1
	rm -rf "$BUILD/checkpatch" && mv "$BUILD/checkpatch.tmp" "$BUILD/checkpatch"
fi
mapfile -t files < <(find . \( -path ./build -o -path ./.git \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' \) -print | sed 's,^\./,,' | LC_ALL=C sort)
if [ ${#files[@]} = 0 ]; then
	lint_kernels_wait
	echo "lint: no C files"
else
	# The compat header is the one file allowed to test the kernel version
	# (Documentation/design.rst, "Kernel versions"): checkpatch's two
	# warnings about that are off for it alone, and a version test in any
	# other file is a finding.
	compat=ipoib_compat.h
	others=()
	for f in "${files[@]}"; do
		[ "$f" = "$compat" ] || others+=("$f")
	done
	out=$(perl "$CP" --terse --no-summary -f "${others[@]}" 2>&1
	      if [ -e "$compat" ]; then
		      perl "$CP" --terse --no-summary \
			      --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f "$compat" 2>&1
	      fi
	      grep -nE 'LINUX_VERSION_CODE|KERNEL_VERSION\(|__has_include' "${others[@]}" |
		      sed 's/$/ <- a kernel-version test outside ipoib_compat.h/')
	lint_kernels_wait
	if [ -n "$out" ]; then
		echo "lint: checkpatch findings (rerun one file with: perl ${CP#"$REPO"/} -f FILE):"
		printf '%s\n' "$out" | sed 's/^/  /'
		findings=$((findings + 1))
	else
		echo "lint: checkpatch --strict clean over ${#files[@]} files"
	fi
fi
if [ $findings != 0 ]; then
	echo "lint: FAILED"
	exit 1
fi
echo "lint: clean"
