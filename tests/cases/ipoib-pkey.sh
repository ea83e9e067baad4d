#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 420
# tier: 612 7
# sm: embedded opensm
#
# P_Key child interfaces, both ways: `ip link add ... type ipoib pkey` and
# the parent's sysfs create_child/delete_child. Children carry traffic in
# partition 0x8001 between two hosts, `ip -d link` shows pkey/mode/umcast,
# sysfs shows pkey/mode/umcast/parent/dev_port, every invalid request gets
# its errno, deleting works, and a NetworkManager-style sequence (write
# create_child, set mode, bring up, ping) works in partition 0x8002.
# Under softib's SA the P_Keys are written into the tables by hand; under
# OpenSM they come from its partitions.conf, which makes the partitions'
# broadcast groups.
. /tests/lib.sh

SM_PARTITIONS='Default=0x7fff, ipoib, mtu=4, defmember=full : ALL=full ;
P1=0x0001, ipoib, mtu=4, rate=7 : ALL=full ;
P2=0x0002, ipoib, mtu=4, rate=7 : ALL=full ;'
has_pkeys() {	# has_pkeys DEV PKEY...: DEV's table holds every PKEY
	local d=$1 k
	shift
	for k in "$@"; do
		grep -qx "$k" /sys/class/infiniband/"$d"/ports/1/pkeys/* || return 1
	done
}
pkeys_from_sm() { has_pkeys sib0 0x8001 0x8002 && has_pkeys sib1 0x8001 0x8002; }

# wr_err FILE VALUE: write VALUE to FILE, print the error (empty if none)
wr_err() { sh -c "echo $2 >$1" 2>&1 | sed 's/.*write error: //'; }
# wr_errno NAME FILE VALUE ERRTEXT: the write fails with ERRTEXT
wr_errno() {
	local out
	out=$(wr_err "$2" "$3")
	case $out in
	*"$4"*) ok "$1" ;;
	*) fail "$1" "got '${out:-success}', expected '$4'" ;;
	esac
}
# ip_fails NAME MSG ARGS...: `ip ARGS` fails, output has MSG (ours) or any
ip_fails() {
	local name=$1 msg=$2 out
	shift 2
	if out=$(/usr/sbin/ip "$@" 2>&1); then
		fail "$name" "succeeded"
		return
	fi
	echo "$out"
	if [ "$IPOIB_DRIVER" = ours ] && ! echo "$out" | grep -qi "$msg"; then
		fail "$name" "message '$out' lacks '$msg'"
		return
	fi
	ok "$name"
}
gone() { ! ip link show "$1" >/dev/null 2>&1; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
if [ "$SM_MODE" = opensm ]; then
	check_wait "OpenSM put 0x8001 and 0x8002 in the P_Key tables" 30 pkeys_from_sm
else
	for d in sib0 sib1; do
		check "$d's P_Key table: 0x8001 at index 1" pkey_set $d 1 0x8001
		check "$d's P_Key table: 0x8002 at index 2" pkey_set $d 2 0x8002
	done
fi
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0

# --- rtnetlink child ---
check "ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001" \
	ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001
out=$(ip -d link show ib0.8001)
echo "$out"
check "ip -d link: ipoib pkey 0x8001 mode datagram umcast 0000" sh -c \
	"echo '$out' | grep -q 'ipoib pkey 0x8001 mode datagram umcast 0000'"
check "ip link shows ib0.8001@ib0" sh -c "echo '$out' | grep -q 'ib0.8001@ib0'"
check "ib0.8001 dev_port is 0" test "$(cat /sys/class/net/ib0.8001/dev_port)" = 0
check "ib0.8001 broadcast address carries P_Key 0x8001" \
	grep -q '^00:ff:ff:ff:ff:12:40:1b:80:01:' /sys/class/net/ib0.8001/broadcast
check "umcast 1 through changelink" ip link set ib0.8001 type ipoib umcast 1
check "ip -d link: umcast 0001" sh -c "/usr/sbin/ip -d link show ib0.8001 | grep -q 'umcast 0001'"
check "umcast 0 again" ip link set ib0.8001 type ipoib umcast 0

# --- sysfs child ---
check "echo 0x8001 > ib1/create_child" sh -c 'echo 0x8001 >/sys/class/net/ib1/create_child'
check_wait "ib1.8001 exists" 10 test -d /sys/class/net/ib1.8001
check "ib1.8001 pkey file: 0x8001" grep -qx 0x8001 /sys/class/net/ib1.8001/pkey
check "ib1.8001 mode file: datagram" grep -qx datagram /sys/class/net/ib1.8001/mode
check "ib1.8001 parent file: ib1" grep -qx ib1 /sys/class/net/ib1.8001/parent
check "ib1 pkey file: 0xffff" grep -qx 0xffff /sys/class/net/ib1/pkey
check "ib1 umcast file: 0" grep -qx 0 /sys/class/net/ib1/umcast
check "ip -d link ib1.8001: pkey 0x8001" sh -c "/usr/sbin/ip -d link show ib1.8001 | grep -q 'ipoib pkey 0x8001 mode datagram'"

# --- invalid requests ---
wr_errno "create_child 0: EINVAL" /sys/class/net/ib1/create_child 0 "Invalid argument"
wr_errno "create_child 0x8000: EINVAL" /sys/class/net/ib1/create_child 0x8000 "Invalid argument"
wr_errno "create_child 0x10000: EINVAL" /sys/class/net/ib1/create_child 0x10000 "Invalid argument"
wr_errno "create_child junk: EINVAL" /sys/class/net/ib1/create_child junk "Invalid argument"
wr_errno "second create_child 0x8001: ENOTUNIQ" /sys/class/net/ib1/create_child 0x8001 "Name not unique"
wr_errno "create_child of the parent's own P_Key: ENOTUNIQ" /sys/class/net/ib1/create_child 0xffff "Name not unique"
wr_errno "delete_child 0x8005 (none): ENODEV" /sys/class/net/ib1/delete_child 0x8005 "No such device"
wr_errno "delete_child 0x10000: EINVAL" /sys/class/net/ib1/delete_child 0x10000 "Invalid argument"
check "a child has no create_child file" test ! -e /sys/class/net/ib1.8001/create_child
ip_fails "ip link add pkey 0: EINVAL" "invalid" link add link ib0 name bad0 type ipoib pkey 0
ip_fails "ip link add pkey 0x8000: EINVAL" "invalid" link add link ib0 name bad1 type ipoib pkey 0x8000
ip_fails "ip link add pkey 0x10000 is refused" "pkey" link add link ib0 name bad2 type ipoib pkey 0x10000
ip_fails "child of a child: EINVAL" "cannot have children" link add link ib0.8001 name bad3 type ipoib pkey 0x8002
check "no bad* interface was left behind" sh -c '! /usr/sbin/ip -o link | grep -q " bad[0-9]"'
if [ "$IPOIB_DRIVER" = ours ]; then
	# connected mode (design.rst): a child switches both ways, and is made in it
	check "sysfs: a child to connected mode" sh -c 'echo connected >/sys/class/net/ib1.8001/mode'
	check "the child reads connected, MTU 65520" sh -c \
		'grep -qx connected /sys/class/net/ib1.8001/mode && grep -qx 65520 /sys/class/net/ib1.8001/mtu'
	wr_errno "mode bogus: EINVAL" /sys/class/net/ib1.8001/mode bogus "Invalid argument"
	check "mode datagram is accepted" sh -c 'echo datagram >/sys/class/net/ib1.8001/mode'
	check "datagram: the MTU is back within what UD carries" sh -c \
		'[ "$(cat /sys/class/net/ib1.8001/mtu)" -le 4092 ]'
	check "ip link add ... mode connected makes a connected-mode child" \
		ip link add link ib0 name cm4 type ipoib pkey 0x8003 mode connected
	check "cm4 reads mode connected" sh -c '/usr/sbin/ip -d link show cm4 | grep -q "mode connected"'
	check "cm4 deleted" ip link del cm4
fi
# An MTU given at creation is the administrator's and must survive the join.
# Stock finding (testing.rst, "Where the drivers are checked apart"): the
# in-tree driver forgets it, so for it the case checks what it does.
check "ip link add ... mtu 1500 type ipoib pkey 0x8001 (a second child, same P_Key)" \
	ip link add link ib0 name ib0.m mtu 1500 type ipoib pkey 0x8001
check "ib0.m up" ip link set ib0.m up
check_wait "ib0.m carrier on" 30 sh -c '/usr/sbin/ip -o link show ib0.m | grep -q LOWER_UP'
if [ "$IPOIB_DRIVER" = ours ]; then
	check "ib0.m keeps MTU 1500 after the join" test "$(cat /sys/class/net/ib0.m/mtu)" = 1500
else
	check "stock finding: ib0.m's MTU 1500 is replaced by the group's 2044 at the join" \
		test "$(cat /sys/class/net/ib0.m/mtu)" = 2044
fi
check "ip link del ib0.m" ip link del ib0.m

# --- traffic in partition 0x8001 ---
check "host a (ib0.8001)" make_host a ib0.8001 10.31.0.1/24 fd31::1/64
check "host b (ib1.8001)" make_host b ib1.8001 10.31.0.2/24 fd31::2/64
check_wait "carrier on ib0.8001" 30 _t_has_carrier a ib0.8001
check_wait "carrier on ib1.8001" 30 _t_has_carrier b ib1.8001
check_wait "partition 0x8001: ping a -> b" 30 pings a 10.31.0.2
check_wait "partition 0x8001: ping b -> a" 10 pings b 10.31.0.1
check_wait "partition 0x8001: ping6 a -> b" 30 in_host a ping -6 -c 1 -W 2 fd31::2
check "partition 0x8001: 5 pings" in_host a ping -c 5 -i 0.2 -W 2 10.31.0.2
sm_groups | grep -i 8001

# --- NetworkManager-style: create_child, mode, up, ping ---
check "NM: echo 0x8002 > ib0/create_child" sh -c 'echo 0x8002 >/sys/class/net/ib0/create_child'
check "NM: echo 0x8002 > ib1/create_child" sh -c 'echo 0x8002 >/sys/class/net/ib1/create_child'
check_wait "NM: ib0.8002 and ib1.8002 exist" 10 sh -c 'test -d /sys/class/net/ib0.8002 && test -d /sys/class/net/ib1.8002'
check "NM: echo datagram > ib0.8002/mode" sh -c 'echo datagram >/sys/class/net/ib0.8002/mode'
check "NM: echo datagram > ib1.8002/mode" sh -c 'echo datagram >/sys/class/net/ib1.8002/mode'
check "NM: host c (ib0.8002)" make_host c ib0.8002 10.32.0.1/24
check "NM: host d (ib1.8002)" make_host d ib1.8002 10.32.0.2/24
check_wait "NM: carrier on ib0.8002" 30 _t_has_carrier c ib0.8002
check_wait "NM: partition 0x8002: ping c -> d" 30 pings c 10.32.0.2

# --- deleting ---
check "ip link del ib0.8001" in_host a ip link del ib0.8001
check_wait "ib0.8001 is gone" 10 sh -c '! /usr/sbin/ip -n a link show ib0.8001 2>/dev/null'
check "echo 0x8001 > ib1/delete_child" sh -c 'echo 0x8001 >/sys/class/net/ib1/delete_child'
check_wait "ib1.8001 is gone" 10 sh -c '! /usr/sbin/ip -n b link show ib1.8001 2>/dev/null'
check "echo 0x8002 > ib0/delete_child" sh -c 'echo 0x8002 >/sys/class/net/ib0/delete_child'
check_wait "ib0.8002 is gone" 10 sh -c '! /usr/sbin/ip -n c link show ib0.8002 2>/dev/null'
# rtnl_link_ops.dellink returns nothing, so no driver can refuse: both
# ignore a port interface, `ip link del` exits 0 and the interface stays.
check "ip link del ib0 (a port interface) exits 0" ip link del ib0
check "ib0 (the port interface) is still in place" test -d /sys/class/net/ib0

# like a port interface, a child comes back when its namespace dies
check "delete netns d holding the child ib1.8002" ip netns del d
check_wait "ib1.8002 is back in the initial namespace" 20 test -d /sys/class/net/ib1.8002

# ib1.8002 is still there: unloading must remove it with its parent
check "unload everything (ib1.8002 still exists)" unload_all
check "nothing left loaded" sh -c '! ls -d /sys/module/softib /sys/module/ib_ipoib /sys/module/ib_core 2>/dev/null'
