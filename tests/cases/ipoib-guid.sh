#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# boot: shared
# timeout: 300
#
# ip link set ibX address: a new GUID for the interface (review 2026-12,
# finding 15; the in-tree driver's ndo_set_mac_address, used for the alias
# GUIDs an SM gives SR-IOV virtual functions). softib gives each port two
# alias GUIDs (alias_guids=2: GID indexes 1 and 2). Refused while up
# (EBUSY), and when anything but the GUID changes or the GUID is 0
# (EINVAL); a GUID that is not in the port's GID table is refused with
# EADDRNOTAVAIL and a log line (the in-tree driver takes it and then cannot
# use it: a stock finding, checked). An alias GUID is taken: the address
# shows it, the link-local IPv6 address is made from it at the next up, a's
# traffic carries it (b's neighbour entry for a), a P_Key child made
# before follows its parent, and the port GUID can be set back.
. /tests/lib.sh

addr_of() { in_host "$1" cat "/sys/class/net/$2/address"; }
# gid_guid DEV IDX: the GUID of GID index IDX of DEV's port 1, as 00:02:...
gid_guid() {
	cut -d: -f5-8 "/sys/class/infiniband/$1/ports/1/gids/$2" | tr -d : |
		sed 's/../&:/g; s/:$//'
}
# ll_of GUID: the link-local IPv6 address the kernel makes from it (U/L bit)
ll_of() {
	local g
	g=$(echo "$1" | tr -d :)
	printf 'fe80::%x:%x:%x:%x' $((0x${g%????????????} ^ 0x0200)) \
		$((0x$(echo "$g" | cut -c5-8))) $((0x$(echo "$g" | cut -c9-12))) \
		$((0x$(echo "$g" | cut -c13-16)))
}
# refused WHAT ERRNO_TEXT ADDR: ip link set ib0 address ADDR fails with that
refused() {
	local out
	if out=$(in_host a ip link set dev ib0 address "$3" 2>&1); then
		fail "$1" "accepted"
		return
	fi
	case $out in
	*"$2"*) ok "$1 ($2)" ;;
	*) fail "$1" "$out" ;;
	esac
}
addr_ends() { addr_of "$1" "$2" | grep -q "$3\$"; }
neigh_has() { in_host b ip neigh show "$1" dev ib1 | grep -q "$2"; }
logged() { dmesg_since_mark | grep -q "$1"; }
has_ll() { in_host a ip -6 addr show dev ib0 | grep -q "inet6 $1/64"; }

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2 alias_guids=2" load_softib ndevs=2 alias_guids=2 || exit 0
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0
G0=$(gid_guid sib0 0)
A1=$(gid_guid sib0 1)
echo "sib0: port GUID $G0, alias GUIDs $A1 $(gid_guid sib0 2)"
check "sib0's GID table: two alias GUIDs besides the port GUID" \
	sh -c "[ -n '$A1' ] && [ '$A1' != '$G0' ] && [ -n '$(gid_guid sib0 2)' ]"
for d in sib0 sib1; do echo "1 0x8001" >"$(sib $d pkeys)"; done
check "host a (ib0)" make_host a ib0 10.61.0.1/24
check "host b (ib1)" make_host b ib1 10.61.0.2/24
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "ping a -> b" 30 pings a 10.61.0.2
check "a's child ib0.8001" in_host a sh -c \
	"ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001 &&
	 ip addr add 10.62.0.1/24 dev ib0.8001 && ip link set ib0.8001 up"
check "b's child ib1.8001" in_host b sh -c \
	"ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001 &&
	 ip addr add 10.62.0.2/24 dev ib1.8001 && ip link set ib1.8001 up"
check_wait "ping a -> b over the children" 30 pings a 10.62.0.2

old=$(addr_of a ib0)
pre=$(echo "$old" | cut -d: -f1-12)
check "ib0's address ends with the port GUID" addr_ends a ib0 "$G0"
refused "while up: refused" "Device or resource busy" "$pre:$A1"
check "ib0 down" in_host a ip link set ib0 down
q4=$(printf %02x $(((0x$(echo "$old" | cut -d: -f4) + 1) % 256)))
refused "another QPN: refused" "Invalid argument" \
	"$(echo "$old" | cut -d: -f1-3):$q4:$(echo "$old" | cut -d: -f5-12):$A1"
refused "another subnet prefix: refused" "Invalid argument" \
	"$(echo "$old" | cut -d: -f1-4):fe:c0:00:00:00:00:00:00:$A1"
refused "GUID 0: refused" "Invalid argument" "$pre:00:00:00:00:00:00:00:00"
NOTHERE=00:02:c9:03:77:77:77:77
if [ "$IPOIB_DRIVER" = ours ]; then
	dmesg_mark guid
	refused "a GUID not in the port's GID table: refused" \
		"Cannot assign requested address" "$pre:$NOTHERE"
	check "and logged" logged "is not in port 1's GID table"
	check "ib0's address unchanged" addr_ends a ib0 "$G0"
else
	# Seen 2026-12-06 with this case: the in-tree driver takes any GUID
	# with the right prefix and QPN, puts it in the address and finds it
	# later in no GID table (ipoib_dev_addr_changed_valid()).
	if in_host a ip link set dev ib0 address "$pre:$NOTHERE" 2>/dev/null; then
		ok "stock finding: a GUID not in the port's GID table is taken ($(addr_of a ib0 | cut -d: -f13-20))"
		in_host a ip link set dev ib0 address "$old"
	else
		ok "a GUID not in the port's GID table: refused"
	fi
fi

check "ip link set ib0 address <alias GUID, index 1>" \
	in_host a ip link set dev ib0 address "$pre:$A1"
check "ib0's address ends with the alias GUID" addr_ends a ib0 "$A1"
check "ib0 up" in_host a ip link set ib0 up
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "ping a -> b" 30 pings a 10.61.0.2
check_wait "b's neighbour entry for a holds the alias GUID" 10 neigh_has 10.61.0.1 "$A1"
check_wait "ib0's link-local address is made from the alias GUID ($(ll_of "$A1"))" 10 \
	has_ll "$(ll_of "$A1")"
check_wait "the child ib0.8001 follows its parent" 30 addr_ends a ib0.8001 "$A1"
check_wait "ping a -> b over the children" 30 pings a 10.62.0.2
check_wait "b's neighbour entry for a's child holds the alias GUID" 10 \
	sh -c "/usr/sbin/ip netns exec b ip neigh show 10.62.0.1 dev ib1.8001 | grep -q '$A1'"

check "ib0 down" in_host a ip link set ib0 down
# (the QPN may have changed with the up: the address as it is now)
pre=$(addr_of a ib0 | cut -d: -f1-12)
check "ip link set ib0 address <the port GUID>" in_host a ip link set dev ib0 address "$pre:$G0"
check "ib0 up" in_host a ip link set ib0 up
check "ib0's address ends with the port GUID" addr_ends a ib0 "$G0"
check_wait "carrier on ib0" 30 _t_has_carrier a ib0
check_wait "ping a -> b" 30 pings a 10.61.0.2
check_wait "the child follows again" 30 addr_ends a ib0.8001 "$G0"
check "unload everything" unload_all
