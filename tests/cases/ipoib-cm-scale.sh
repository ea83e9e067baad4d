#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# mem: 4096
# vcpus: 2
# timeout: 900
#
# Connected mode at the in-tree driver's scale (review 2026-12, finding 6;
# issue 29 item 2). b serves 100 connected-mode peers at once: children of
# a's port sharing its P_Key, each with its own QP, namespace and address,
# all in connected mode with a 65520-byte MTU. With an SRQ there is no
# fixed cap on passive connections (before the fix the 65th peer was
# refused and its large packets black-holed). Each of the 101 interfaces
# has a shared receive queue of 256 64 KiB buffers (1.6 GiB in all), as
# both drivers size it by default; with the 101 UD rings (26,000 receive
# buffers of 8 KiB) and the burst's messages in flight the guest gets 4 GiB
# (3 GiB ran out in the burst under load, 2026-12-07). b's must take a
# burst from all 100 peers: the stock driver's connections give up on the
# first RNR NAK (rnr_retry 0).
#
# A connection that RNR NAKs ended (b's guest, sharing the machine with
# another VM, did not repost its SRQ for seconds: "send ... failed (status
# 13)") is made again by the peer's next packet. b's connections are
# counted after each peer has sent once more, one after the other (CI
# 2026-12-07: b held 92 right after the burst).
#
# Ours only for now: the stock driver refuses "connected" written to a
# fresh child's sysfs mode (EPERM, 2026-12-05), and its netlink "mode
# connected" at creation WARNs under RTNL contention (testing.rst).
. /tests/lib.sh

N=100
addr() { echo "10.20.$(($1 / 200)).$(($1 % 200 + 10))"; }
B=10.20.9.1
# peers_reaching COUNT SIZE: every peer at once pings b until COUNT
# replies of SIZE bytes came back (60 s at most); print how many got them
peers_reaching() {
	local i=1 n=0 r shown=
	while [ $i -le $N ]; do
		in_host n$i ping -q -c "$1" -i 0.3 -w 60 -M do -s "$2" $B \
			>/tmp/scale.$i 2>&1 &
		i=$((i + 1))
	done
	wait
	i=1
	while [ $i -le $N ]; do
		r=$(sed -n 's/.* transmitted, \([0-9]*\) received.*/\1/p' /tmp/scale.$i)
		if [ "${r:-0}" -ge "$1" ]; then
			n=$((n + 1))
		elif [ -z "$shown" ]; then	# the first miss, for the console
			shown=1
			echo "peer $i ($(addr $i)):" >&2
			cat /tmp/scale.$i >&2
		fi
		i=$((i + 1))
	done
	echo $n
}
# first_contact: every peer at once pings b, an echo request every 0.5 s,
# until one reply came back, for 60 s in all; print how many got one. First
# contact is a path query and 100 connection handshakes each way at once,
# which the guest's TCG CPU takes seconds for. One ping process a peer: a
# shell loop starting a ping every 0.5 s for each peer still waiting (up to
# 120 exec()s a second) kept both guest CPUs busy (CI, 2026-12-07).
first_contact() {
	local i=1 n=0 shown=
	while [ $i -le $N ]; do
		in_host n$i sh -c "/usr/bin/ping -q -c 1 -i 0.5 -w 60 $B >/dev/null 2>&1 &&
			echo ok || { echo none; /usr/bin/ping -c 1 -W 2 $B; }" >/tmp/scale.$i 2>&1 &
		i=$((i + 1))
	done
	wait
	i=1
	while [ $i -le $N ]; do
		if grep -qx ok /tmp/scale.$i; then
			n=$((n + 1))
		elif [ -z "$shown" ]; then	# the first miss, for the console
			shown=1
			contact_report $i >&2
		fi
		i=$((i + 1))
	done
	echo $n
}
# hwaddr NS IF: IF's hardware address as it is up (connected mode's RC flag
# included), read with one ip command
hwaddr() {
	local l
	l=$(ip -n "$1" -o link show "$2") || return 1
	l=${l#*link/infiniband }
	echo "${l%% *}"
}
# contact_report I: what peer I and b hold, for a peer that never got through
contact_report() {
	local f
	echo "peer $1 ($(addr $1)) got no reply in 60 s; a last ping:"
	cat /tmp/scale.$1
	in_host n$1 ip neigh show dev p$1
	echo "counters around one more ping (p$1, then b):"
	in_host n$1 ip -s link show p$1 | sed -n '4p;6p'
	in_host b ip -s link show ib1 | sed -n '4p;6p'
	in_host n$1 ping -c 1 -W 2 $B | grep transmitted
	in_host n$1 ip -s link show p$1 | sed -n '4p;6p'
	in_host b ip -s link show ib1 | sed -n '4p;6p'
	in_host b ethtool -S ib1 2>/dev/null | awk '$2 != 0' | head -n 30
	for f in paths neighs connections; do
		echo "p$1 $f:"
		head -n 6 /sys/kernel/debug/ipoib/p$1/$f 2>/dev/null
	done
	qpn=$(hwaddr n$1 p$1 | sed -n 's/^..:\(..\):\(..\):\(..\):.*/0x\1\2\3/p')
	echo "b: $(grep -vc '^#' /sys/kernel/debug/ipoib/ib1/connections 2>/dev/null) connections;" \
		"to p$1 ($qpn): $(grep "^$qpn" /sys/kernel/debug/ipoib/ib1/connections)"
	echo "b: $(in_host b ip neigh show dev ib1 | grep -c .) neighbours; p$1's:" \
		"$(in_host b ip neigh show dev ib1 | grep "$(addr $1) ")"
	grep "$qpn" /sys/kernel/debug/ipoib/ib1/neighs
	for f in sib0 sib1; do
		echo "$f: $(awk '$2 != 0 { printf "%s %s, ", $1, $2 }' "$(sib $f counters)")"
	done
	dmesg | tail -n 20
}
passive_rc() { rdma -dd res show qp link sib1/1 | grep 'type RC' | grep -c 'drv_srq_wr'; }

check "load the IB core" load_ib_core
# OpenSM's packet life (ACK timeout 2.1 s, 7 tries): on hardware the HCA
# acknowledges whatever the host CPU does; softib's responder runs on the
# guest CPU the 101 interfaces share, and under load it answered a message
# later than softib's default 134 ms seven times in a row ("send ... failed
# (status 12)" on peers and b, 2026-12-07, host CPUs busy).
check "load softib ndevs=2 sa_packet_life=18" load_softib ndevs=2 sa_packet_life=18
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
# No IPv6: 100 interfaces' DAD, MLD and router solicitations are noise
# here. New namespaces take init_net's defaults.
check "IPv6 off in new namespaces" sh -c '
	echo 1 >/proc/sys/net/core/devconf_inherit_init_net &&
	echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6'
check "host b (ib1, connected mode)" sh -c "
	echo connected >/sys/class/net/ib1/mode &&
	. /tests/lib.sh && make_host b ib1 $B/16 &&
	/usr/sbin/ip -n b link set ib1 mtu 65520"
ip link set ib0 up
bad=0
i=1
while [ $i -le $N ]; do
	# connected mode through sysfs: the stock driver's netlink "mode
	# connected" at creation is not safe under RTNL contention
	# (Documentation/testing.rst, ipoib-cm-scale)
	ip link add link ib0 name p$i type ipoib pkey 0xffff &&
		echo connected >/sys/class/net/p$i/mode &&
		make_host n$i p$i "$(addr $i)/16" &&
		in_host n$i ip link set p$i mtu 65520 || bad=$((bad + 1))
	i=$((i + 1))
done
check "$N peers: children of ib0 in connected mode, each in its namespace" test $bad = 0
all_carrier() {
	local i=1
	while [ $i -le $N ]; do
		_t_has_carrier n$i p$i || return 1
		i=$((i + 1))
	done
}
check_wait "carrier on all $N" 120 all_carrier
check_wait "carrier on b" 30 _t_has_carrier b ib1
# Every peer and b know each other's hardware address before first
# contact: on a fabric each host's ARP broadcasts reach 100 others, each
# with its own CPU; here they all land on one guest's 101 receive rings,
# 10,000 receives for 100 ARP requests, and starved rings dropped b's
# unicast replies (drop_no_rwqe 1851; 16 of 100 peers resolved b within a
# minute, 2026-12-07, host CPUs busy). ARP is not what this case is
# about; the path queries and connections still start at first contact.
# (b's entries in one ip command)
static_neighbours() {
	local i=1 hb
	hb=$(hwaddr b ib1) || return 1
	: >/tmp/scale.bneigh
	while [ $i -le $N ]; do
		ip -n n$i neigh replace $B lladdr "$hb" dev p$i nud permanent &&
			echo "neigh replace $(addr $i) lladdr $(hwaddr n$i p$i) dev ib1 nud permanent" \
				>>/tmp/scale.bneigh || return 1
		i=$((i + 1))
	done
	ip -n b -batch /tmp/scale.bneigh &&
		test "$(ip -n b neigh show dev ib1 nud permanent | grep -c .)" = $N
}
check "every peer and b know each other's hardware address" static_neighbours
dmesg_mark scale
# First contact at once: path queries and 100 REQs to b together, and
# b's 100 REQs back for its replies.
n=$(first_contact)
check "all $N peers, at once, reach b ($n)" test "$n" = $N
n=$(peers_reaching 5 60000)
grep -E 'MemFree|^Slab|SUnreclaim' /proc/meminfo | tr -s ' \n' ' ' >&2; echo >&2
[ "$n" = $N ] || sort -k3 -n -r /proc/slabinfo 2>/dev/null | awk '{ print $1, $3, $4 }' | head -n 8 >&2
check "all $N send 5 60000-byte pings at once, every one answered ($n)" test "$n" = $N
# each peer once more, one at a time: a connection the burst lost to RNR
# NAKs is made again
i=1
while [ $i -le $N ]; do
	in_host n$i ping -q -c 1 -W 5 -M do -s 60000 $B >/dev/null 2>&1
	i=$((i + 1))
done
n=$(passive_rc)
if [ "$n" -lt $N ]; then	# why, for the console
	echo "sib0: rc_timeout $(sib_counter sib0 rc_timeout), rc_retry_exc $(sib_counter sib0 rc_retry_exc)" >&2
	dmesg | grep -E 'failed|closed|refused' | tail -n 10 >&2
fi
check "b holds $N passive connections ($n)" test "$n" -ge $N
if [ "$IPOIB_DRIVER" = ours ]; then
	check "no connection refused" sh -c '! dmesg | grep -q "refused: .* passive connections"'
fi
check "unload everything" unload_all
