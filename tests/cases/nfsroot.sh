#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours/stock
# vms: 2
# timeout: 240
# vm-hook: tests/vm/nfsroot/vm-hook.sh
#
# A diskless node boots with its root filesystem on NFS over ib0
# (Documentation/nfsroot.rst). VM1 is the head node: it runs the SM/SA
# (sm_lid=2, its LID) and knfsd (NFSv4 only, no rpcbind), exporting a
# busybox root filesystem from a tmpfs. VM0 is the diskless client: its
# initramfs runs the boot hook tests/vm/nfsroot/ipoib-nfsroot.sh step by
# step (modprobe ib_ipoib, ip= from the kernel command line, wait for
# carrier, wait for the server, mount -t nfs4) and hands PID 1 over with
# switch_root (tests/vm/guest/handoff.sh) to /sbin/init on the NFS root
# (tests/vm/nfsroot/nfs-init), which writes a marker file there, prints the
# boot time and finishes the boot.
# The head node's port flaps during the client's boot: it goes down before
# the client loads ib_ipoib and comes back up only once the client's joins
# have reached the downed port, so the client waits for carrier through
# the outage, then gets it, and the mount proceeds.
# nfsroot-dhcp.sh runs this with the address from DHCP (and the other
# driver pairs: ours as the head node, each driver as the client).
. /tests/lib.sh
# shellcheck source=tests/vm/nfsroot/ipoib-nfsroot.sh
. /tests/vm/nfsroot/ipoib-nfsroot.sh

SM_LID=2	# the head node's LID (MAC 52:54:00:00:00:02)
NEWROOT=/newroot

# step NAME CMD...: like check, but CMD runs in this shell (it may set
# variables) and its output goes to the console as it comes
step() {
	local name=$1
	shift
	if "$@"; then
		ok "$name"
		return 0
	fi
	fail "$name" "'$*' failed (see the console log)"
	return 1
}

eth_stat() {	# eth_stat NAME: a counter of softib's Ethernet binding
	awk -v n="$1" '$1 == n { print $2 }' "$(sib "sib$VM_ID" eth)"
}

check "eth0 mtu 4200" ip link set eth0 mtu 4200

server() {
	local exp client rx0 me dhcp
	exp=$(sed -n 's/.*nfsexport=\([^ ]*\).*/\1/p' /proc/cmdline)
	dhcp=$(sed -n 's/.*nfsdhcp=\([^ ]*\).*/\1/p' /proc/cmdline)
	client=$(sed -n 's/.*nfsclient=\([^ ]*\).*/\1/p' /proc/cmdline)
	step "parse ip= from the kernel command line" ipoib_nfsroot_parse_ip || return 1
	me=$IPN_CLIENT	# ip= describes this node
	check "load the IB core" load_ib_core
	check "load softib ndevs=0 sm_lid=$SM_LID" load_softib ndevs=0 sm_lid=$SM_LID
	check "rdma link add sib1 type softib netdev eth0" rdma link add sib1 type softib netdev eth0
	check "sib1 is the SM (LID $SM_LID), ACTIVE" sh -c \
		"rdma link show sib1/1 | grep -q 'lid $SM_LID sm_lid $SM_LID .*state ACTIVE'"

	# the exported root: a tmpfs with the image made by the VM hook
	# shellcheck source=tests/vm/nfsroot/nfs-server.sh
	. /tests/vm/nfsroot/nfs-server.sh
	check "root image on a tmpfs at $exp" sh -c \
		"mkdir -p $exp && mount -t tmpfs -o mode=0755 nfsroot $exp &&
		 cp -a /srv/nfsroot-image/. $exp/"
	check "knfsd exports $exp to $client (NFSv4 only, no rpcbind)" \
		nfs_server_start "$exp" "$client"
	nfs_server_show
	check "rpc.mountd runs (for the export cache), no rpcbind" sh -c \
		'pidof rpc.mountd && ! pidof rpcbind'

	check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
	step "ib0 appears" ipoib_nfsroot_load
	step "ib0 $me/$IPN_PREFIX up" ipoib_nfsroot_configure
	check_wait "ib0 carrier" 60 grep -qx 1 /sys/class/net/ib0/carrier
	if [ "$dhcp" = 1 ]; then
		# one address to lease, the export's client, for good (the
		# client's DHCP client goes before switch_root)
		/usr/sbin/dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 \
			--user=root --group=root --bind-interfaces --interface=ib0 \
			--dhcp-range="$client,$client,255.255.255.0,infinite" \
			--dhcp-option-force="option:root-path,$me:$exp" \
			--dhcp-leasefile=/tmp/dnsmasq.leases --dhcp-authoritative \
			--log-dhcp --log-facility=- >/tmp/dnsmasq.log 2>&1 &
		check_wait "dnsmasq serves DHCP on ib0 (root path $me:$exp)" 20 sh -c \
			"ss -Hlun | grep -q ':67 '"
	fi

	# the port flap, while the client boots
	check "port down" sh -c "echo down >$(sib sib1 state)"
	check "sib1 DOWN" grep -qx DOWN "$(sib sib1 state)"
	echo "nfsroot: head node port down at $(cut -d' ' -f1 /proc/uptime)s"
	check "barrier: head node port down" vm_barrier portdown 120
	check "barrier: client ib0 up, no carrier" vm_barrier linkup 120
	# down until one broadcast join of the client has timed out: the SA
	# client sends a request 10 times (ib_sa: 10 retries) before giving up
	rx0=$(eth_stat rx_frames)
	check_wait "the client's join requests hit the downed port (10 more frames)" 60 \
		sh -c "[ \$(awk '\$1 == \"rx_frames\" { print \$2 }' $(sib sib1 eth)) -ge $((rx0 + 10)) ]"
	check "port up" sh -c "echo up >$(sib sib1 state)"
	echo "nfsroot: head node port up at $(cut -d' ' -f1 /proc/uptime)s"
	check_wait "sib1 ACTIVE (after INIT and ARMED)" 10 grep -qx ACTIVE "$(sib sib1 state)"
	check_wait "ib0 carrier back" 60 grep -qx 1 /sys/class/net/ib0/carrier

	check "barrier: the client's initramfs is done" vm_barrier initramfs 180
	if [ "$dhcp" = 1 ]; then
		grep DHCP /tmp/dnsmasq.log
		cat /tmp/dnsmasq.leases
		check "dnsmasq leased $client: htype 32, empty chaddr, a client identifier (RFC 4390)" \
			awk -v ip="$client" '$3 == ip && $2 == "20-" && $5 != "*" { f = 1 } END { exit !f }' \
			/tmp/dnsmasq.leases
	fi
	check "the client mounted (it holds NFSv4 state)" nfs_server_has_client "$client" ||
		return 1
	# what the client's /sbin/init on the NFS root wrote
	check_wait "the client's /sbin/init wrote $exp/booted.node1" 90 \
		test -s "$exp/booted.node1"
	check "with this boot's nonce" grep -q "^$TEST_NONCE node1 " "$exp/booted.node1"
	cat "$exp/booted.node1"
	check_wait "the client is done with its NFS root" 120 test -s "$exp/done.node1"
	check_wait "the client powered off" 30 sh -c "! ping -c 1 -W 1 $client"
	grep -v ' 0$' "$(sib sib1 eth)" "$(sib sib1 counters)"
}

# loaded_ipoib_is ours|stock: ours is an out-of-tree module (taint flag O)
loaded_ipoib_is() {
	local t
	t=$(cat /sys/module/ib_ipoib/taint) || return 1
	case $1 in
	ours) [ "${t#*O}" != "$t" ] ;;
	stock) [ "${t#*O}" = "$t" ] ;;
	esac
}

client() {
	cut -d' ' -f1 /proc/uptime >"$_T_STATE/nfsroot.t0"	# for nfs-init
	# the HCA driver (udev would load it) and the cable
	check "modprobe softib ndevs=0 sm_lid=$SM_LID" load_softib ndevs=0 sm_lid=$SM_LID
	check "rdma link add sib0 type softib netdev eth0" rdma link add sib0 type softib netdev eth0
	check "barrier: head node port down" vm_barrier portdown 120
	client_initramfs
	# the head node goes on once the initramfs is done, well or not
	check "barrier: the client's initramfs is done" vm_barrier initramfs 180
}

client_initramfs() {
	# the boot hook, step by step
	step "parse ip= and nfsroot= from the kernel command line" ipoib_nfsroot_cmdline || return 1
	if [ "$IPOIB_DRIVER" = stock ]; then
		# the stock copy is kept apart from depmod: loaded here, the
		# hook's modprobe then finds it loaded
		check "load stock ib_ipoib" load_ipoib || return 1
	fi
	step "modprobe ib_ipoib, ib0 appears" ipoib_nfsroot_load || return 1
	check "the loaded ib_ipoib is $IPOIB_DRIVER (out-of-tree taint flag)" loaded_ipoib_is "$IPOIB_DRIVER"
	if [ "$IPN_DHCP" = 1 ]; then
		step "ib0 up, its DHCP client (NetworkManager) started" ipoib_nfsroot_configure || return 1
	else
		step "ib0 $IPN_CLIENT/$IPN_PREFIX up" ipoib_nfsroot_configure || return 1
	fi
	check "no carrier: the SM's port is down" grep -qx 0 /sys/class/net/ib0/carrier
	check "barrier: client ib0 up, no carrier" vm_barrier linkup 120
	step "ib0 carrier, through the head node's port flap" ipoib_nfsroot_wait_carrier || return 1
	ok "carrier ${IPN_CARRIER_S}s after ib0 was set up (SM port down meanwhile)"
	if [ "$IPN_DHCP" = 1 ]; then
		step "a DHCP lease over ib0 (RFC 4390) with the root path" ipoib_nfsroot_wait_lease ||
			return 1
		check "ib0 holds the leased $IPN_CLIENT/$IPN_PREFIX" sh -c \
			"ip -4 addr show dev ib0 | grep -q 'inet $IPN_CLIENT/$IPN_PREFIX '"
		check "the root from DHCP: $NFSROOT_SERVER:$NFSROOT_PATH, server $IPN_SERVER" \
			test -n "$NFSROOT_PATH" -a "$NFSROOT_SERVER" = "$IPN_SERVER"
		check "the DHCP client is gone, the address stays" sh -c \
			"! pidof NetworkManager dbus-daemon systemd-udevd && ip -4 addr show dev ib0 | grep -q 'inet $IPN_CLIENT/'"
	fi
	step "server $NFSROOT_SERVER answers" ipoib_nfsroot_wait_server || return 1
	step "mount $NFSROOT_SERVER:$NFSROOT_PATH (nfs4) on $NEWROOT" \
		ipoib_nfsroot_mount "$NEWROOT" || return 1
	check "$NEWROOT/sbin/init is there" test -x "$NEWROOT/sbin/init" || return 1
	# /init hands PID 1 over (tests/vm/guest/handoff.sh)
	echo "$NEWROOT /sbin/init" >"$_T_STATE/handoff"
}

if [ "$VM_ID" = 1 ]; then
	server
else
	client
fi
