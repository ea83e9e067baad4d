#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 900
# tier: debug
#
# Teardown under load, repeated: 10 removals of the softib devices (rmmod
# softib) while iperf3 runs a -> b, 10 "rmmod ib_ipoib" while iperf3 runs,
# then network namespaces deleted while they hold an IPoIB parent (it comes
# back to the initial namespace) and a child interface (it comes back too:
# the driver sets netns_refund, so an IPoIB link never dies with a netns).
# After each: the module is gone, nothing is reported, and the next round
# works; at the end everything unloads. ipoib-teardown / softib-teardown do
# one round of each; this is the stress version.
. /tests/lib.sh

# 10 rounds of each; 2 on the debug kernel, where a round takes ten times
# as long (22-29 s; KASAN, lockdep and kmemleak watch the same paths)
ROUNDS=10
case $KVER in *debug*) ROUNDS=2 ;; esac
rx_b() { in_host b cat /sys/class/net/ib1/statistics/rx_packets 2>/dev/null || echo 0; }
rx_above() { [ "$(rx_b)" -gt "$1" ]; }
gone() { [ ! -d "/sys/module/$1" ]; }

# round N WHAT: hosts on ib0/ib1, iperf3 a -> b, then remove WHAT under load.
# The load is started with "ip netns exec" itself, so that $! is the tool's
# PID: "in_host ... &" would be a subshell, and killing it would leave the
# tool running into the next rounds.
round() {
	local r pids='' t0 t1 t2 t3 t4
	t0=$(_t_now_ds)
	wait_for 20 test -d /sys/class/net/ib1 || { fail "round $1: ib1 appears" "no ib1"; return 1; }
	if ! make_host a ib0 192.0.2.1/24 || ! make_host b ib1 192.0.2.2/24; then
		fail "round $1: hosts" "make_host failed"
		return 1
	fi
	wait_for 40 pings a 192.0.2.2 || { fail "round $1: ping a -> b" "no reply in 40 s"; return 1; }
	t1=$(_t_now_ds)
	/usr/sbin/ip netns exec b iperf3 -s -p 5201 >/dev/null 2>&1 &
	pids="$pids $!"
	wait_for 10 sh -c '/usr/sbin/ip netns exec b ss -ltn | grep -q :5201'
	/usr/sbin/ip netns exec a iperf3 -c 192.0.2.2 -p 5201 -t 60 >/dev/null 2>&1 &
	pids="$pids $!"
	/usr/sbin/ip netns exec a /usr/bin/ping -i 0.05 192.0.2.2 >/dev/null 2>&1 &
	pids="$pids $!"
	r=$(rx_b)
	wait_for 20 rx_above $((r + 300)) || { fail "round $1: iperf3 traffic" "ib1 rx_packets stuck at $r"; }
	t2=$(_t_now_ds)
	case $2 in
	softib) rmmod softib && gone softib ;;
	ipoib) rmmod ib_ipoib && gone ib_ipoib ;;
	esac || { fail "round $1: rmmod $2 under load" "rmmod failed"; return 1; }
	t3=$(_t_now_ds)
	# shellcheck disable=SC2086
	kill $pids 2>/dev/null
	# shellcheck disable=SC2086
	wait $pids 2>/dev/null
	t4=$(_t_now_ds)
	ip netns del a
	ip netns del b
	echo "round $1 ($2): up+ping $((t1 - t0)), traffic $((t2 - t1)), rmmod $((t3 - t2)), kill $((t4 - t3)), netns del $(($(_t_now_ds) - t4)) (0.1 s)"
	return 0
}

check "load the IB core" load_ib_core || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
t0=$(_t_now_ds)
bad=0
i=1
while [ $i -le $ROUNDS ]; do
	load_softib ndevs=2 || { fail "round $i: load softib" "modprobe failed"; break; }
	round "$i" softib || bad=$((bad + 1))
	[ $bad -gt 2 ] && break
	i=$((i + 1))
done
check "$ROUNDS softib device removals under iperf3 ($(( ($(_t_now_ds) - t0) / 10 )) s)" test $bad = 0 -a $i -gt $ROUNDS

check "load softib" load_softib ndevs=2
t0=$(_t_now_ds)
bad=0
i=1
while [ $i -le $ROUNDS ]; do
	load_ipoib || { fail "round $i: load ib_ipoib" "load failed"; break; }
	round "$i" ipoib || bad=$((bad + 1))
	[ $bad -gt 2 ] && break
	i=$((i + 1))
done
check "$ROUNDS rmmod ib_ipoib under iperf3 ($(( ($(_t_now_ds) - t0) / 10 )) s)" test $bad = 0 -a $i -gt $ROUNDS

# --- a namespace holding an IPoIB parent, then one holding a child ---
check "load ib_ipoib again" load_ipoib
check_wait "ib0 exists" 20 test -d /sys/class/net/ib0
check "host a (ib0)" make_host a ib0 192.0.2.1/24
check "delete netns a holding the parent ib0" ip netns del a
check_wait "ib0 is back in the initial namespace" 20 test -d /sys/class/net/ib0
check "child ib0.8001" ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "host c (ib0.8001)" make_host c ib0.8001 198.51.100.1/24
check "delete netns c holding the child" ip netns del c
check_wait "ib0.8001 is back in the initial namespace" 20 test -d /sys/class/net/ib0.8001
check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
