#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours/stock stock/ours
# vms: 2
# timeout: 480
# tier: 612
# sm: embedded opensm
#
# Interoperability with the in-tree driver: our ib_ipoib in one VM and the
# stock one in the other (then swapped), over softib's Ethernet transport
# (SM/SA in VM0). ARP, ping, ping6 and iperf3 TCP in both directions.
# Under OpenSM, OpenSM runs in VM0 and manages both VMs' ports: its SMPs
# cross the Ethernet transport, VM1's port gets its LID from it and VM1's
# SA queries go to it.
. /tests/lib.sh

ME=$((VM_ID + 1))
PEER=$((2 - VM_ID))

check "eth0 mtu 4200" ip link set eth0 mtu 4200
check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=1" load_softib ndevs=0 sm_lid=1
check "rdma link add sib$VM_ID type softib netdev eth0" rdma link add "sib$VM_ID" type softib netdev eth0
check "barrier: softib bound on both VMs" vm_barrier bound 120
if [ "$SM_MODE" = opensm ]; then
	check "sib$VM_ID ACTIVE with a LID from OpenSM (in VM0)" sm_up "sib$VM_ID"
	if [ "$VM_ID" = 1 ]; then
		check "sib1: the SM is in the other VM (sm_lid $(port_sm_lid sib1), own LID $(port_lid sib1))" \
			sh -c '. /tests/lib.sh; [ "$(port_sm_lid sib1)" != 0 ] && [ "$(port_sm_lid sib1)" != "$(port_lid sib1)" ]'
		check_wait "sminfo from VM1 finds OpenSM master across the Ethernet" 30 \
			sh -c "sminfo -C sib1 | grep -q 'sm lid $(port_sm_lid sib1) .*SMINFO_MASTER'"
		check_wait "saquery from VM1: OpenSM's NodeRecords list both VMs' ports" 30 \
			sh -c "saquery -C sib1 | grep -c 'NodeRecord dump' | grep -qx 2"
	fi
fi

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
check "ib0 addresses" sh -c "/usr/sbin/ip addr add 10.88.0.$ME/24 dev ib0 &&
	/usr/sbin/ip -6 addr add fd88::$ME/64 dev ib0 nodad && /usr/sbin/ip link set ib0 up"
check_wait "ib0 carrier up" 120 sh -c '/usr/sbin/ip -o link show dev ib0 | grep -q LOWER_UP'
check "barrier: ib0 up on both VMs" vm_barrier ib0up 180

check_wait "ping the $([ "$VM_ID" = 0 ] && echo VM1 || echo VM0) driver over ib0" 60 ping -c 1 -W 2 "10.88.0.$PEER"
check "ARP resolved the peer" sh -c "/usr/sbin/ip neigh show 10.88.0.$PEER dev ib0 | grep -q lladdr"
check_wait "ping6 the peer" 60 ping -6 -c 1 -W 2 "fd88::$PEER"
check "2044-byte datagrams with DF pass" ping -c 2 -W 3 -M do -s 2016 "10.88.0.$PEER"
check "5 pings" ping -c 5 -i 0.3 -W 3 "10.88.0.$PEER"

iperf3 -s -D -p 5201 >/dev/null 2>&1
check "barrier: iperf3 servers up" vm_barrier iperf 120
# VM0 sends first, then VM1: one direction at a time.
for turn in 0 1; do
	if [ "$turn" = "$VM_ID" ]; then
		out=$(iperf3 -c "10.88.0.$PEER" -p 5201 -t 5 -J 2>&1)
		bps=$(echo "$out" | awk -F: '/"sum_received"/ { s = 1 } s && /"bits_per_second"/ { gsub(/[ ,]/, "", $2); print int($2); exit }')
		if [ "${bps:-0}" -gt 0 ] 2>/dev/null; then
			ok "iperf3 TCP to the peer ($IPOIB_DRIVER sends): $bps bit/s"
		else
			fail "iperf3 TCP to the peer ($IPOIB_DRIVER sends)" "$(echo "$out" | tail -n 3)"
		fi
	fi
	check "barrier: iperf3 turn $turn done" vm_barrier "turn$turn" 120
done
killall iperf3 2>/dev/null
check "barrier: both done" vm_barrier done 180

check "unload everything" unload_all
