#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# vcpus: 2
# timeout: 300
#
# P_Key changes under a multicast flood (review 2026-12, finding 10): a
# sends pings to eight multicast groups it never joined (send-only joins)
# and to the broadcast address, as fast as it can, while the P_Key at
# index 0 of its port moves between 0xffff and 0x8001, six times. After
# each change ib0's group table (debugfs ipoib/ib0/mcast) must hold no
# group of the old partition: the MGID carries the P_Key (ff12:401b:PKEY::),
# so a group made between the groups' stop and the datapath's stop would
# keep the old P_Key's MGID and be joined with the new P_Key, which the SA
# refuses (before the fix the groups were stopped first). The flood goes on
# in the new partition: b, which follows, answers a's broadcast ping.
# Then one more change whose restart fails twice (finding 11): retried.
. /tests/lib.sh

mc() { cat /sys/kernel/debug/ipoib/ib0/mcast; }
# no_old PKEY: no group of ib0 has an MGID of partition PKEY (hex, 4 digits)
no_old() { ! mc | grep -q "^ff12:401b:$1:"; }
pkey_is() { [ "$(in_host a cat /sys/class/net/ib0/pkey)" = "$1" ]; }

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
check "host a (ib0)" make_host a ib0 10.15.0.1/24
check "host b (ib1)" make_host b ib1 10.15.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
in_host a ip route add 224.0.0.0/4 dev ib0
in_host b sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0
pids=
for g in 1 2 3 4 5 6 7 8; do
	/usr/sbin/ip netns exec a ping -q -i 0.002 -W 1 239.9.9.$g >/dev/null 2>&1 &
	pids="$pids $!"
done
/usr/sbin/ip netns exec a ping -q -b -i 0.002 10.15.0.255 >/dev/null 2>&1 &
pids="$pids $!"
check_wait "a's send-only groups are joined" 20 sh -c '[ "$(grep -c "^ff12:401b:ffff::f09:90" /sys/kernel/debug/ipoib/ib0/mcast)" -ge 8 ]'
bad=0
old=ffff
i=1
while [ $i -le 6 ]; do
	if [ $old = ffff ]; then new=8001; else new=ffff; fi
	pkey_set sib0 0 0x$new && pkey_set sib1 0 0x$new || bad=$((bad + 1))
	wait_for 20 pkey_is 0x$new || { fail "change $i: ib0 follows to 0x$new" "pkey $(in_host a cat /sys/class/net/ib0/pkey)"; bad=$((bad + 1)); break; }
	if ! wait_for 10 no_old $old; then
		fail "change $i: no group of the old partition 0x$old is left" "$(mc | grep "^ff12:401b:$old:" | head -n 3 | tr '\n' ';')"
		bad=$((bad + 1))
		break
	fi
	old=$new
	i=$((i + 1))
done
check "6 P_Key changes under the flood left no group of the old partition" test $bad = 0
check_wait "b answers a broadcast ping in the new partition" 30 \
	in_host a ping -b -c 1 -W 2 10.15.0.255
# shellcheck disable=SC2086
kill $pids 2>/dev/null

# --- a P_Key change whose restart fails (finding 11) ---
# softib fails the next two moves of a UD QP up (INIT/RTR/RTS). Before the
# fix the port interface stayed up without a running QP and without
# carrier until someone set it down and up; now it tries again, with
# back-off (1 s, 2 s), through a new QP.
dmesg_mark restart
echo 2 >"$(sib sib0 fail_modify_qp)"
check "P_Key 0x8002 at index 0 of sib0 and sib1" sh -c \
	'echo "0 0x8002" >'"$(sib sib0 pkeys)"' && echo "0 0x8002" >'"$(sib sib1 pkeys)"
check_wait "ib0 follows to 0x8002" 20 pkey_is 0x8002
check_wait "softib failed the two moves up (fail_modify_qp 0)" 20 \
	sh -c 'test "$(cat '"$(sib sib0 fail_modify_qp)"')" = 0'
check "the failed start is logged" logged "cannot start the datapath"
check_wait "ib0 has its carrier again (retried)" 40 _t_has_carrier a ib0
check_wait "a pings b in partition 0x8002" 30 pings a 10.15.0.2
check "unload everything" unload_all
