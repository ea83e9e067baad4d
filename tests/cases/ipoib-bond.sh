#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 480
#
# IPoIB bonding, as HA sites run it: bond0 in active-backup mode over ib0
# and ib1 (two HCAs) in host a, ib2 in host b. The bond takes the IPoIB
# link type and hardware address of its active slave (fail_over_mac
# active: an IB port's address cannot be set); IPv4 and IPv6 work through
# it; when the active slave's port goes down the bond fails over to the
# other one, announces the new address, and pings both ways and a TCP
# transfer running across the failover go on (sha256 equal); it fails back
# when the other port goes down. rdma_cm resolves and reaches a listener
# bound to the bond's address (the request's interface is enslaved: the
# driver's get_net_dev_by_params answers with the bond). Clean teardown.
. /tests/lib.sh

RT=/sys/kernel/debug/rdmacm_test
BOND=/sys/class/net/bond0/bonding

rt() {	# rt NS CMD...: one command to rdmacm_test from namespace NS
	local ns=$1
	shift
	in_host "$ns" sh -c "mount -t debugfs none /sys/kernel/debug 2>/dev/null;
		echo '$*' >$RT/ctl"
}
bond() { in_host a cat "$BOND/$1"; }
active_is() { [ "$(bond active_slave)" = "$1" ]; }
addr_of() { in_host a cat "/sys/class/net/$1/address"; }
bond_addr_is_of() { [ "$(addr_of bond0)" = "$(addr_of "$1")" ]; }
# b_neigh_is IF: b's neighbour entry for the bond's address holds IF's address
b_neigh_is() {
	in_host b ip neigh show 10.9.0.1 dev ib2 | grep -q "lladdr $(addr_of "$1")"
}

check "load the IB core" load_ib_core || exit 0
# the SM on b's port: a port of a that goes down must not take the SM along
check "load softib ndevs=3 sm_lid=3" load_softib ndevs=3 sm_lid=3 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check "load bonding" modprobe bonding max_bonds=0 || exit 0
check "load rdmacm_test (rdma_cm)" modprobe rdmacm_test timeout_ms=2000 || exit 0
check_wait "ib0, ib1 and ib2 exist" 20 test -d /sys/class/net/ib2 || exit 0

check "host a with ib0 and ib1" sh -c '/usr/sbin/ip netns add a &&
	/usr/sbin/ip link set ib0 netns a && /usr/sbin/ip link set ib1 netns a &&
	/usr/sbin/ip -n a link set lo up'
check "bond0: active-backup, miimon 100" \
	in_host a ip link add bond0 type bond mode active-backup miimon 100
check "enslave ib0" in_host a ip link set ib0 master bond0
check "enslave ib1" in_host a ip link set ib1 master bond0
in_host a ip addr add 10.9.0.1/24 dev bond0
in_host a ip -6 addr add fd00:9::1/64 dev bond0 nodad
in_host a ip link set bond0 up
check "host b (ib2)" make_host b ib2 10.9.0.2/24 fd00:9::2/64
in_host a ip -d link show bond0
in_host a cat /proc/net/bonding/bond0

check "bond0 took the IPoIB link type (32) and 20-byte addresses" sh -c \
	"test \"\$(/usr/sbin/ip netns exec a cat /sys/class/net/bond0/type)\" = 32 &&
	 test \"\$(/usr/sbin/ip netns exec a cat /sys/class/net/bond0/addr_len)\" = 20"
check "fail_over_mac is active (an IB port's address cannot be set)" sh -c \
	"/usr/sbin/ip netns exec a cat $BOND/fail_over_mac | grep -q '^active'"
check_wait "carrier on bond0 and ib2" 30 sh -c \
	'/usr/sbin/ip -n a -o link show bond0 | grep -q LOWER_UP &&
	 /usr/sbin/ip -n b -o link show ib2 | grep -q LOWER_UP'
first=$(bond active_slave)
case $first in ib0) second=ib1; dfirst=sib0; dsecond=sib1 ;; *) second=ib0; dfirst=sib1; dsecond=sib0 ;; esac
check "an active slave ($first), bond0 has its address" bond_addr_is_of "$first"
check_wait "ping a (bond0) -> b" 30 pings a 10.9.0.2
check_wait "ping b -> a (bond0)" 10 pings b 10.9.0.1
check_wait "ping6 a (bond0) -> b" 30 pings a fd00:9::2
check "b knows bond0 by $first's address" b_neigh_is "$first"

# --- failover ---
# an 8 MiB TCP echo runs while the active slave's port goes down
tcp_echo_serve b 5202
head -c $((8 * 1024 * 1024)) /dev/urandom >/tmp/bond.tx
r0=$(sib_counter sib2 rx_packets)
tcp_echo_client a 10.9.0.2 5202 /tmp/bond.tx /tmp/bond.rx 120 2>/dev/null &
echo_pid=$!
check_wait "the transfer is under way" 20 sib_counter_ge sib2 rx_packets $((r0 + 400))
check "port of $first down (softib $dfirst)" sh -c "echo down >$(sib $dfirst state)"
check_wait "bond0 failed over to $second" 10 active_is "$second"
check "bond0 has $second's address now" bond_addr_is_of "$second"
check_wait "b learnt the new address (the bond's announcement)" 10 b_neigh_is "$second"
check_wait "ping b -> a after the failover" 10 pings b 10.9.0.1
check_wait "ping a -> b after the failover" 10 pings a 10.9.0.2
wait $echo_pid
sa=$(sha256sum </tmp/bond.tx | cut -c1-64)
sb=$(sha256sum </tmp/bond.rx | cut -c1-64)
check "8 MiB TCP echo across the failover: sha256 equal ($(wc -c </tmp/bond.rx) bytes back)" \
	test "$sa" = "$sb"

# --- rdma_cm through the bond ---
check "listen in a on the bond's address 10.9.0.1:7001" rt a listen 7001 10.9.0.1
check "rdma_cm from b to the bond's address: connect" rt b connect 10.9.0.1 7001
res=$(cat $RT/result)
echo "client: $res"
check "rdma_cm from b to the bond's address: established" \
	sh -c "echo '$res' | grep -q 'event=ESTABLISHED'"

# --- failback ---
check "port of $first up again" sh -c "echo up >$(sib $dfirst state)"
check_wait "$first is a working slave again" 20 sh -c \
	"/usr/sbin/ip netns exec a cat /proc/net/bonding/bond0 | awk '/^Slave Interface: $first/ { s = 1 } s && /^MII Status:/ { print; exit }' | grep -q up"
check "port of $second down (softib $dsecond)" sh -c "echo down >$(sib $dsecond state)"
check_wait "bond0 failed back to $first" 10 active_is "$first"
check_wait "ping b -> a after the failback" 15 pings b 10.9.0.1
check "port of $second up" sh -c "echo up >$(sib $dsecond state)"

# --- teardown ---
check "release ib0 and ib1" sh -c \
	'/usr/sbin/ip -n a link set ib0 nomaster && /usr/sbin/ip -n a link set ib1 nomaster'
check "delete bond0" in_host a ip link del bond0
check "unload bonding" rmmod bonding
check "unload everything" unload_all
