#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# vms: 1
# boot: shared
# timeout: 420
#
# Three hosts on softib's Ethernet transport with our driver: three softib
# devices bound to veths on one bridge, each host's ib interface in its own
# netns; every host pings every other one (IPv4), ping6 works, and the port
# following the lower carrier brings the interface down and back.
. /tests/lib.sh

NHOSTS=3
SM_LID=17	# the LID of sibeth1 (MAC 02:00:00:00:00:11)

no_carrier() { ! _t_has_carrier "$1" "$2"; }

check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=$SM_LID" load_softib ndevs=0 sm_lid=$SM_LID
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check "load veth and bridge" modprobe -a veth bridge
check "bridge br0" sh -c '/usr/sbin/ip link add br0 type bridge forward_delay 0 && /usr/sbin/ip link set br0 up'
i=1
while [ $i -le $NHOSTS ]; do
	check "veth sibe$i on br0" eth_lower_add "sibe$i" "brp$i" br0 $i
	check "rdma link add sibeth$i" rdma link add "sibeth$i" type softib netdev "sibe$i"
	i=$((i + 1))
done
i=1
while [ $i -le $NHOSTS ]; do
	wait_for 20 ib_of_lid $((0x10 + i)) >/dev/null
	ibif=$(ib_of_lid $((0x10 + i)))
	eval "IB$i=$ibif"
	check "host$i: ${ibif:-?} in netns h$i" make_host "h$i" "$ibif" "10.77.0.$i/24" "fd77::$i/64"
	check_wait "host$i: carrier up" 90 _t_has_carrier "h$i" "$ibif"
	i=$((i + 1))
done

for pair in 1:2 1:3 2:1 2:3 3:1 3:2; do
	a=${pair%:*} b=${pair#*:}
	check_wait "host$a pings host$b" 60 in_host "h$a" ping -c 1 -W 2 "10.77.0.$b"
done
check_wait "host1 pings6 host3" 60 in_host h1 ping -6 -c 1 -W 2 fd77::3
check_wait "host3 pings6 host2" 60 in_host h3 ping -6 -c 1 -W 2 fd77::2
check "2044-byte datagrams with DF pass" in_host h1 ping -c 2 -W 3 -M do -s 2016 10.77.0.2

check "bridge port brp2 down" /usr/sbin/ip link set brp2 down
check_wait "host2: carrier off" 20 no_carrier h2 "$IB2"
check "bridge port brp2 up" /usr/sbin/ip link set brp2 up
check_wait "host2: carrier back" 60 _t_has_carrier h2 "$IB2"
check_wait "host1 pings host2 again" 60 in_host h1 ping -c 1 -W 2 10.77.0.2

check "unload everything" unload_all
