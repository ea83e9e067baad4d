#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours/stock stock/ours
# vms: 2
# timeout: 360
#
# Enhanced IPoIB (issue 30) across two VMs and two drivers: VM0's softib
# offers the enhanced datapath (rdma link add with enhanced=1, as a
# ConnectX-4 does), VM1's does not (a ConnectX-3, or enhanced=0), so one
# side sends through the provider's underlay QP and the other through the
# driver's own UD QP; with ours in VM0 and stock in VM1, then swapped. ARP,
# ping, ping6, 2044-byte datagrams with DF, TCP data there and back (sha256)
# with each side connecting, a P_Key child (0x8001) each side; then VM1
# (legacy) in connected mode, and VM0 too when it runs ours (connected mode
# beside the enhanced datapath, which the in-tree driver refuses): RC
# between the two, 60000-byte pings with DF; with stock in VM0, VM1
# reaches it over UD. The SM/SA is VM0's.
. /tests/lib.sh

ME=$((VM_ID + 1))
PEER=$((2 - VM_ID))
ENH=$([ "$VM_ID" = 0 ] && echo 1 || echo 0)
# VM1 sees VM0 in connected mode when VM0 runs ours (ours/stock)
PEER_DRIVER_CM=$([ "$VM_ID" = 1 ] && [ "$IPOIB_DRIVER" = stock ] && echo 1 || echo 0)
ethtool() { /usr/sbin/ethtool "$@"; }
drv_is() { [ "$(ethtool -i ib0 | awk '$1 == "driver:" { print $2 }')" = "$1" ]; }

check "eth0 mtu 4200" ip link set eth0 mtu 4200
check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=1 enhanced=$ENH" load_softib ndevs=0 sm_lid=1 enhanced=$ENH
check "rdma link add sib$VM_ID type softib netdev eth0" rdma link add "sib$VM_ID" type softib netdev eth0
check "barrier: softib bound on both VMs" vm_barrier bound 120
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
if [ "$ENH" = 1 ]; then
	check "VM0: ib0 on the enhanced datapath (ethtool -i: softib[ib_ipoib])" drv_is 'softib[ib_ipoib]'
else
	check "VM1: ib0 on the driver's own datapath (ethtool -i: ib_ipoib)" drv_is ib_ipoib
fi
check "ib0 addresses" sh -c "/usr/sbin/ip addr add 10.88.0.$ME/24 dev ib0 &&
	/usr/sbin/ip -6 addr add fd88::$ME/64 dev ib0 nodad && /usr/sbin/ip link set ib0 up"
check_wait "ib0 carrier up" 120 sh -c '/usr/sbin/ip -o link show dev ib0 | grep -q LOWER_UP'
check "barrier: ib0 up on both VMs" vm_barrier ib0up 180

check_wait "ping the peer over ib0" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check "ARP resolved the peer" sh -c "/usr/sbin/ip neigh show 10.88.0.$PEER dev ib0 | grep -q lladdr"
check_wait "ping6 the peer" 60 ping -6 -c 1 -W 2 "fd88::$PEER"
check "2044-byte datagrams with DF pass" ping -c 2 -W 3 -M do -s 2016 "10.88.0.$PEER"
check "TCP echo server on ib0" tcp_echo_serve - 5202
check "barrier: echo servers up" vm_barrier tcpecho 120
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		tcp_echo_check "TCP to the peer and back ($IPOIB_DRIVER, $([ "$ENH" = 1 ] && echo enhanced || echo legacy), connects)" \
			- "10.88.0.$PEER" 5202 4096
	fi
	check "barrier: TCP turn $turn done" vm_barrier "turn$turn" 180
done

# --- a P_Key child (partition 0x8001) on each side ---
check "P_Key 0x8001 at index 1 of sib$VM_ID" pkey_set "sib$VM_ID" 1 0x8001
check "child ib0.8001" ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "ib0.8001 address, up" sh -c "/usr/sbin/ip addr add 10.89.0.$ME/24 dev ib0.8001 &&
	/usr/sbin/ip link set ib0.8001 up"
check_wait "ib0.8001 carrier up" 60 sh -c '/usr/sbin/ip -o link show dev ib0.8001 | grep -q LOWER_UP'
check "barrier: children up on both VMs" vm_barrier child 120
check_wait "partition 0x8001: ping the peer's child" 60 ping -c 1 -W 2 "10.89.0.$PEER"
check "barrier: children done" vm_barrier childdone 120

# --- VM1 (legacy) in connected mode; VM0 (enhanced) datagram with the
# stock driver (it refuses connected mode there), connected too with ours
# (beside the provider's datagram datapath): RC between ours on an
# enhanced HCA and the in-tree driver on a legacy one ---
if [ "$VM_ID" = 1 ]; then
	check "VM1: ib0 to connected mode" ip link set ib0 type ipoib mode connected
elif [ "$IPOIB_DRIVER" = ours ]; then
	check "VM0 (ours, enhanced): ib0 to connected mode" ip link set ib0 type ipoib mode connected
	CM0=1
fi
check "barrier: connected" vm_barrier cmmode 120
if [ "$VM_ID" = 1 ] && [ "$IPOIB_DRIVER" = ours ]; then
	check_wait "VM1: the stock driver's enhanced address has no connected-mode flag" 20 sh -c \
		"/usr/sbin/ip neigh show 10.88.0.$PEER dev ib0 | grep -q 'lladdr 00:'"
fi
check_wait "ping the peer with VM1 connected" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check "1000-byte pings with VM1 connected" ping -c 3 -i 0.3 -W 3 -s 1000 "10.88.0.$PEER"
if [ "$PEER_DRIVER_CM" = 1 ] || [ "${CM0:-0}" = 1 ]; then
	rc0=$(sib_counter "sib$VM_ID" rc_tx)
	check_wait "both connected: 60000-byte ping with DF to the peer (RC)" 60 \
		ping -c 1 -W 5 -M do -s 60000 "10.88.0.$PEER"
	check "both connected: our sends went over RC (rc_tx $rc0 -> $(sib_counter "sib$VM_ID" rc_tx))" \
		test "$(sib_counter "sib$VM_ID" rc_tx)" -ge $((rc0 + 5))
fi
check "barrier: both done" vm_barrier done 180

check "unload everything" unload_all
