#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 300
#
# softib's in-kernel fabric carries the stock ib_ipoib between two hosts
# (network namespaces): the devices show in rdma/ibstat, ping and ping6 work
# both ways, the 2044-byte MTU boundary holds with DF, completion handlers
# run in hard IRQ and CQ moderation is applied, 4 MiB echoed over TCP keep their
# sha256, iperf3 TCP runs 5 s and UDP gets through; everything unloads
# cleanly.
. /tests/lib.sh

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check_wait "sib0 and sib1 registered" 10 test -d /sys/class/infiniband/sib0 -a -d /sys/class/infiniband/sib1

check "rdma link shows sib0 ACTIVE lid 1" sh -c 'rdma link show sib0/1 | grep -q "lid 1 sm_lid 1 .*state ACTIVE physical_state LINK_UP"'
check "rdma link shows sib1 ACTIVE lid 2" sh -c 'rdma link show sib1/1 | grep -q "lid 2 sm_lid 1 .*state ACTIVE"'
check "ibstat shows sib1 Active, 40 Gb/s, base lid 2" sh -c 'ibstat sib1 | grep -q "State: Active" && ibstat sib1 | grep -q "Rate: 40" && ibstat sib1 | grep -q "Base lid: 2"'
check "sysfs gid 0 of sib1" grep -q '^fe80:0000:0000:0000:0002:c903:00a0:0002$' /sys/class/infiniband/sib1/ports/1/gids/0
check "sysfs pkey 0 is 0xffff" grep -q '^0xffff$' /sys/class/infiniband/sib0/ports/1/pkeys/0

check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0 (broadcast group joined)" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
mtu=$(in_host a cat /sys/class/net/ib0/mtu)
check "ib0 MTU is 2044 (SA group MTU 2048): $mtu" test "$mtu" = 2044

check "ethtool -i ib0 names the softib parent device" sh -c '/usr/sbin/ip netns exec a ethtool -i ib0 | grep -q "bus-info: softib"'
check_wait "ping a -> b" 30 in_host a ping -c 1 -W 2 10.9.0.2
check_wait "ping b -> a" 10 in_host b ping -c 1 -W 2 10.9.0.1
check "ping a -> b, 5 replies" in_host a ping -c 5 -i 0.2 -W 2 10.9.0.2
check_wait "ping6 a -> b" 30 in_host a ping -6 -c 1 -W 2 fd00:9::2
check_wait "ping6 b -> a" 10 in_host b ping -6 -c 1 -W 2 fd00:9::1

# 2044-byte IPv4 datagrams: 20 IP + 8 ICMP + 2016 data. DF: 2017 is EMSGSIZE.
check "2044-byte DF datagram passes" in_host a ping -M do -c 2 -W 3 -s 2016 10.9.0.2
out=$(in_host a ping -M do -c 1 -W 2 -s 2017 10.9.0.2 2>&1)
rc=$?
echo "$out"
if [ $rc != 0 ] && echo "$out" | grep -qi "message too long\|mtu"; then
	ok "2045-byte DF datagram gets EMSGSIZE"
else
	fail "2045-byte DF datagram gets EMSGSIZE" "rc $rc: $out"
fi

# Completion handlers run in hard-IRQ context, as from an HCA's MSI-X vector
# (softib counts the handler calls and those that ran in_hardirq()).
hardirq_all() {
	for d in sib0 sib1; do
		e=$(sib_counter $d comp_events)
		[ "${e:-0}" -gt 0 ] && [ "$(sib_counter $d comp_hardirq)" = "$e" ] || return 1
	done
}
check_wait "every completion event ran in hard IRQ (sib1 $(sib_counter sib1 comp_hardirq) of $(sib_counter sib1 comp_events))" 5 hardirq_all

# CQ moderation is applied: with rx-usecs 60000 rx-frames 64 on ib1, the
# receive event for a lone echo request waits the whole 60 ms period. (Not
# every one: a frame of the stack's own that reached ib1 up to 60 ms before
# started the period earlier, as on hardware; so most of six, not all.)
rtt_min() { in_host a ping -c 4 -i 0.3 -W 2 10.9.0.2 | awk '/^rtt|^round-trip/ { split($0, a, "= "); split(a[2], b, "/"); print int(b[1]) }'; }
rtt_slow() { in_host a ping -c 6 -i 0.3 -W 2 10.9.0.2 | sed -n 's/.* time=\([0-9]*\).*/\1/p' | awk '$1 >= 55 { n++ } END { print n + 0 }'; }
check "ethtool -C ib1 rx-usecs 60000 rx-frames 64" in_host b ethtool -C ib1 rx-usecs 60000 rx-frames 64
r=$(rtt_slow)
check "moderated: at least 4 of 6 round trips are >= 55 ms ($r)" test "$r" -ge 4
check "ethtool -C ib1 rx-usecs 0 rx-frames 1" in_host b ethtool -C ib1 rx-usecs 0 rx-frames 1
r=$(rtt_min)
check "not moderated: the lowest round trip is < 55 ms ($r ms)" test -n "$r" -a "${r:-99}" -lt 55

# TCP: UD drops what finds the receive ring empty (as on hardware), so TCP
# may retransmit; what a user relies on is that the data arrives intact.
tcp_echo_serve b 5002
tcp_echo_check "TCP a -> b -> a" a 10.9.0.2 5002 4096

# iperf3: TCP 5 s (rate and retransmissions reported), then UDP.
in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c 'ip netns exec b ss -ltn | grep -q :5201'
out=$(in_host a iperf3 -c 10.9.0.2 -p 5201 -t 5 -J 2>&1)
echo "$out" | grep -E '"retransmits"|"bits_per_second"' | tail -n 4
retr=$(echo "$out" | awk -F: '/"sum_sent"/ { s = 1 } s && /"retransmits"/ { gsub(/[^0-9.]/, "", $2); print $2; exit }')
bps=$(echo "$out" | awk -F: '/"sum_received"/ { s = 1 } s && /"bits_per_second"/ { gsub(/[^0-9.]/, "", $2); print int($2); exit }')
check "iperf3 TCP 5 s: $bps bit/s received ($retr retransmits)" test "${bps:-0}" -gt 1000000
# 10 Mbit/s is under half of what TCP gets here: at most 5% lost
udp_loss_check "iperf3 UDP 3 s at 10 Mbit/s" a b 10.9.0.2 5201 5 -b 10M -l 1400 -t 3
killall iperf3 2>/dev/null

rx=$(sib_counter sib1 rx_packets)
check "softib counted the traffic: sib1 rx_packets $rx" test "${rx:-0}" -gt 1000
# neither port dropped a packet for its P_Key or its Q_Key
no_key_drops() {
	local d k v rc=0
	for d in sib0 sib1; do
		for k in drop_bad_pkey drop_bad_qkey; do
			v=$(sib_counter $d $k) || v=unreadable
			[ "$v" = 0 ] || { echo "$d $k $v"; rc=1; }
		done
	done
	return $rc
}
check "no bad P_Key/Q_Key drops on sib0 or sib1" no_key_drops
grep -v ' 0$' "$(sib sib0 counters)"
grep -v ' 0$' "$(sib sib1 counters)"
in_host a ip -s link show ib0
in_host b ip -s link show ib1

check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
