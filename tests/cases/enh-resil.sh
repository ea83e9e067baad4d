#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# vcpus: 2
# tier: 7
# timeout: 600
#
# Enhanced IPoIB (issue 30) through the fabric's events, under traffic (a
# rate-limited iperf3 stream and a ping every 50 ms from a to b, all along):
# a P_Key change at index 0 of both ports and back (the driver stops its
# datapath, gives the provider the new P_Key index with set_id and opens it
# again: softib asserts that this happens under rtnl, as the in-tree
# driver's heavy flush does it and as mlx5i counts on for its channels), a
# port flap, an SM restart (every group forgotten, client reregister), a
# client reregister alone, a send stall long enough for the watchdog (ours
# restarts the datapath then); after each, b receives a's traffic again and
# answers a's ping. Then the data: TCP with the sha256 of what came back.
# Then the teardowns under the same traffic: rmmod ib_ipoib, and with the
# driver loaded again, the HCA removed (rmmod softib). The kernel check
# after the case sees no report: no WARN (RTNL: assertion failed), no hang.
. /tests/lib.sh

BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
gid_of() { cat "/sys/class/infiniband/$1/ports/1/gids/0"; }
sa_member() {	# sa_member MGID GID: GID is a full member of MGID at the SA
	awk -v m="$1" -v g="$2" '
		$1 != "member" { in_g = ($1 == m) }
		in_g && $1 == "member" && $2 == g && $4 == "0x1" { f = 1 }
		END { exit !f }' "$SIB_DEBUGFS/sa_groups"
}
rx_b() { in_host b cat /sys/class/net/ib1/statistics/rx_packets 2>/dev/null || echo 0; }
rx_above() { [ "$(rx_b)" -gt "$1" ]; }
no_carrier() { ! _t_has_carrier "$1" "$2"; }
pkey_of() { in_host "$1" cat "/sys/class/net/$2/pkey"; }
pkeys_are() { [ "$(pkey_of a ib0)" = "$1" ] && [ "$(pkey_of b ib1)" = "$1" ]; }
drv_is() { [ "$(in_host "$1" ethtool -i "$2" | awk '$1 == "driver:" { print $2 }')" = "$3" ]; }
gone() { [ ! -d "/sys/module/$1" ]; }
pkey0_both() { pkey_set sib0 0 "$1" && pkey_set sib1 0 "$1"; }

PIDS=
# load_start: iperf3 a -> b at 20 Mbit/s and a ping every 50 ms, in the
# background ("ip netns exec" itself, so that $! is the tool's PID)
load_start() {
	/usr/sbin/ip netns exec b iperf3 -s -p 5201 >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	wait_for 10 sh -c '/usr/sbin/ip netns exec b ss -ltn | grep -q :5201'
	/usr/sbin/ip netns exec a iperf3 -c 10.9.0.2 -p 5201 -t 400 -b 20M >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	/usr/sbin/ip netns exec a /usr/bin/ping -i 0.05 10.9.0.2 >/dev/null 2>&1 &
	PIDS="$PIDS $!"
}
load_stop() {
	# shellcheck disable=SC2086
	kill $PIDS 2>/dev/null
	# shellcheck disable=SC2086
	wait $PIDS 2>/dev/null
	PIDS=
}
# flowing WHAT: b receives a's load again (300 packets more within 30 s)
# and answers a's ping
flowing() {
	local r
	r=$(rx_b)
	check_wait "$1: b receives a's traffic again (rx_packets > $r + 300)" 30 rx_above $((r + 300))
	check_wait "$1: ping a -> b" 30 pings a 10.9.0.2
}
hosts() {
	check_wait "ib0 and ib1 exist" 20 sh -c 'test -d /sys/class/net/ib0 && test -d /sys/class/net/ib1'
	check "host a (ib0)" make_host a ib0 10.9.0.1/24
	check "host b (ib1)" make_host b ib1 10.9.0.2/24
	check "ib0 is on the enhanced datapath (ethtool -i: softib[ib_ipoib])" \
		drv_is a ib0 'softib[ib_ipoib]'
	check_wait "carrier on ib0" 30 _t_has_carrier a ib0
	check_wait "carrier on ib1" 30 _t_has_carrier b ib1
	check_wait "ping a -> b" 30 pings a 10.9.0.2
}

check "the guest has 2 CPUs" test "$(nproc)" -ge 2
check "load the IB core" load_ib_core
check "load softib ndevs=2 enhanced=1" load_softib ndevs=2 enhanced=1
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
hosts
GID0=$(gid_of sib0)
GID1=$(gid_of sib1)
load_start
flowing "iperf3 and ping started"

# --- P_Key change at index 0: stop, set_id, open ---
check "P_Key 0x8001 at index 0 of sib0 and sib1" pkey0_both 0x8001
check_wait "ib0 and ib1 follow to P_Key 0x8001" 20 pkeys_are 0x8001
flowing "P_Key 0x8001"
check "P_Key 0xffff at index 0 again" pkey0_both 0xffff
check_wait "ib0 and ib1 follow to P_Key 0xffff" 20 pkeys_are 0xffff
flowing "P_Key 0xffff"

# --- port flap ---
echo down >"$(sib sib1 state)"
check_wait "port down: carrier off on ib1" 10 no_carrier b ib1
echo up >"$(sib sib1 state)"
check_wait "port up: carrier on on ib1" 30 _t_has_carrier b ib1
flowing "port flap"

# --- SM restart, then a client reregister alone ---
echo 1 >"$SIB_DEBUGFS/sm_restart"
check_wait "SM restart: ib0 rejoined the broadcast group" 30 sa_member $BCAST "$GID0"
check_wait "SM restart: ib1 rejoined the broadcast group" 30 sa_member $BCAST "$GID1"
flowing "SM restart"
echo 1 >"$(sib sib0 rereg)"
check_wait "client reregister: ib0 is in the broadcast group" 30 sa_member $BCAST "$GID0"
flowing "client reregister"
# --- a send stall: sib0 sends nothing for 15 s, a's send ring (64 entries,
# ethtool -G) fills, the queue stops and the watchdog fires. Ours restarts
# the datapath (its stop and open, under rtnl); the in-tree driver logs it
# (6.1) or does the same (6.12). Either way the traffic flows afterwards. ---
tx_timeouts() {	# summed over ib0's transmit queues
	in_host a sh -c 'cat /sys/class/net/ib0/queues/tx-*/tx_timeout' | awk '{ s += $1 } END { print s + 0 }'
}
# qdisc_state: "PARENT SENT BACKLOG" (packets) for each transmit queue's
# qdisc on a's ib0, one per line
qdisc_state() {
	in_host a tc -s qdisc show dev ib0 | awk '
		$1 == "qdisc" { p = ($4 == "parent") ? $5 : "" }
		p != "" && $1 == "Sent" { s = $4 }
		p != "" && $1 == "backlog" { print p, s, $3 + 0; p = "" }'
}
# qdiscs_moved STATE: each queue that had a backlog in STATE sent since
qdiscs_moved() {
	qdisc_state | awk -v before="$1" '
		BEGIN {
			n = split(before, l, "\n")
			for (i = 1; i <= n; i++) {
				split(l[i], f, " ")
				if (f[3] > 0)
					want[f[1]] = f[2]
			}
		}
		($1 in want) && $2 <= want[$1] { bad = 1 }
		END { exit bad }'
}
timeouts_above() { [ "$(tx_timeouts)" -gt "$1" ]; }
# The flows here: a ping every 50 ms (one packet of send buffer, so it
# waits as soon as one packet waits) and the burst that fills the ring.
# Not iperf3: TCP's retransmissions, and IPv6's MLD reports after the
# carrier change, would send into the queue now and then and so hide a
# queue that only the driver can set going again.
load_stop
check "IPv6 off on ib0 for the stall" in_host a sysctl -qw net.ipv6.conf.ib0.disable_ipv6=1
/usr/sbin/ip netns exec a /usr/bin/ping -i 0.05 10.9.0.2 >/dev/null 2>&1 &
PIDS=$!
check "ethtool -G ib0 tx 64" in_host a ethtool -G ib0 tx 64
dmesg_mark stall
to0=$(tx_timeouts)
echo 15000 >"$(sib sib0 send_stall_ms)"
/usr/sbin/ip netns exec a /usr/bin/ping -q -l 200 -c 200 -i 0.01 10.9.0.2 >/dev/null 2>&1 &
pinger=$!
check_wait "send stall (15 s): the TX watchdog fired on ib0 (tx_timeout $to0 -> $(tx_timeouts))" 25 timeouts_above "$to0"
kill "$pinger" 2>/dev/null
wait "$pinger" 2>/dev/null
if [ "$IPOIB_DRIVER" = ours ]; then
	check_wait "send stall: ours restarts the HCA's datapath" 10 logged "restarting the HCA's datapath"
fi
echo 0 >"$(sib sib0 send_stall_ms)"
# What waited in a transmit queue's qdisc must leave once the stall is
# over: a datapath restarted with its queues started but not scheduled
# leaves them there, and every socket whose packets they are (ping's one
# packet of send buffer, TCP's small queues) waits for them: that queue's
# flows stop until something else sends into it. Seen so: a queue's 29
# packets still there 30 s after the stall, b receiving only the flows of
# the other queue (in CI: none at all, the check below).
stalled=$(qdisc_state)
check_wait "send stall: every queue's waiting packets leave once it is over ($(echo $stalled))" 30 \
	qdiscs_moved "$stalled"
flowing "send stall"
load_stop
check "ethtool -G ib0 tx 1024" in_host a ethtool -G ib0 tx 1024
check "IPv6 on ib0 again" in_host a sysctl -qw net.ipv6.conf.ib0.disable_ipv6=0
load_start

tcp_echo_serve b 5202
tcp_echo_check "TCP a -> b -> a after the events, enhanced" a 10.9.0.2 5202 1024

# --- MTU: the provider's change_mtu, through ours or the in-tree ndo ---
check "ip link set ib0 mtu 1500" ip -n a link set ib0 mtu 1500
check "ib0's MTU is 1500" sh -c '/usr/sbin/ip -n a link show ib0 | grep -q "mtu 1500 "'
check "1500-byte ping with DF a -> b" in_host a ping -c 1 -W 2 -M do -s 1472 10.9.0.2
check "1501-byte ping with DF refused (message too long)" sh -c \
	'! /usr/sbin/ip netns exec a /usr/bin/ping -c 1 -W 2 -M do -s 1473 10.9.0.2 >/dev/null 2>&1'
check "ip link set ib0 mtu 2044" ip -n a link set ib0 mtu 2044
check "2044-byte ping with DF a -> b" in_host a ping -c 1 -W 2 -M do -s 2016 10.9.0.2

# --- teardown under traffic: the driver, then the HCA ---
check "rmmod ib_ipoib under traffic" sh -c '/sbin/rmmod ib_ipoib'
check_wait "ib_ipoib is gone" 10 gone ib_ipoib
load_stop
ip netns del a
ip netns del b
check "load $IPOIB_DRIVER ib_ipoib again" load_ipoib
hosts
load_start
flowing "reloaded"
check "rmmod softib under traffic (the HCA removed)" sh -c '/sbin/rmmod softib'
check_wait "softib is gone, and ib0 with it" 10 sh -c '! test -d /sys/module/softib && ! /usr/sbin/ip -n a link show ib0 2>/dev/null'
load_stop
check "unload everything" unload_all
