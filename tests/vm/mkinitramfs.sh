#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Assemble the test VM's initramfs for one kernel:
#
#   tests/vm/mkinitramfs.sh OUT
#
# OUT is the concatenation of three cpio archives (no file is in two of them):
#  1. base  (cached in build/<kver>/initramfs/, rebuilt when this script or the
#            kernel changes): busybox-static, ip/rdma/tc/ss/bridge, iperf3,
#            ethtool, ping, ibstat/saquery/sminfo, kmod with their ldd closure;
#            the kernel's own modules the tests need with their dependencies
#            (decompressed: 6.12's are .ko.xz); the stock ib_ipoib.ko kept
#            apart in /lib/modules/$KVER/stock/.
#  2. mods  (rebuilt each time, small): our softib.ko in extra/, our
#            ib_ipoib.ko in updates/ (both with debug info stripped), and the
#            depmod output for the guest tree. depmod never sees the stock copy,
#            so `modprobe ib_ipoib` can only load ours.
#  3. tests (rebuilt each time, small): /init, /tests/lib.sh, /tests/cases,
#            /tests/selftest/cases, /tests/vm/guest.
#  4. extra (only with INITRAMFS_EXTRA=DIR, a case's VM hook, see vmhook.sh):
#            the files of DIR, between mods and base; kernel modules in
#            DIR/lib/modules/$KVER/ are indexed by the depmod of the mods layer.
set -euo pipefail
. "$(dirname "$0")/kernel.sh"

OUT=$1
ID=$BUILD/$KVER/initramfs
mkdir -p "$ID"
MODSRC=$MODROOT/lib/modules/$KVER
# Compressor of the base layer: the guest unpacks it under TCG, where lz4 is
# the fastest to decompress for its size (see Documentation/testing.rst).
COMPRESS=${INITRAMFS_COMPRESS:-lz4}

# Kernel modules the tests may load (with what modules.dep says they need).
# Built-in ones (e.g. veth in the debug kernel) are skipped.
KMODS="ib_core ib_cm ib_umad ib_uverbs iw_cm rdma_cm rdma_ucm veth bridge dummy
       8021q bonding virtio_pci virtio_net"
# User-space tools with their shared libraries.
TOOLS="/usr/sbin/ip /usr/bin/rdma /usr/sbin/tc /usr/sbin/bridge /usr/bin/ss
       /usr/bin/iperf3 /usr/sbin/ethtool /usr/bin/ping /usr/sbin/ibstat
       /usr/sbin/ibaddr /usr/sbin/saquery /usr/sbin/sminfo /usr/bin/kmod
       /usr/sbin/opensm /usr/sbin/smpquery /usr/sbin/ibnetdiscover /usr/sbin/ibswitches"
# busybox applets that must not shadow the real tools above.
NO_APPLET="ip ping ping6 tc modprobe insmod rmmod lsmod depmod modinfo"

cpio_dir() {	# cpio_dir DIR: newc archive of DIR on stdout
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet)
}

compress() {
	case $COMPRESS in
	lz4) lz4 -l -9 -q -c ;;
	zstd) zstd -q -T0 -10 -c ;;
	gzip) gzip -6 -c ;;
	none) cat ;;
	*) echo "unknown INITRAMFS_COMPRESS=$COMPRESS" >&2; return 1 ;;
	esac
}

# install_mod SRC DST: install one kernel module, decompressed (6.12's Debian
# modules are .ko.xz; the guest's insmod of the stock copy and depmod of
# the mods layer then see plain .ko files, as with 6.1). DST names the
# uncompressed file.
install_mod() {
	mkdir -p "$(dirname "$2")"
	case $1 in
	*.ko.xz) xz -dc "$1" >"$2" ;;
	*.ko.zst) zstd -q -dc "$1" >"$2" ;;
	*.ko.gz) gzip -dc "$1" >"$2" ;;
	*) install -m 0644 "$1" "$2" ;;
	esac
}

copy_with_libs() {	# copy_with_libs ROOT BIN
	local root=$1 bin=$2 lib
	install -D -m 0755 "$bin" "$root$bin"
	for lib in $(ldd "$bin" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
		case $lib in
		*/ld-linux*) install -D -m 0755 "$lib" "$root/lib64/$(basename "$lib")" ;;
		*) [ -e "$root/lib/x86_64-linux-gnu/$(basename "$lib")" ] ||
			install -D -m 0644 "$lib" "$root/lib/x86_64-linux-gnu/$(basename "$lib")" ;;
		esac
	done
}

build_base() {
	local root=$ID/base m p d
	rm -rf "$root" && mkdir -p "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib/x86_64-linux-gnu,lib64,etc,proc,sys,dev,run,tmp,root,var}
	ln -s ../run "$root/var/run"
	install -m 0755 /bin/busybox "$root/bin/busybox"
	for a in $(/bin/busybox --list); do
		case " $NO_APPLET " in *" $a "*) continue ;; esac
		[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
	done
	for t in $TOOLS; do
		if [ -x "$t" ]; then
			copy_with_libs "$root" "$t"
		else
			echo "mkinitramfs: warning: $t not installed, left out" >&2
		fi
	done
	for a in modprobe insmod rmmod lsmod depmod modinfo; do
		ln -s /usr/bin/kmod "$root/sbin/$a"
	done
	echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
	echo "root:x:0:" >"$root/etc/group"
	: >"$root/etc/fstab"

	# kernel modules + their dependencies, same relative paths
	d=$root/lib/modules/$KVER
	mkdir -p "$d"
	for m in $KMODS; do
		p=$(awk -v m="$m" -F: '{ n = $1; sub(/.*\//, "", n); sub(/\.ko.*$/, "", n);
			gsub(/-/, "_", n); if (n == m) { print $1 $2; exit } }' "$MODSRC/modules.dep")
		if [ -z "$p" ]; then
			grep -q "/$m.ko" "$MODSRC/modules.builtin" ||
				echo "mkinitramfs: warning: module $m not found for $KVER" >&2
			continue
		fi
		for f in $p; do
			[ -e "$d/${f%.ko*}.ko" ] || install_mod "$MODSRC/$f" "$d/${f%.ko*}.ko"
		done
	done
	for f in modules.builtin modules.builtin.modinfo modules.order; do
		[ -e "$MODSRC/$f" ] && cp "$MODSRC/$f" "$d/"
	done
	# the stock driver, kept apart (not indexed by depmod)
	p=$(grep -o '^[^:]*ulp/ipoib/ib_ipoib\.ko[^:]*' "$MODSRC/modules.dep" || true)
	if [ -n "$p" ]; then
		install_mod "$MODSRC/$p" "$d/stock/ib_ipoib.ko"
	else
		echo "mkinitramfs: warning: no stock ib_ipoib.ko in $MODSRC" >&2
	fi
	cpio_dir "$root" | compress >"$ID/base.cpio.tmp"
	mv "$ID/base.cpio.tmp" "$ID/base.cpio"
}

build_mods() {
	local root=$ID/mods dep=$ID/depmod d
	rm -rf "$root" "$dep"
	d=$root/lib/modules/$KVER
	mkdir -p "$d"
	if [ -e "$KBUILD_DIR/softib/softib.ko" ]; then
		install -D -m 0644 "$KBUILD_DIR/softib/softib.ko" "$d/extra/softib.ko"
	fi
	if [ -e "$KBUILD_DIR/rdmacm/rdmacm_test.ko" ]; then
		install -D -m 0644 "$KBUILD_DIR/rdmacm/rdmacm_test.ko" "$d/extra/rdmacm_test.ko"
	fi
	if [ -e "$KBUILD_DIR/ipoib/ib_ipoib.ko" ]; then
		install -D -m 0644 "$KBUILD_DIR/ipoib/ib_ipoib.ko" "$d/updates/ib_ipoib.ko"
	fi
	find "$d" -name '*.ko' -exec strip --strip-debug {} +
	# depmod over kernel modules + ours, without the stock copy
	mkdir -p "$dep/lib/modules/$KVER" "$dep/conf"
	cp -a "$ID/base/lib/modules/$KVER/." "$dep/lib/modules/$KVER/"
	rm -rf "$dep/lib/modules/$KVER/stock"
	cp -a "$d/." "$dep/lib/modules/$KVER/"
	if [ -n "${INITRAMFS_EXTRA:-}" ] && [ -d "$INITRAMFS_EXTRA/lib/modules/$KVER" ]; then
		cp -a "$INITRAMFS_EXTRA/lib/modules/$KVER/." "$dep/lib/modules/$KVER/"
	fi
	echo "search updates extra built-in" >"$dep/conf/search.conf"
	depmod -b "$dep" -C "$dep/conf" "$KVER"
	cp "$dep/lib/modules/$KVER"/modules.* "$d/"
	rm -rf "$dep"
	cpio_dir "$root" >"$ID/mods.cpio"
}

build_tests() {
	local root=$ID/tests.$$
	rm -rf "$root"
	mkdir -p "$root/tests/vm"
	install -m 0755 "$REPO/tests/vm/guest/init" "$root/init"
	cp "$REPO/tests/lib.sh" "$root/tests/"
	cp -r "$REPO/tests/cases" "$root/tests/"
	mkdir -p "$root/tests/selftest"
	cp -r "$REPO/tests/selftest/cases" "$root/tests/selftest/"
	cp -r "$REPO/tests/vm/guest" "$root/tests/vm/"
	cpio_dir "$root" >"$ID/tests.cpio.$$"
	rm -rf "$root"
}

exec 9>"$KBUILD_DIR/.initramfs.lock"
flock -w 900 9

key=$( (cat "$0"; echo "$KVER $MODROOT $COMPRESS"; ls -l $TOOLS /bin/busybox 2>&1) | md5sum)
if [ ! -e "$ID/base.cpio" ] || [ "$(cat "$ID/base.key" 2>/dev/null)" != "$key" ]; then
	echo "mkinitramfs: building base layer for $KVER" >&2
	build_base
	echo "$key" >"$ID/base.key"
fi
# our modules may be rebuilt by a concurrent run: read them under the build lock
exec 8>"$KBUILD_DIR/.build.lock"
flock -s -w 900 8
build_mods
exec 8>&-
build_tests
# uncompressed layers first: the kernel's decompressors do not all accept
# trailing data after a compressed stream; no file is in more than one layer.
extra=()
if [ -n "${INITRAMFS_EXTRA:-}" ]; then
	cpio_dir "$INITRAMFS_EXTRA" >"$ID/extra.cpio.$$"
	extra=("$ID/extra.cpio.$$")
fi
cat "$ID/tests.cpio.$$" "$ID/mods.cpio" "${extra[@]}" "$ID/base.cpio" >"$OUT"
rm -f "$ID/tests.cpio.$$" "$ID/extra.cpio.$$"
