# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=dash
#
# Sourced (busybox sh) by tests/cases/nfsroot.sh on the server VM: an
# NFSv4-only knfsd with nfs-kernel-server's user space (exportfs, rpc.mountd,
# rpc.nfsd) and no rpcbind: NFSv4 clients connect to port 2049 directly, the
# kernel's registration of NFSv4 with rpcbind is optional, and lockd/statd
# are only for NFSv3. rpc.mountd is still needed: it answers the kernel's
# export-cache upcalls (which client may see which export), also for v4.

# nfs_server_start DIR CLIENTS: export DIR read-write with no root squashing
# to CLIENTS (an address/prefix) and start knfsd. DIR may be a tmpfs (fsid=
# is set, as tmpfs has no UUID).
nfs_server_start() {
	local dir="$1" clients="$2"
	# rpcsec_gss_krb5 too: the NFSv4 pseudo root lists the Kerberos
	# flavors in SECINFO replies, which nfsd warns about when it cannot map
	# them (it would load it on demand, as a full Debian system does)
	modprobe -a nfsd rpcsec_gss_krb5 || return 1
	grep -q ' /proc/fs/nfsd nfsd ' /proc/mounts ||
		mount -t nfsd nfsd /proc/fs/nfsd || return 1
	# the legacy client-tracking directory: with no tracking at all the
	# grace period cannot be ended early
	mkdir -p /var/lib/nfs/v4recovery
	: >/etc/exports
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	# the shortest grace period the kernel takes (s), in case ending it
	# below is refused
	echo 10 >/proc/fs/nfsd/nfsv4gracetime || return 1
	exportfs -o rw,no_root_squash,no_subtree_check,sync,fsid=1 "$clients:$dir" || return 1
	rpc.mountd --no-nfs-version 3 --no-udp || return 1
	rpc.nfsd --no-nfs-version 3 --no-udp --port 2049 4 || return 1
	# A fresh server has no client state to recover: end the NFSv4 grace
	# period now (what nfsdcld does when no client is left to reclaim).
	echo Y >/proc/fs/nfsd/v4_end_grace || return 1
	grep -qx Y /proc/fs/nfsd/v4_end_grace
}

# nfs_server_show: what a user would look at
nfs_server_show() {
	echo "nfsd versions: $(cat /proc/fs/nfsd/versions), threads: $(cat /proc/fs/nfsd/threads)"
	echo "exports:"
	exportfs -v
}

# nfs_server_has_client ADDR: an NFSv4 client at ADDR holds state (it
# mounted)
nfs_server_has_client() {
	grep -qs "address: \"$1:" /proc/fs/nfsd/clients/*/info
}
