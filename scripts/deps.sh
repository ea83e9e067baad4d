#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what building and testing ib_ipoib needs, with apt-get, only if
# something is missing. A second run checks and does nothing (well under a
# second). Must run as root when something is missing.
set -euo pipefail

PKGS=(
	make gcc perl bc xz-utils cpio zstd kmod util-linux libc-bin iproute2
	linux-image-amd64 linux-headers-amd64 linux-source-6.1 sparse
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	qemu-system-x86 busybox-static iputils-ping iperf3 ethtool
	rdma-core infiniband-diags ibverbs-utils opensm
	nfs-kernel-server libc6-dev
	dkms dh-dkms debhelper mmdebstrap
	dbus-daemon dnsmasq-base udev
	libglib2.0-0 libndp0 libteamdctl0 libmm-glib0 libbluetooth3 libjansson4
	libcurl3-gnutls libpsl5 libnm0 libnewt0.52 libreadline8
)
# NetworkManager runs in the guest only (tests/vm/nm/vm-hook.sh, the DHCP
# diskless boot): installed here, it would start managing the host's own
# interfaces, so its package is only unpacked into NM_DIR (build/deps/),
# with its libraries (above) installed. Unpacking needs no root.
REPO=$(cd "$(dirname "$0")/.." && pwd)
NM_DIR=${NM_DIR:-$REPO/build/deps/network-manager}
unpack_nm() {
	local tmp
	[ -x "$NM_DIR/usr/sbin/NetworkManager" ] && return 0
	tmp=$(mktemp -d)
	chmod a+rwx "$tmp"	# apt-get download writes as user _apt
	echo "deps: unpacking network-manager into ${NM_DIR#"$REPO"/} (not installed)"
	# (apt's package lists may be empty on a machine that lacked nothing else)
	{ (cd "$tmp" && apt-get download -q network-manager) ||
		{ [ "$(id -u)" = 0 ] && apt-get update -q &&
			(cd "$tmp" && apt-get download -q network-manager); }; } &&
		rm -rf "$NM_DIR" && mkdir -p "$NM_DIR" &&
		dpkg-deb -x "$tmp"/network-manager_*.deb "$NM_DIR"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}
# More for one target: make bench with BENCH_PROFILE=1 asks for linux-perf.
# shellcheck disable=SC2206
PKGS+=(${DEPS_EXTRA:-})

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done

# The default kernel is the newest installed 6.1 Debian headers, the 6.12
# tier's the newest 6.12 ones (Debian 12's security suite; "6.1." does not
# match 6.12); the VM needs the matching images too (a headers and an image
# metapackage may have been upgraded separately).
newest() {
	ls -d "/usr/src/linux-headers-$1".*-amd64 2>/dev/null | sed 's,.*/linux-headers-,,' |
		sort -V | tail -n 1 || true
}
kver=$(newest 6.1)
kver612=$(newest 6.12)
for k in $kver $kver612; do
	[ -e "/boot/vmlinuz-$k" ] || missing+=("linux-image-$k")
done

if [ ${#missing[@]} -eq 0 ]; then
	unpack_nm
	echo "deps: all present${kver:+ (kernels $kver $kver612)}"
	exit 0
fi

echo "deps: installing: ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
	echo "deps: need root to install packages (run: sudo $0)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null

kver=$(newest 6.1)
kver612=$(newest 6.12)
for k in $kver $kver612; do
	if [ ! -e "/boot/vmlinuz-$k" ]; then
		apt-get install -y -q --no-install-recommends "linux-image-$k" </dev/null
	fi
done
unpack_nm
echo "deps: done (kernels $kver $kver612)"
