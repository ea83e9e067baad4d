#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 300
#
# softib teardown under load: rmmod softib while the stock ib_ipoib is
# loaded and traffic flows removes every device (the IB core detaches
# ipoib first) with no kernel report; loading softib again brings the
# devices and ipoib's interfaces back and traffic works; ndevs=0 loads
# with no device; a bad port_mtu is refused.
. /tests/lib.sh

PING_W=1	# pings (lib.sh): wait 1 s for the reply
ndev_count() { ls /sys/class/infiniband 2>/dev/null | wc -l; }
ndevs_are() { [ "$(ndev_count)" = "$1" ]; }

up_hosts() {	# up_hosts ROUND: two hosts on ib0/ib1, pinging
	check "round $1: host a (ib0)" make_host a ib0 10.9.0.1/24
	check "round $1: host b (ib1)" make_host b ib1 10.9.0.2/24
	check_wait "round $1: ping a -> b" 40 pings a 10.9.0.2
}

# refused for the reason softib gives (softib_init), not any other
mtu_refused() {
	dmesg_mark port_mtu
	if modprobe softib port_mtu=3000; then
		echo "softib loaded with port_mtu=3000"
		return 1
	fi
	logged "softib: port_mtu 3000 is not an IB MTU"
}

check "load the IB core" load_ib_core || exit 0
check "port_mtu 3000 is refused: 'port_mtu 3000 is not an IB MTU'" mtu_refused
check "load softib ndevs=0" load_softib ndevs=0
check "ndevs=0: no device" test "$(ndev_count)" = 0
check "unload softib" rmmod softib

check "load softib ndevs=3 port_mtu=2048" load_softib ndevs=3 port_mtu=2048
check_wait "three devices" 10 ndevs_are 3
check "sib2 is LID 3, MTU 2048" sh -c 'rdma link show sib2/1 | grep -q "lid 3 " && ibstat sib2 | grep -q "Base lid: 3"'
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0..ib2 exist" 20 test -d /sys/class/net/ib2
up_hosts 1

# traffic in both directions while the HCA goes away
b_rx() { in_host b cat /sys/class/net/ib1/statistics/rx_packets; }
b_rx_above() { [ "$(b_rx)" -gt "$1" ]; }
r0=$(b_rx)
in_host a ping -i 0.01 -q 10.9.0.2 >/dev/null 2>&1 &
in_host b ping -i 0.01 -q 10.9.0.1 >/dev/null 2>&1 &
check_wait "traffic flows: ib1 received 100 packets more" 20 b_rx_above $((r0 + 100))
check "rmmod softib under traffic (ib_ipoib stays loaded)" rmmod softib
check "no softib device left" test "$(ndev_count)" = 0
check_wait "ipoib's interfaces are gone" 10 sh -c '! /usr/sbin/ip -n a link show ib0 >/dev/null 2>&1 && ! /usr/sbin/ip -n b link show ib1 >/dev/null 2>&1'
check "softib's debugfs directory is gone" test ! -e "$SIB_DEBUGFS"
kill %1 %2 2>/dev/null
wait
ip netns del a
ip netns del b

check "load softib again" load_softib ndevs=2
check_wait "ipoib attaches to the new devices" 20 test -d /sys/class/net/ib1
up_hosts 2
check "unload everything" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
