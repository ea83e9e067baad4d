#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: stock
# vms: 1
# boot: shared
# timeout: 420
#
# softib's Ethernet transport in one VM: three softib devices bound with
# "rdma link add" to three veths on one bridge (no in-kernel devices), each
# host's ib interface in its own netns. The hosts ping each other with this
# VM's ib_ipoib; the port follows the lower carrier and MTU; "rdma link
# delete" removes a device; deleting the lower veth removes its device;
# unloading softib with devices still bound leaves the veths free.
. /tests/lib.sh

NHOSTS=3
SM_LID=17	# 0x11: the LID of sibeth1 (MAC 02:00:00:00:00:11)

port_state_is() {	# port_state_is IBDEV WORD
	grep -q "$2" "/sys/class/infiniband/$1/ports/1/state"
}

eth_stat() {	# eth_stat IBDEV NAME: a transport counter of the "eth" debugfs file
	awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) exit 1 }' "$(sib "$1" eth)"
}

eth_stat_positive() { [ "$(eth_stat "$1" "$2")" -gt 0 ]; }

check "load the IB core" load_ib_core
check "load softib ndevs=0 sm_lid=$SM_LID" load_softib ndevs=0 sm_lid=$SM_LID
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib
check "load veth and bridge" modprobe -a veth bridge
check "bridge br0" sh -c '/usr/sbin/ip link add br0 type bridge forward_delay 0 && /usr/sbin/ip link set br0 up'

i=1
while [ $i -le $NHOSTS ]; do
	check "veth sibe$i on br0" eth_lower_add "sibe$i" "brp$i" br0 $i
	check "rdma link add sibeth$i type softib netdev sibe$i" \
		rdma link add "sibeth$i" type softib netdev "sibe$i"
	i=$((i + 1))
done
check "rdma link shows sibeth1 on sibe1" sh -c 'rdma link show sibeth1/1 | grep -q "netdev sibe1"'
check "sibeth2 has LID 0x12" sh -c 'rdma link show sibeth2/1 | grep -q "lid 18 "'
check "every port has SM LID $SM_LID" sh -c \
	"[ \$(rdma link show | grep -c 'sm_lid $SM_LID ') = $NHOSTS ]"
check "the lower MTU 4200 gives IB MTU 4096" grep -q "ib_mtu 4096" "$(sib sibeth1 eth)"

i=1
while [ $i -le $NHOSTS ]; do
	ibif=$(ib_of_lid "$(eth_lid $i)")
	eval "IB$i=$ibif"
	if [ -z "$ibif" ]; then
		fail "host$i has an ib interface" "no ib netdev with LID $(eth_lid $i)"
	else
		check "host$i: $ibif in netns h$i" make_host "h$i" "$ibif" "10.77.0.$i/24" "fd77::$i/64"
		check_wait "host$i: $ibif carrier up" 90 _t_has_carrier "h$i" "$ibif"
	fi
	i=$((i + 1))
done

for pair in 1:2 1:3 2:1 2:3 3:1 3:2; do
	a=${pair%:*} b=${pair#*:}
	check_wait "host$a pings host$b" 60 in_host "h$a" ping -c 1 -W 2 "10.77.0.$b"
done
check_wait "host1 pings6 host3" 60 in_host h1 ping -6 -c 1 -W 2 fd77::3
check "2044-byte datagrams with DF pass" in_host h1 ping -c 2 -W 3 -M "do" -s 2016 10.77.0.2
check "unicast went to a learned MAC" eth_stat_positive sibeth1 tx_unicast
check "sibeth1 learned sibeth2's MAC" sh -c "grep -q 'l2 0x0012 $(eth_mac 2)' $(sib sibeth1 eth)"
check "no frame was refused by the parser" sh -c \
	"[ \$(cat $(sib sibeth1 eth) $(sib sibeth2 eth) $(sib sibeth3 eth) | awk '\$1 == \"rx_bad\" { s += \$2 } END { print s }') = 0 ]"

# the fabric's corrupt fault on the Ethernet path: a bit flipped after the
# ICRC, so the receiving port counts drop_icrc
icrc0=$(sib_counter sibeth2 drop_icrc)
check "corrupt_pct 100" sh -c "echo 100 >$SIB_DEBUGFS/corrupt_pct"
check_fail "host1 cannot ping host2 with every frame corrupted" in_host h1 ping -c 2 -W 2 10.77.0.2
check "corrupt_pct 0" sh -c "echo 0 >$SIB_DEBUGFS/corrupt_pct"
check "sibeth1 sent corrupted frames" eth_stat_positive sibeth1 tx_corrupted
check "sibeth2 counted them as drop_icrc" test "$(sib_counter sibeth2 drop_icrc)" -gt "$icrc0"
check_wait "host1 pings host2 after the corruption stops" 60 in_host h1 ping -c 1 -W 2 10.77.0.2

# the port follows the lower carrier
check "bridge port brp2 down" ip link set brp2 down
check_wait "sibeth2 port DOWN" 10 port_state_is sibeth2 DOWN
check_wait "host2: $IB2 carrier off" 20 sh -c "! /usr/sbin/ip -n h2 -o link show dev $IB2 | grep -q LOWER_UP"
check "bridge port brp2 up" ip link set brp2 up
check_wait "sibeth2 port ACTIVE" 10 port_state_is sibeth2 ACTIVE
check_wait "host2: $IB2 carrier back" 60 _t_has_carrier h2 "$IB2"
check_wait "host1 pings host2 again" 60 in_host h1 ping -c 1 -W 2 10.77.0.2

# the port MTU follows the lower MTU
check "sibe3 mtu 1500" ip link set sibe3 mtu 1500
check_wait "sibeth3 IB MTU 1024" 5 grep -q "ib_mtu 1024" "$(sib sibeth3 eth)"
check "sibe3 mtu 4200" ip link set sibe3 mtu 4200
check_wait "sibeth3 IB MTU 4096" 5 grep -q "ib_mtu 4096" "$(sib sibeth3 eth)"

# refusals
check_fail "a second link on sibe1 is refused" rdma link add sibethx type softib netdev sibe1
check_fail "a link on lo is refused" rdma link add sibethlo type softib netdev lo

# removal, each while a ping flood runs towards the device going away (once
# it gets there: 50 packets more received)
rx_in() { in_host "$1" cat "/sys/class/net/$2/statistics/rx_packets"; }
rx_in_above() { [ "$(rx_in "$1" "$2")" -gt "$3" ]; }
r=$(rx_in h3 "$IB3")
in_host h1 ping -f -w 4 10.77.0.3 >/dev/null 2>&1 &
check_wait "the flood reaches host3" 10 rx_in_above h3 "$IB3" $((r + 50))
check "rdma link delete sibeth3" rdma link delete sibeth3
check_wait "sibeth3 gone" 20 test ! -e /sys/class/infiniband/sibeth3
check_wait "host3: $IB3 gone" 20 sh -c "! /usr/sbin/ip -n h3 link show dev $IB3 2>/dev/null"
wait
r=$(rx_in h2 "$IB2")
in_host h1 ping -f -w 4 10.77.0.2 >/dev/null 2>&1 &
check_wait "the flood reaches host2" 10 rx_in_above h2 "$IB2" $((r + 50))
check "ip link del sibe2 (the lower of sibeth2)" ip link del sibe2
check_wait "sibeth2 gone with its lower netdev" 20 test ! -e /sys/class/infiniband/sibeth2
check_wait "sibeth1 still pings itself" 30 in_host h1 ping -c 1 -W 2 10.77.0.1
wait
check "rdma link add sibeth3 again on sibe3" rdma link add sibeth3 type softib netdev sibe3
check_wait "sibeth3 back" 10 test -e /sys/class/infiniband/sibeth3

# unload with sibeth1 and sibeth3 still bound: the veths must be free after
check "unload everything" unload_all
check "sibe1 and sibe3 can be deleted" timeout 20 sh -c \
	'/usr/sbin/ip link del sibe1 && /usr/sbin/ip link del sibe3'
