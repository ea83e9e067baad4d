#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 400
#
# A connected-mode CQ overflow with sends in flight on many connections
# (review 2026-12, finding 5). a is connected to eight peers (children of
# b's port sharing its P_Key, each in a namespace of its own, all in
# connected mode). b's port is stalled so that the ACKs of a ping to each
# wait and a's sends stay outstanding; a's device then overflows its CQ
# (softib fail_cq_overflow) on the first completion after the stall. No
# completion will come through the dead CQ: the restart must not wait for
# any. Before the fix it waited 5 s per connection with a send in flight,
# under op_mutex (8 x 5 s here; 128 x 5 s at most), and ip link set down
# on a waited behind it with rtnl held. Now ib0 goes down at once and the
# peers answer a 60000-byte ping over new connections after it comes up.
. /tests/lib.sh

N=8
peer() { echo "10.17.0.$((10 + $1))"; }
big_ping() { in_host a ping -c 1 -W 5 -M do -s 60000 "$(peer "$1")" >/dev/null 2>&1; }
all_big() {
	local i=1
	while [ $i -le $N ]; do
		big_ping $i || return 1
		i=$((i + 1))
	done
}

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
# No IPv6 in the namespaces: the overflow must fall on a connected-mode
# completion, and an MLD or ND multicast waiting in b's stalled port would
# arrive first, on the UD QP (the namespaces inherit these defaults).
sysctl -qw net.core.devconf_inherit_init_net=1
sysctl -qw net.ipv6.conf.default.disable_ipv6=1
check "host a (ib0)" make_host a ib0 10.17.0.1/24
ip link set ib1 up
bad=0
i=1
while [ $i -le $N ]; do
	ip link add link ib1 name p$i type ipoib pkey 0xffff mode connected &&
		make_host n$i p$i "$(peer $i)/24" &&
		in_host n$i ip link set p$i mtu 65520 || bad=$((bad + 1))
	i=$((i + 1))
done
check "$N peers: children of ib1 in connected mode, each in its namespace" test $bad = 0
check "a in connected mode" sh -c '/usr/sbin/ip -n a link set ib0 type ipoib mode connected &&
	/usr/sbin/ip -n a link set ib0 mtu 65520'
check_wait "a reaches all $N peers with 60000-byte pings (connections up)" 60 all_big

# and no other UD packet on its way: the peers' IGMP reports after their
# interfaces came up are repeated for a few seconds
ud_rx() { in_host a ethtool -S ib0 | awk '$1 == "rx_packets:" { print $2 }'; }
ud_quiet() {
	local r0
	r0=$(ud_rx)
	sleep 3	# the quiet period itself, not a wait for a state
	[ "$(ud_rx)" = "$r0" ]
}
check_wait "no UD packet reached a for 3 s" 30 ud_quiet
dmesg_mark cqerr
o0=$(sib_counter sib0 cq_overflow)
q=$(sib sib1 txq_len)
echo 20000 >"$(sib sib1 send_stall_ms)"
i=1
while [ $i -le $N ]; do
	in_host a ping -c 1 -W 1 "$(peer $i)" >/dev/null 2>&1 &
	i=$((i + 1))
done
check_wait "b's port holds the $N ACKs" 10 sh -c "[ \"\$(cat $q)\" -ge $N ]"
echo 1 >"$(sib sib0 fail_cq_overflow)"
echo 0 >"$(sib sib1 send_stall_ms)"
check_wait "a's CQ overflowed (cq_overflow)" 30 sib_counter_ge sib0 cq_overflow $((o0 + 1))
check_wait "the connected mode CQ error is logged" 10 logged 'connected mode CQ error'
check "and no UD CQ error" sh -c '! dmesg | grep -q "receive CQ error\|send CQ error"'
t0=$(_t_now_ds)
check "ip link set ib0 down on a" in_host a ip link set ib0 down
t=$(($(_t_now_ds) - t0))
check "took less than 5 s ($t ds; 8 x 5 s before the fix)" test $t -lt 50
check "ib0 up again" in_host a ip link set ib0 up
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "a reaches all $N peers again over new connections" 60 all_big
check "unload everything" unload_all
