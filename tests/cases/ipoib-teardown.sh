#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 400
# tier: 612 7
#
# Teardown under load: rmmod ib_ipoib while iperf3 runs (the module unloads,
# nothing is reported), then two softib devices bound to a veth pair with
# "rdma link add", and one of them removed with "rdma link delete" while
# traffic flows: its interface goes, the other survives, nothing reported.
# Then a device removed while writers hammer its port's create_child: no
# child outlives its parent.
. /tests/lib.sh

check "load the IB core" load_ib_core
check "load softib ndevs=2" load_softib ndevs=2
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1
check "host a (ib0)" make_host a ib0 10.9.0.1/24
check "host b (ib1)" make_host b ib1 10.9.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "carrier on ib1" 30 _t_has_carrier b ib1
check_wait "ping a -> b" 30 in_host a ping -c 1 -W 2 10.9.0.2

in_host b iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec b ss -ltn | grep -q :5201'
in_host a iperf3 -c 10.9.0.2 -p 5201 -t 30 >/dev/null 2>&1 &
in_host a iperf3 -c 10.9.0.2 -p 5201 -u -b 20M -t 30 >/dev/null 2>&1 &
check_wait "iperf3 traffic flows" 20 sh -c \
	'test "$(/usr/sbin/ip netns exec b cat /sys/class/net/ib1/statistics/rx_packets)" -gt 2000'
check "rmmod ib_ipoib during iperf3" rmmod ib_ipoib
check "ib0 and ib1 are gone" sh -c '! test -e /sys/class/net/ib0 && ! /usr/sbin/ip netns exec a test -e /sys/class/net/ib0'
killall iperf3 2>/dev/null
for ns in a b; do ip netns del $ns; done

# --- device removal during traffic ---
check "load veth" modprobe veth
check "veth pair" sh -c '/usr/sbin/ip link add sibe1 address 02:00:00:00:00:11 mtu 4200 type veth peer name sibe2 address 02:00:00:00:00:12 mtu 4200 && /usr/sbin/ip link set sibe1 up && /usr/sbin/ip link set sibe2 up'
check "reload softib with no in-kernel devices, SM at LID 0x11" sh -c 'rmmod softib && modprobe softib ndevs=0 sm_lid=17'
check "load $IPOIB_DRIVER ib_ipoib again" load_ipoib
check "rdma link add sibeth1" rdma link add sibeth1 type softib netdev sibe1
check "rdma link add sibeth2" rdma link add sibeth2 type softib netdev sibe2
check_wait "two ib interfaces" 20 sh -c 'test $(ls -d /sys/class/net/ib* | wc -l) = 2'
i1=$(basename "$(grep -l ':00:11$' /sys/class/net/ib*/address | head -n 1 | xargs dirname)")
i2=$(basename "$(grep -l ':00:12$' /sys/class/net/ib*/address | head -n 1 | xargs dirname)")
echo "sibeth1 -> $i1, sibeth2 -> $i2"
check "host c ($i1)" make_host c "$i1" 10.9.1.1/24
check "host d ($i2)" make_host d "$i2" 10.9.1.2/24
check_wait "carrier on $i1" 40 _t_has_carrier c "$i1"
check_wait "carrier on $i2" 40 _t_has_carrier d "$i2"
check_wait "ping c -> d over the ethernet transport" 40 in_host c ping -c 1 -W 2 10.9.1.2
in_host d iperf3 -s -D -p 5201 >/dev/null 2>&1
wait_for 10 sh -c '/usr/sbin/ip netns exec d ss -ltn | grep -q :5201'
in_host c iperf3 -c 10.9.1.2 -p 5201 -t 30 >/dev/null 2>&1 &
in_host c ping -i 0.1 -c 300 10.9.1.2 >/dev/null 2>&1 &
check_wait "traffic flows" 20 sh -c \
	"test \"\$(/usr/sbin/ip netns exec d cat /sys/class/net/$i2/statistics/rx_packets)\" -gt 500"
check "rdma link delete sibeth2 during traffic" rdma link delete sibeth2
check_wait "$i2 is gone" 20 sh -c "! /usr/sbin/ip netns exec d test -e /sys/class/net/$i2"
check "$i1 is still there" in_host c test -e "/sys/class/net/$i1"
killall iperf3 ping 2>/dev/null
check_wait "iperf3 and ping have ended" 10 sh -c '! pidof iperf3 ping >/dev/null'

# --- create_child racing device removal ---
# Writers hammer create_child while the device goes. The children and the
# port interface must go in one rtnl section: a child created in between
# would outlive its parent and keep resources of the removed device.
left=
for r in 1 2 3 4 5 6; do
	if ! rdma link add sibeth3 type softib netdev sibe2; then
		left="rdma link add failed"
		break
	fi
	wait_for 20 sh -c 'ls /sys/class/net | grep -q "^ib"'
	p=$(ls /sys/class/net | grep '^ib' | head -n 1)
	pids=
	for w in 1 2 3; do
		(while :; do echo 0x812$w >"/sys/class/net/$p/create_child"; done) 2>/dev/null &
		pids="$pids $!"
	done
	wait_for 10 sh -c "ls /sys/class/net | grep -q '^$p\.'"
	rdma link delete sibeth3
	kill $pids 2>/dev/null
	wait $pids 2>/dev/null
	left=$(ls /sys/class/net | grep '^ib')
	[ -n "$left" ] && break
done
echo "round $r, left: ${left:-nothing}"
check "create_child during device removal: no child outlives its parent" test -z "$left"
check "rmmod ib_ipoib with a device left" rmmod ib_ipoib

check "unload everything" unload_all
