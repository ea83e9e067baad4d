#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side VM hook of tests/cases/nfsroot.sh (see tests/vm/vmhook.sh):
#
#   tests/vm/nfsroot/vm-hook.sh VM_ID DIR
#
# VM0 is the diskless client: its initramfs gets the boot hook
# (ipoib-nfsroot.sh) and the NFS client modules; its kernel command line
# the usual ip= and nfsroot=. VM1 is the head node (NFS server and the SM):
# its initramfs gets knfsd (nfsd.ko, exportfs, rpc.mountd, rpc.nfsd with
# their shared libraries) and the image of the root filesystem it exports:
# busybox, /sbin/init (nfs-init) and /tests/lib.sh.
# With NFSROOT_DHCP=1 (tests/vm/nfsroot/vm-hook-dhcp.sh): the client's
# command line says ip=::::node1:ib0:dhcp and nothing else, its initramfs gets
# NetworkManager (the DHCP client) with nmcli, dbus-daemon and udevd; the
# head node's gets dnsmasq (the DHCP server, with the root path).
# Env (from tests/vm/kernel.sh): REPO BUILD KVER MODROOT.
set -euo pipefail

# The addresses, in one place: both VMs read them from their command line.
CLIENT=10.88.0.1
SERVER=10.88.0.2
NETMASK=255.255.255.0
EXPORT=/srv/nfsroot

VM=$1
ROOT=$2/root
DHCP=${NFSROOT_DHCP:-0}	# 1: the client takes its address and root from DHCP
HERE=$(cd "$(dirname "$0")" && pwd)
MODSRC=$MODROOT/lib/modules/$KVER
BASE=$BUILD/$KVER/initramfs/base	# files already in the common initramfs

# shellcheck source=tests/vm/hooklib.sh
. "$HERE/../hooklib.sh"

add_kmods() {	# add_kmods MODULE...: with their dependencies from modules.dep
	local m p f
	for m in "$@"; do
		p=$(awk -v m="$m" -F: '{ n = $1; sub(/.*\//, "", n); sub(/\.ko.*$/, "", n);
			gsub(/-/, "_", n); if (n == m) { print $1 $2; exit } }' "$MODSRC/modules.dep")
		if [ -z "$p" ]; then
			grep -q "/$m.ko" "$MODSRC/modules.builtin" && continue	# built in
			echo "vm-hook: module $m not found for $KVER" >&2
			return 1
		fi
		for f in $p; do
			[ -e "$BASE/lib/modules/$KVER/$f" ] || [ -e "$ROOT/lib/modules/$KVER/$f" ] ||
				install -D -m 0644 "$MODSRC/$f" "$ROOT/lib/modules/$KVER/$f"
		done
	done
}

# the image of the exported root filesystem
make_nfsroot_image() {	# make_nfsroot_image DIR
	local img=$1 a
	mkdir -p "$img"/{bin,sbin,etc,dev,proc,sys,run,tmp,root,var/tmp,tests}
	install -m 0755 /bin/busybox "$img/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ -e "$img/bin/$a" ] || ln -s busybox "$img/bin/$a"
	done
	install -m 0755 "$HERE/nfs-init" "$img/sbin/init"
	install -m 0644 "$REPO/tests/lib.sh" "$img/tests/lib.sh"
	echo "root:x:0:0:root:/root:/bin/sh" >"$img/etc/passwd"
	echo "root:x:0:" >"$img/etc/group"
	: >"$img/etc/fstab"
	chmod 1777 "$img/tmp" "$img/var/tmp"
}

mkdir -p "$ROOT/tests/vm/nfsroot"
install -m 0755 "$HERE/ipoib-nfsroot.sh" "$ROOT/tests/vm/nfsroot/"
case $VM in
0)
	add_kmods nfsv4
	if [ "$DHCP" = 1 ]; then
		# NetworkManager's DHCP client, as dracut's network-manager
		# module has it; the address and the root path from the lease
		copy_nm
		mkdir -p "$ROOT/etc"
		printf '%032x\n' $((0x1b0d0100)) >"$ROOT/etc/machine-id"
		echo "ip=::::node1:ib0:dhcp" >"$2/append"
	else
		echo "ip=$CLIENT:$SERVER::$NETMASK:node1:ib0:off nfsroot=$SERVER:$EXPORT" >"$2/append"
	fi
	;;
1)
	install -m 0644 "$HERE/nfs-server.sh" "$ROOT/tests/vm/nfsroot/"
	add_kmods nfsd rpcsec_gss_krb5
	copy_with_libs /usr/sbin/exportfs /usr/sbin/rpc.mountd /usr/sbin/rpc.nfsd
	install -D -m 0644 /etc/netconfig "$ROOT/etc/netconfig"
	printf '127.0.0.1 localhost\n%s node1\n%s head\n' "$CLIENT" "$SERVER" >"$ROOT/etc/hosts"
	mkdir -p "$ROOT/var/lib/nfs" "$ROOT/srv"
	make_nfsroot_image "$ROOT/srv/nfsroot-image"
	if [ "$DHCP" = 1 ]; then
		# the DHCP server: one address (the export's client), the root path
		copy_with_libs /usr/sbin/dnsmasq
		echo "ip=$SERVER:::$NETMASK:head:ib0:off nfsexport=$EXPORT nfsclient=$CLIENT nfsdhcp=1" >"$2/append"
	else
		echo "ip=$SERVER:::$NETMASK:head:ib0:off nfsexport=$EXPORT nfsclient=$CLIENT" >"$2/append"
	fi
	;;
*)
	echo "vm-hook: VM $VM: no role" >&2
	exit 1
	;;
esac
