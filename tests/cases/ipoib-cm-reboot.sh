#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock ours
# vms: 1
# boot: shared
# timeout: 420
# debug-drivers: ours
#
# Connected mode when a peer reboots: two hosts over softib's Ethernet
# transport (veths on a bridge, as softib-eth), both in connected mode with
# connections up both ways. Host 2 then "reboots": its cable goes dark
# first (bridge port down), so nothing it sends on the way down (DREQs)
# reaches host 1, its device is deleted, the cable comes back and the device
# is added again (same MAC, so the same LID and GID; a fresh device, so QP
# numbers start over). Host 1 still holds a connection to a QP that no
# longer exists and a passive one nobody will use again. The stale sending
# side must be noticed (retries exhausted, or the neighbour's new address)
# and a new connection made: 60000-byte pings with DF both ways and a TCP
# echo with an equal sha256 within a minute. The stale passive end goes
# too: by ib_cm's stale-connection check when host2's new REQ comes from a
# QPN that an old connection still names (QPNs start over), else by ours'
# idle reaper (cm_rx_idle): with the live ends kept busy, host1 ends with
# exactly its two live RC QPs. (The stock driver reaps idle passive ends
# after 512 s: its count is printed.) On the debug tier, kmemleak sees
# that nothing of the stale connections leaked.
. /tests/lib.sh

SM_LID=17	# 0x11: the LID of sibeth1 (MAC 02:00:00:00:00:11)

# host I: host I's interface in netns hI, addressed, connected mode, MTU 65520
host() {
	local ibif
	ibif=$(ib_of_lid "$(eth_lid "$1")") || return 1
	eval "IB$1=$ibif"
	make_host "h$1" "$ibif" "10.78.0.$1/24" "fd78::$1/64" || return 1
	in_host "h$1" ip link set "$ibif" type ipoib mode connected || return 1
	in_host "h$1" ip link set "$ibif" mtu 65520
}

big_ping() { in_host "h$1" ping -c 1 -W 5 -M "do" -s 60000 "10.78.0.$2" >/dev/null 2>&1; }
# rc_qps IBDEV: RC QPs on IBDEV (ours and stock make one per connection end)
rc_qps() { rdma res show qp link "$1/1" 2>/dev/null | grep -c "type RC"; }

check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=$SM_LID" load_softib ndevs=0 sm_lid=$SM_LID
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check "load veth and bridge" modprobe -a veth bridge
check "bridge brcm" sh -c '/usr/sbin/ip link add brcm type bridge forward_delay 0 && /usr/sbin/ip link set brcm up'
for i in 1 2; do
	check "veth sibr$i on brcm" eth_lower_add "sibr$i" "brr$i" brcm $i
	check "rdma link add sibeth$i" rdma link add "sibeth$i" type softib netdev "sibr$i"
	check_wait "host$i: interface in h$i, connected mode, MTU 65520" 20 host $i
done
check_wait "host1: carrier" 90 _t_has_carrier h1 "$IB1"
check_wait "host2: carrier" 90 _t_has_carrier h2 "$IB2"

check_wait "60000-byte ping with DF host1 -> host2" 60 big_ping 1 2
check_wait "60000-byte ping with DF host2 -> host1" 60 big_ping 2 1
tcp_echo_serve h2 7021
tcp_echo_check "connected, before the reboot" h1 10.78.0.2 7021 1024
check "connections both ways: RC QPs on sibeth1 ($(rc_qps sibeth1))" test "$(rc_qps sibeth1)" -ge 2
old_addr=$(in_host h1 ip neigh show 10.78.0.2 dev "$IB1" | sed -n 's/.*lladdr \([^ ]*\).*/\1/p')
x0=$(sib_counter sibeth1 rc_retry_exc)

# --- host2 reboots: dark first, so nothing of its teardown gets out ---
check "host2's cable dark (bridge port brr2 down)" ip link set brr2 down
check "host2's device deleted (rdma link delete sibeth2)" rdma link delete sibeth2
check_wait "host2's interface gone" 20 sh -c "! /usr/sbin/ip -n h2 link show dev $IB2 2>/dev/null"
check "host2's netns gone" ip netns del h2
check "host1 kept its connections (RC QPs on sibeth1: $(rc_qps sibeth1))" test "$(rc_qps sibeth1)" -ge 2
check "host2's cable back (brr2 up)" ip link set brr2 up
check "host2's device added again" rdma link add sibeth2 type softib netdev sibr2
check_wait "host2 after the reboot: interface in h2, connected mode" 20 host 2
check_wait "host2 after the reboot: carrier" 90 _t_has_carrier h2 "$IB2"
in_host h1 ip neigh show dev "$IB1"
echo "host2's address before the reboot: $old_addr"
echo "host2's address after:              $(in_host h2 cat /sys/class/net/"$IB2"/address)"

check_wait "after the reboot: 60000-byte ping with DF host1 -> host2" 60 big_ping 1 2
check_wait "after the reboot: 60000-byte ping with DF host2 -> host1" 60 big_ping 2 1
tcp_echo_serve h2 7022
tcp_echo_check "connected, after the reboot" h1 10.78.0.2 7022 4096
echo "host1's sends that failed on the stale connection: $(($(sib_counter sibeth1 rc_retry_exc) - x0))"
rdma res show qp link sibeth1/1 | grep "type RC"

if [ "$IPOIB_DRIVER" = stock ]; then
	echo "stock: RC QPs on sibeth1 after the reboot: $(rc_qps sibeth1)"
else
	# a stale passive connection gets nothing any more: cm_rx_idle
	# closes it (if ib_cm has not), while a 60000-byte ping every 0.3 s keeps the two live
	# connection ends of host1 (its sender, its receiver) busy
	P=/sys/module/ib_ipoib/parameters/cm_rx_idle
	in_host h1 ping -i 0.3 -s 60000 10.78.0.2 </dev/null >/dev/null 2>&1 &
	check "cm_rx_idle=3" sh -c "echo 3 >$P"
	check_wait "the stale connections of host1 are gone, the live ones stay: 2 RC QPs on sibeth1" 30 \
		sh -c "n=\$(rdma res show qp link sibeth1/1 | grep -c 'type RC'); echo \$n; [ \$n = 2 ]"
	check "cm_rx_idle back to 512" sh -c "echo 512 >$P"
	r0=$(in_host h1 cat /sys/class/net/"$IB1"/statistics/rx_packets)
	check_wait "the live connections carry the pings on" 10 sh -c \
		"[ \$(/usr/sbin/ip netns exec h1 cat /sys/class/net/$IB1/statistics/rx_packets) -ge $((r0 + 10)) ]"
	check "still 2 RC QPs on sibeth1 ($(rc_qps sibeth1))" test "$(rc_qps sibeth1)" = 2
	kill $(ip netns pids h1) 2>/dev/null
	check_wait "the pinger is gone" 10 sh -c '[ -z "$(ip netns pids h1)" ]'
fi

check "unload everything" unload_all
check "bridge and veths deleted" sh -c \
	'/usr/sbin/ip link del brcm && /usr/sbin/ip link del sibr1 && /usr/sbin/ip link del sibr2'
