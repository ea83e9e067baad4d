#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make debug-kernel: build the debug kernel of the test tier once, when
# ../shared/kernels/6.1-debug/ has no prebuilt one. Debian's linux-source-6.1
# with tests/vm/debug-kernel/config (KASAN, UBSAN, lockdep, DEBUG_ATOMIC_SLEEP,
# kmemleak, DEBUG_OBJECTS, DEBUG_LIST, fault injection; IB core and the stock
# ib_ipoib as modules), `make bindeb-pkg`, the two debs kept in
# build/debug-kernel-cache/ where tests/vm/kernel.sh looks when the shared
# directory has none. About an hour on two cores; a second run does nothing.
#
# Env: DEBUG_KERNEL_CACHE (default build/debug-kernel-cache), JOBS (make -j).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${DEBUG_KERNEL_CACHE:-$REPO/build/debug-kernel-cache}
CONFIG=$HERE/debug-kernel/config

if ls "$CACHE"/linux-image-*_amd64.deb "$CACHE"/linux-headers-*_amd64.deb >/dev/null 2>&1; then
	echo "debug-kernel: already built: $(cd "$CACHE" && ls ./*.deb | tr '\n' ' ')"
	exit 0
fi
bash "$REPO/scripts/deps.sh"
tarball=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null | head -n 1 || true)
[ -n "$tarball" ] || { echo "debug-kernel: no /usr/src/linux-source-6.1.tar.xz" >&2; exit 1; }
missing=()
for p in flex bison libssl-dev libelf-dev dwarves rsync debhelper python3; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "debug-kernel: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" </dev/null
fi

work=$CACHE/work
rm -rf "$work"
mkdir -p "$work"
echo "debug-kernel: unpacking $tarball"
tar -xf "$tarball" -C "$work"
src=$(ls -d "$work"/linux-source-6.1/)
grep -v '^# SPDX' "$CONFIG" >"$src/.config"
make -C "$src" olddefconfig >/dev/null
# olddefconfig must not have dropped what the tier relies on
for opt in KASAN UBSAN PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_KMEMLEAK DEBUG_OBJECTS \
	   DEBUG_LIST FAULT_INJECTION; do
	grep -q "^CONFIG_$opt=y" "$src/.config" || {
		echo "debug-kernel: CONFIG_$opt lost by olddefconfig" >&2
		exit 1
	}
done
for opt in INFINIBAND INFINIBAND_IPOIB INFINIBAND_USER_MAD; do
	grep -q "^CONFIG_$opt=m" "$src/.config" || {
		echo "debug-kernel: CONFIG_$opt is not a module" >&2
		exit 1
	}
done
[ "${DEBUG_KERNEL_CONFIG_ONLY:-0}" = 1 ] && { echo "debug-kernel: config ok ($src/.config)"; exit 0; }
echo "debug-kernel: building in $src (about an hour on two cores)"
t0=$(date +%s)
make -C "$src" -j"${JOBS:-$(nproc)}" bindeb-pkg KDEB_PKGVERSION=6.1-ipoib-debug-local \
	>"$CACHE/build.log" 2>&1 || {
	tail -n 30 "$CACHE/build.log" >&2
	echo "debug-kernel: build failed, see $CACHE/build.log" >&2
	exit 1
}
mv "$work"/linux-image-*_amd64.deb "$work"/linux-headers-*_amd64.deb "$CACHE/"
rm -f "$CACHE"/linux-image-*-dbg_*.deb
rm -rf "$work"
echo "debug-kernel: built in $(($(date +%s) - t0)) s: $(cd "$CACHE" && ls ./*.deb | tr '\n' ' ')"
