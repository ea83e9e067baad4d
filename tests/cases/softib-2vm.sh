#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock/stock
# vms: 2
# timeout: 420
#
# softib's Ethernet transport between two VMs: each VM binds a softib device
# to eth0 (the QEMU socket link) with "rdma link add"; the LIDs come from the
# MACs (VM0 52:54:00:00:00:01 -> LID 1, VM1 -> LID 2) and sm_lid=1 puts the
# SM/SA in VM0, so VM1 joins the broadcast group and resolves paths through
# VM0's SA over the wire. The two ib0 then ping and ping6 each other, with
# datagrams up to the 2044-byte MTU. Then both go to connected mode (MTU
# 65520): RC over the wire (its PSNs, AckReq and ACKs in the wire format)
# carries 60000-byte pings with DF both ways and a TCP echo whose sha256
# matches.
. /tests/lib.sh

ME=$((VM_ID + 1))
PEER=$((2 - VM_ID))

check "eth0 mtu 4200" ip link set eth0 mtu 4200
check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=1" load_softib ndevs=0 sm_lid=1
check "rdma link add sib$VM_ID type softib netdev eth0" rdma link add "sib$VM_ID" type softib netdev eth0
check "sib$VM_ID has LID $ME, SM LID 1, ACTIVE" sh -c \
	"rdma link show sib$VM_ID/1 | grep -q 'lid $ME sm_lid 1 .*state ACTIVE'"
check "IB MTU 4096 over eth0" grep -q "ib_mtu 4096" "$(sib "sib$VM_ID" eth)"
# both SA ends exist before either ipoib starts joining
check "barrier: softib bound on both VMs" vm_barrier bound 120

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
check "ib0 addresses" sh -c "/usr/sbin/ip addr add 10.88.0.$ME/24 dev ib0 &&
	/usr/sbin/ip -6 addr add fd88::$ME/64 dev ib0 nodad && /usr/sbin/ip link set ib0 up"
check_wait "ib0 carrier up (broadcast group joined through VM0's SA)" 120 \
	sh -c '/usr/sbin/ip -o link show dev ib0 | grep -q LOWER_UP'
check "barrier: ib0 up on both VMs" vm_barrier ib0up 180

check_wait "ping the other VM over ib0" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check_wait "ping6 the other VM over ib0" 60 ping -6 -c 1 -W 2 "fd88::$PEER"
check "2044-byte datagrams with DF pass" ping -c 2 -W 3 -M "do" -s 2016 "10.88.0.$PEER"
check "5 pings" ping -c 5 -i 0.3 -W 3 "10.88.0.$PEER"
check "unicast went to the peer's MAC" sh -c \
	"awk '\$1 == \"tx_unicast\" && \$2 > 0 { f = 1 } END { exit !f }' $(sib "sib$VM_ID" eth)"
check "the peer's MAC was learned" grep -q "l2 0x000$PEER 52:54:00:00:00:0$PEER" "$(sib "sib$VM_ID" eth)"
check "no frame refused by the parser" sh -c \
	"awk '\$1 == \"rx_bad\" && \$2 == 0 { f = 1 } END { exit !f }' $(sib "sib$VM_ID" eth)"

# --- connected mode: RC over the Ethernet transport ---
check "ib0 to connected mode, MTU 65520" sh -c \
	"/usr/sbin/ip link set ib0 type ipoib mode connected && /usr/sbin/ip link set ib0 mtu 65520"
[ "$VM_ID" = 1 ] && tcp_echo_serve - 7001
check "barrier: connected on both VMs" vm_barrier connected 120
check_wait "connected: 60000-byte ping with DF to the other VM" 60 \
	ping -c 1 -W 5 -M "do" -s 60000 "10.88.0.$PEER"
[ "$VM_ID" = 0 ] && tcp_echo_check "connected, over the wire" - 10.88.0.2 7001 1024
check "connected: RC packets went over the wire ($(sib_counter "sib$VM_ID" rc_tx) sent)" \
	sib_counter_ge "sib$VM_ID" rc_tx 1
check "connected: no frame refused by the parser" sh -c \
	"awk '\$1 == \"rx_bad\" && \$2 == 0 { f = 1 } END { exit !f }' $(sib "sib$VM_ID" eth)"

# the other VM still needs our SA / answers until it is done
check "barrier: both done" vm_barrier finished 180

check "unload everything" unload_all
