#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
# tier: 612 7
# sm: embedded opensm
#
# Multicast membership as the SA sees it: the broadcast group (full member,
# parameters from the SA), the IPv4/IPv6 groups of the interface's multicast
# list, a send-only full-member join for a group we only send to, a leave
# when the address goes, and leaving everything when the interface goes down.
# Under softib's SA also: a group removed and added again while the port is
# down is joined once it is back, and a refused broadcast rejoin (after a
# reregister) takes the carrier away until the SA answers again.
# Multicast data reaches a member of a joined group (IPv4 and IPv6), sent by
# a non-member (send-only join); under softib's SA it stops when the SM
# takes the member out of the group, though its QP is still attached.
# Under softib's SA (its sa_groups) and under OpenSM's (saquery).
. /tests/lib.sh

SA=$SIB_DEBUGFS
BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
ALLHOSTS=ff12:401b:ffff:0000:0000:0000:0000:0001
ALLNODES6=ff12:601b:ffff:0000:0000:0000:0000:0001
MG_JOIN=ff12:401b:ffff:0000:0000:0000:0f01:0203		# 239.1.2.3
MG_SENDONLY=ff12:401b:ffff:0000:0000:0000:0f09:0909	# 239.9.9.9
MG6_JOIN=ff12:601b:ffff:0000:0000:0000:0001:0003	# ff05::1:3

gid_of() { cat "/sys/class/infiniband/$1/ports/1/gids/0"; }
sa_member() {	# sa_member MGID GID JOIN_STATE
	sm_members | grep -qx "$1 $2 $3"
}
sa_not_member() {	# sa_not_member MGID GID
	! sm_members | grep -q "^$1 $2 "
}
# group_like_bcast MGID: the group has the broadcast group's MTU and P_Key
# (and, under softib's SA, which shows it, its Q_Key 0x0b1b)
group_like_bcast() {
	local b
	b=$(sm_groups | awk -v m=$BCAST '$1 == m { print $2, $3 }')
	[ -n "$b" ] && sm_groups | grep -qx "$1 $b" || return 1
	[ "$SM_MODE" = opensm ] ||
		grep -q "^$1 mlid 0x[0-9a-f]* qkey 0x00000b1b mtu 2048 pkey 0xffff" "$SA/sa_groups"
}

no_carrier() { ! _t_has_carrier "$@"; }

# mcg_complete IFNAME MGID: the driver's debugfs group table says MGID is joined
mcg_complete() {
	awk -v m="$2" '$1 == "GID:" { g = ($2 == m) } g && $1 == "complete:" && $2 == "yes" { f = 1 }
		END { exit !f }' "/sys/kernel/debug/ipoib/$1_mcg"
}

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
echo 'module ib_ipoib +p' >/proc/dynamic_debug/control 2>/dev/null
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1
GID0=$(gid_of sib0)
GID1=$(gid_of sib1)
check "host a (ib0)" make_host a ib0 10.9.0.1/24 fd00:9::1/64
check "host b (ib1)" make_host b ib1 10.9.0.2/24 fd00:9::2/64
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1

check_wait "broadcast group lists ib0 as full member" 20 sa_member $BCAST "$GID0" 0x1
check_wait "broadcast group lists ib1 as full member" 20 sa_member $BCAST "$GID1" 0x1
check_wait "IPv4 all-hosts group lists ib0" 20 sa_member $ALLHOSTS "$GID0" 0x1
check_wait "IPv6 all-nodes group lists ib0" 20 sa_member $ALLNODES6 "$GID0" 0x1

check "b joins 239.1.2.3" /usr/sbin/ip -n b addr add 239.1.2.3/32 dev ib1 autojoin
check_wait "239.1.2.3 group lists ib1 as full member" 20 sa_member $MG_JOIN "$GID1" 0x1
check_wait "debugfs ib1_mcg shows the join of 239.1.2.3 complete" 20 mcg_complete ib1 ff12:401b:ffff:0:0:0:f01:203
check "the group has the broadcast group's parameters" group_like_bcast $MG_JOIN

# --- multicast data to a joined group, IPv4 and IPv6 ---
# b answers echo requests to its groups; a reply from b's address proves
# that a's datagram to the group reached b. a is no member, so its driver
# sends through a send-only join. (a full member cannot be tested this way:
# "ip addr add GROUP autojoin" also makes GROUP a local address of a, and
# a's echo requests then never leave it.)
in_host b sh -c 'echo 0 >/proc/sys/net/ipv4/icmp_echo_ignore_broadcasts'
mping() {	# mping GROUP FROM_RE: a's echo to GROUP answered from FROM_RE
	in_host a ping -c 1 -W 2 -I ib0 "$1" 2>/dev/null | grep -qE "from ($2)[: ]"
}
# IPv6: b's own count of echo requests, not its reply: "ip addr add GROUP
# autojoin" makes GROUP a local address of b, and once its DAD is over b
# answers from it, a multicast source that a drops (IP_INHDR).
echo6_in() { in_host b awk '$1 == "Icmp6InEchos" { print $2 }' /proc/net/snmp6; }
mping6() {	# mping6 GROUP: a's echo request to GROUP reached b
	local n0
	n0=$(echo6_in)
	in_host a ping -c 1 -W 1 -I ib0 "$1" >/dev/null 2>&1
	[ "$(echo6_in)" -gt "$n0" ]
}
check_wait "IPv4 send-only: a (no member) -> 239.1.2.3 reaches b" 30 mping 239.1.2.3 10.9.0.2
check_wait "a's send-only join of 239.1.2.3 (join_state 0x8)" 20 sa_member $MG_JOIN "$GID0" 0x8
check "b joins ff05::1:3" /usr/sbin/ip -n b -6 addr add ff05::1:3/128 dev ib1 autojoin
check_wait "ff05::1:3 group lists ib1 as full member" 20 sa_member $MG6_JOIN "$GID1" 0x1
check_wait "IPv6 send-only: a (no member) -> ff05::1:3 reaches b" 30 mping6 ff05::1:3
check_wait "a's send-only join of ff05::1:3 (join_state 0x8)" 20 sa_member $MG6_JOIN "$GID0" 0x8

in_host a ping -c 3 -i 0.3 -W 1 -I ib0 239.9.9.9 >/dev/null 2>&1
check_wait "a sending to 239.9.9.9 joined it send-only (join_state 0x8)" 20 sa_member $MG_SENDONLY "$GID0" 0x8

check "b leaves 239.1.2.3" /usr/sbin/ip -n b addr del 239.1.2.3/32 dev ib1
check_wait "ib1 is no longer a member of 239.1.2.3" 20 sa_not_member $MG_JOIN "$GID1"

if [ "$SM_MODE" = embedded ]; then
	# A group that leaves the list and comes back while the port is down
	# is wanted again: joined (and attached) once the port is back.
	check "b answers multicast echo" in_host b sh -c 'echo 0 >/proc/sys/net/ipv4/icmp_echo_ignore_broadcasts'
	check "b joins 239.1.2.3 again" /usr/sbin/ip -n b addr add 239.1.2.3/32 dev ib1 autojoin
	check_wait "a pings 239.1.2.3, b answers" 30 in_host a ping -c 1 -W 2 -I ib0 239.1.2.3
	echo down >"$(sib sib1 state)"
	check_wait "sib1 down: no carrier on ib1" 20 no_carrier b ib1
	/usr/sbin/ip -n b addr del 239.1.2.3/32 dev ib1
	sleep 1	# the list change reaches the driver while the port is down
	/usr/sbin/ip -n b addr add 239.1.2.3/32 dev ib1 autojoin
	echo up >"$(sib sib1 state)"
	check_wait "sib1 up: carrier on ib1" 30 _t_has_carrier b ib1
	check_wait "239.1.2.3 left and added while down: b answers again" 30 in_host a ping -c 1 -W 2 -I ib0 239.1.2.3
	check_wait "and ib1 is a full member of 239.1.2.3" 20 sa_member $MG_JOIN "$GID1" 0x1
	/usr/sbin/ip -n b addr del 239.1.2.3/32 dev ib1

	# The SA refuses the broadcast rejoin after a reregister: no carrier
	# while there is no broadcast group; back when the SA answers again.
	# Stock finding (6.1 ib_ipoib): its carrier stays on through the
	# refused rejoin (a reregister flushes its groups without taking the
	# carrier away, and nothing does while the join backs off); for it the
	# case checks that, so that a change is noticed. See testing.rst.
	dmesg_mark rejoin
	echo 0x0300 >"$SA/sa_status"
	echo 1 >"$(sib sib0 rereg)"
	if [ "$IPOIB_DRIVER" = stock ]; then
		bcast_failed() { dmesg_since_mark | grep -q "ib0: multicast join failed for $BCAST"; }
		check_wait "reregister, SA refuses the rejoin: stock logs the failed broadcast join" 30 bcast_failed
		check "stock finding: ib0 keeps its carrier without a broadcast group" _t_has_carrier a ib0
	else
		check_wait "reregister, SA refuses the rejoin: ib0 loses its carrier" 30 no_carrier a ib0
	fi
	m0=$(sa_counter mcm_set)
	echo 0 >"$SA/sa_status"
	# the broadcast group is joined first: the first join the SA takes
	# now is the rejoin (a membership it lists may be the one whose leave
	# it refused)
	joins_above() { [ "$(sa_counter mcm_set)" -gt "$1" ]; }
	check_wait "SA answers again: ib0 joins again (mcm_set > $m0)" 60 joins_above "$m0"
	check_wait "SA answers again: carrier on ib0" 60 _t_has_carrier a ib0
	check_wait "ping a -> b" 30 in_host a ping -c 1 -W 2 10.9.0.2
	# The SA refused the leaves of the reregister too: send to the
	# send-only group again, so that its membership is the driver's own.
	# (The SA still lists the membership whose leave it refused: wait
	# for the driver's own join to complete, not for the SA's list.)
	# The stock driver's group may be in its join back-off from the
	# refused period (up to 16 s, IPOIB_MAX_BACKOFF_SECONDS), and it
	# retries a send-only join only when a packet is sent to the group:
	# the sender goes on sending, as an application does, for up to 40 s.
	sends_and_joined() {
		in_host a ping -c 1 -W 1 -I ib0 239.9.9.9 >/dev/null 2>&1
		mcg_complete ib0 ff12:401b:ffff:0:0:0:f09:909
	}
	check_wait "a sends to 239.9.9.9 again: its send-only join completes" 40 sends_and_joined
	check_wait "a sends to 239.9.9.9 again: send-only member" 20 sa_member $MG_SENDONLY "$GID0" 0x8

	# The P_Key at index 0 of both ports changes (0xffff -> 0x8001, the
	# SM's port first): what the interfaces had joined they join again in
	# the new partition, and what the stack shows follows (the broadcast
	# address, the hardware addresses of the multicast list). Then back.
	# (The old partition's memberships are not checked: the IB core's
	# ib_sa drops those whose P_Key moved in the table without sending a
	# leave, multicast.c process_group_error(), so the SA keeps them.)
	# Stock finding: its multicast list keeps the old P_Key and its list
	# sync skips such entries, so nothing the interface had joined is
	# joined in the new partition (Documentation/testing.rst).
	check "b joins 239.1.2.3 again" /usr/sbin/ip -n b addr add 239.1.2.3/32 dev ib1 autojoin
	check_wait "a -> 239.1.2.3 reaches b" 30 mping 239.1.2.3 10.9.0.2
	brd_has() {	# brd_has P_KEY: ib1's broadcast address has P_KEY (xx:yy)
		/usr/sbin/ip -n b link show dev ib1 | grep -q "brd 00:ff:ff:ff:ff:12:40:1b:$1:00:"
	}
	maddr_has() {	# maddr_has RE: a link address of ib1's multicast list matches RE
		/usr/sbin/ip -n b maddr show dev ib1 | awk '$1 == "link" { print $2 }' | grep -q "$1"
	}
	pk_groups() {	# pk_groups P_KEY: ib1 is a full member of both groups under P_KEY
		sa_member "ff12:401b:$1:0000:0000:0000:0f01:0203" "$GID1" 0x1 &&
			sa_member "ff12:601b:$1:0000:0000:0000:0001:0003" "$GID1" 0x1
	}
	for d in sib0 sib1; do echo "1 0xffff" >"$(sib $d pkeys)"; done
	for d in sib0 sib1; do echo "0 0x8001" >"$(sib $d pkeys)"; done
	check_wait "P_Key 0x8001 at index 0: ib1's broadcast address has it" 20 brd_has 80:01
	check_wait "P_Key 0x8001: carrier on ib1" 30 _t_has_carrier b ib1
	check_wait "P_Key 0x8001: ib1 joined the new broadcast group" 30 \
		sa_member ff12:401b:8001:0000:0000:0000:ffff:ffff "$GID1" 0x1
	if [ "$IPOIB_DRIVER" = ours ]; then
		check_wait "P_Key 0x8001: ib1's multicast list has 239.1.2.3 under it" 20 \
			maddr_has "^00:ff:ff:ff:ff:12:40:1b:80:01:00:00:00:00:00:00:0f:01:02:03$"
		check_wait "P_Key 0x8001: ib1's multicast list has ff05::1:3 under it" 20 \
			maddr_has "^00:ff:ff:ff:ff:12:60:1b:80:01:00:00:00:00:00:00:00:01:00:03$"
		check "P_Key 0x8001: no address of ib1's multicast list has the old P_Key" \
			sh -c "! /usr/sbin/ip -n b maddr show dev ib1 | grep -q ':1b:ff:ff:'"
		check_wait "P_Key 0x8001: ib1 is a full member of 239.1.2.3 and ff05::1:3 in it" 20 pk_groups 8001
		check_wait "P_Key 0x8001: a -> 239.1.2.3 reaches b" 30 mping 239.1.2.3 10.9.0.2
		# IPv6 neighbour discovery goes through the solicited-node
		# groups, which are in the multicast list too
		in_host a ip -6 neigh flush dev ib0
		in_host b ip -6 neigh flush dev ib1
		check_wait "P_Key 0x8001: ping6 a -> b (neighbour discovery in the new partition)" 30 \
			in_host a ping -6 -c 1 -W 2 fd00:9::2
		check_wait "P_Key 0x8001: a -> ff05::1:3 reaches b" 30 mping6 ff05::1:3
	else
		check "stock finding: ib1's multicast list keeps 239.1.2.3 under the old P_Key" \
			maddr_has "^00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:0f:01:02:03$"
		not_joined_within() { ! wait_for "$1" sa_member "$2" "$GID1" 0x1; }
		check "stock finding: ib1 does not join 239.1.2.3 in the new partition (10 s)" \
			not_joined_within 10 ff12:401b:8001:0000:0000:0000:0f01:0203
	fi
	for d in sib0 sib1; do echo "0 0xffff" >"$(sib $d pkeys)"; done
	for d in sib0 sib1; do echo "1 0" >"$(sib $d pkeys)"; done
	check_wait "P_Key back to 0xffff: ib1's broadcast address has it" 20 brd_has ff:ff
	if [ "$IPOIB_DRIVER" = ours ]; then
		check_wait "P_Key back to 0xffff: ib1 is a full member of both groups again" 30 pk_groups ffff
		check_wait "P_Key back to 0xffff: a -> 239.1.2.3 reaches b" 30 mping 239.1.2.3 10.9.0.2
	fi
	# ib_sa dropped a's send-only membership of 239.9.9.9 without a leave
	# (above): send to it again, so that the one the SA lists is the
	# driver's own and goes with it below
	in_host a ping -c 3 -i 0.3 -W 1 -I ib0 239.9.9.9 >/dev/null 2>&1
	check_wait "a sends to 239.9.9.9 again: its send-only join completes" 20 \
		mcg_complete ib0 ff12:401b:ffff:0:0:0:f09:909

	# Multicast goes by SA membership, as switches that the SM programs
	# forward it: the SM takes ib1 out of 239.1.2.3 (softib's sa_remove,
	# as OpenSM does with a port that left the fabric). ib1's QP is still
	# attached, and nothing of the group reaches it any more; after a
	# reregister the driver joins again.
	nm() { sib_counter sib1 mcast_not_member; }
	check_wait "b answers 239.1.2.3" 30 mping 239.1.2.3 10.9.0.2
	nm0=$(nm)
	check "the SM takes ib1 out of 239.1.2.3" sh -c "echo '$MG_JOIN $GID1' >$SA/sa_remove"
	check "ib1 is no longer listed in 239.1.2.3" sa_not_member $MG_JOIN "$GID1"
	check_fail "a -> 239.1.2.3 no longer reaches b" mping 239.1.2.3 10.9.0.2
	check "softib did not deliver it to ib1's attached QP (mcast_not_member $nm0 -> $(nm))" \
		test "$(nm)" -gt "$nm0"
	echo 1 >"$(sib sib1 rereg)"
	check_wait "sib1 reregistered: ib1 joins 239.1.2.3 again" 30 sa_member $MG_JOIN "$GID1" 0x1
	check_wait "and a -> 239.1.2.3 reaches b again" 30 mping 239.1.2.3 10.9.0.2
	/usr/sbin/ip -n b addr del 239.1.2.3/32 dev ib1
else
	skip "group left and added while the port is down" "softib port and SA knobs (embedded SM only)"
	skip "broadcast rejoin refused: no carrier" "softib port and SA knobs (embedded SM only)"
fi

check "a goes down" /usr/sbin/ip -n a link set ib0 down
check_wait "ib0 left the broadcast group" 20 sa_not_member $BCAST "$GID0"
check_wait "ib0 left the send-only group" 20 sa_not_member $MG_SENDONLY "$GID0"
check "a comes back up" /usr/sbin/ip -n a link set ib0 up
check_wait "ib0 rejoined the broadcast group" 30 sa_member $BCAST "$GID0" 0x1
check_wait "ping a -> b after down/up" 30 in_host a ping -c 1 -W 2 10.9.0.2
sm_members
dmesg | grep -E 'ib[01]:' | tail -n 80

check "unload everything" unload_all
