#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours stock
# vms: 1
# timeout: 300
# vm-hook: tests/vm/nm/vm-hook.sh
#
# An administrator's NetworkManager drives the interface: Debian's
# NetworkManager 1.42 (with nmcli and a D-Bus system bus; the VM hook adds
# them) manages ib0 in host a, as it would on a node, while host b (ib1 and
# its child ib1.8001) is the head node with Debian's dnsmasq serving DHCP on
# both. With nmcli: an infiniband connection with a static address comes up
# by itself; it switches to DHCP and gets a lease over IPoIB (RFC 4390:
# NetworkManager's own DHCP client, a client identifier instead of chaddr,
# replies by broadcast); a P_Key child made by NetworkManager
# (infiniband.parent, infiniband.p-key) gets its lease in partition 0x8001;
# the transport mode goes to connected (MTU 65520) and back; the port flaps
# and NetworkManager takes the connection down and brings it back by
# itself; deleting the child's connection deletes the child.
# NetworkManager runs in the initial namespace, beside Debian's udevd (it
# waits for udev to have seen a device before it manages it), as on a node.
. /tests/lib.sh
# shellcheck source=tests/vm/nfsroot/ipoib-nfsroot.sh
. /tests/vm/nfsroot/ipoib-nfsroot.sh	# ipoib_nfsroot_nm_deps

N=/tmp/nm

nmc() { timeout 60 /usr/bin/nmcli "$@"; }	# (a hung nmcli must not hang the case)
reaches() { ping -c 1 -W 2 "$1" >/dev/null 2>&1; }	# from NetworkManager's host
# con_state CON: the state of connection CON (empty when not active)
con_state() { nmc -g GENERAL.STATE connection show "$1" 2>/dev/null; }
con_active() { [ "$(con_state "$1")" = activated ]; }
# dev_state DEV: NetworkManager's state of DEV, e.g. "100 (connected)"
dev_state() { nmc -g GENERAL.STATE device show "$1" 2>/dev/null; }
dev_is() { dev_state "$1" | grep -q "($2)"; }
a_sys() { cat "/sys/class/net/$1/$2"; }
a_sys_is() { [ "$(a_sys "$1" "$2")" = "$3" ]; }
# addr4 DEV: DEV's (first) IPv4 address
addr4() { ip -4 -o addr show dev "$1" | awk '{ sub(/\/.*/, "", $4); print $4; exit }'; }
# in_pool DEV NET: DEV's address is in NET.100-NET.119 (dnsmasq's range)
in_pool() {
	local a
	a=$(addr4 "$1")
	case $a in
	"$2".1[01][0-9]) return 0 ;;
	esac
	return 1
}
# lease_of IP: dnsmasq's lease line for IP ("expiry hwaddr ip name client-id")
lease_of() { awk -v ip="$1" '$3 == ip' $N/dnsmasq.leases; }
# rfc4390_lease IP DEV: the lease of IP is RFC 4390's: hardware type 32 with
# an empty chaddr (dnsmasq writes "20-"), and a client identifier that holds
# DEV's port GUID (the last 8 bytes of its 20-byte address; never the QPN,
# which changes with every boot)
rfc4390_lease() {
	local guid
	guid=$(cut -d: -f13-20 "/sys/class/net/$2/address")
	lease_of "$1" | awk -v g="$guid" '$2 == "20-" && $5 ~ (g "$") { f = 1 } END { exit !f }'
}
# nm_up CON: activate CON and wait for it (nmcli's own wait, 90 s)
nm_up() { timeout 120 /usr/bin/nmcli --wait 90 connection up "$1"; }
# nm_mode MODE MTU: ibs to transport mode MODE with MTU, through nmcli
nm_mode() {
	check "ibs: transport-mode $1, MTU $2" \
		nmc connection modify ibs infiniband.transport-mode "$1" infiniband.mtu "$2"
	check "nmcli connection up ibs ($1)" nm_up ibs || return
	check "ib0's mode is $1" a_sys_is ib0 mode "$1"
	check "ib0's MTU is $2" a_sys_is ib0 mtu "$2"
	check_wait "ping the head node in $1 mode" 30 reaches 10.57.0.1
}
show() {
	nmc -f DEVICE,TYPE,STATE,CONNECTION device
	ip -d addr
	tail -n 20 $N/nm.log
}

check "load the IB core" load_ib_core || exit 0
check "load softib ndevs=2" load_softib ndevs=2 || exit 0
for d in sib0 sib1; do
	check "P_Key 0x8001 at index 1 of $d" pkey_set $d 1 0x8001
done
check "load $IPOIB_DRIVER ib_ipoib" load_ipoib || exit 0
check_wait "ib0 and ib1 exist" 20 test -d /sys/class/net/ib1 || exit 0

# --- the head node: b with ib1 and ib1.8001, dnsmasq serving both ---
check "ib1.8001 for the head node" ip link add link ib1 name ib1.8001 type ipoib pkey 0x8001
check "host b (ib1)" make_host b ib1 10.57.0.1/24
check "ib1.8001 into b, 10.58.0.1/24" sh -c \
	'/usr/sbin/ip link set ib1.8001 netns b &&
	 /usr/sbin/ip -n b addr add 10.58.0.1/24 dev ib1.8001 &&
	 /usr/sbin/ip -n b link set ib1.8001 up'
mkdir -p $N/connections /var/lib/NetworkManager /run/NetworkManager /run/dbus
: >$N/dnsmasq.leases
in_host b /usr/sbin/dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 \
	--user=root --group=root --bind-interfaces --interface=ib1 --interface=ib1.8001 \
	--dhcp-range=10.57.0.100,10.57.0.119,255.255.255.0,10m \
	--dhcp-range=10.58.0.100,10.58.0.119,255.255.255.0,10m \
	--dhcp-leasefile=$N/dnsmasq.leases --dhcp-authoritative --log-dhcp \
	--log-facility=- >$N/dnsmasq.log 2>&1 &
DNSMASQ=$!
check_wait "dnsmasq listens on the DHCP port in b" 20 sh -c \
	"/usr/sbin/ip netns exec b ss -Hlun | grep -q ':67 '"

# --- NetworkManager's host: the initial namespace with ib0; udevd, D-Bus ---
check "udevd and a D-Bus system bus (the boot hook's ipoib_nfsroot_nm_deps)" \
	ipoib_nfsroot_nm_deps $N
check_wait "D-Bus system bus is up" 20 test -S /run/dbus/system_bus_socket
cat >$N/NetworkManager.conf <<EOF
[main]
plugins=keyfile
no-auto-default=*
dhcp=internal
auth-polkit=false

[keyfile]
path=$N/connections

[logging]
level=DEBUG
domains=PLATFORM,DEVICE,CORE,CONFIG,DHCP4,IP4
EOF
/usr/sbin/NetworkManager --no-daemon --debug --config=$N/NetworkManager.conf \
	--state-file=$N/NetworkManager.state --pid-file=$N/nm.pid >$N/nm.log 2>&1 &
NMPID=$!
check_wait "NetworkManager is running" 60 sh -c \
	"timeout 10 nmcli -t -f RUNNING general | grep -qx running" || {
	tail -n 30 $N/nm.log
	exit 0
}
grep -m 3 -E 'platform.*create|udev' $N/nm.log
if ! check_wait "NetworkManager manages ib0 (infiniband, disconnected)" 60 dev_is ib0 disconnected; then
	show
	grep -i -E 'unmanag|udev|platform: .*create' $N/nm.log | head -n 40
	exit 0
fi

# --- a static address; the connection comes up by itself (autoconnect) ---
check "nmcli connection add type infiniband ifname ib0 (static 10.57.0.2/24, datagram)" \
	nmc connection add type infiniband ifname ib0 con-name ibs \
	infiniband.transport-mode datagram infiniband.mtu 2044 \
	ipv4.method manual ipv4.addresses 10.57.0.2/24 ipv6.method disabled
check_wait "NetworkManager activates ibs by itself" 90 con_active ibs || show
check "ib0 has 10.57.0.2" test "$(addr4 ib0)" = 10.57.0.2
check "ib0's mode is datagram" a_sys_is ib0 mode datagram
check_wait "ping the head node (10.57.0.1) over ib0" 30 reaches 10.57.0.1

# --- DHCP (RFC 4390): NetworkManager's own client over IPoIB ---
check "ibs to DHCP (ipv4.method auto)" \
	nmc connection modify ibs ipv4.method auto ipv4.addresses ''
if check "nmcli connection up ibs: a lease" nm_up ibs; then
	a=$(addr4 ib0)
	echo "ib0: $a; lease: $(lease_of "$a")"
	check "ib0's address is from dnsmasq's range" in_pool ib0 10.57.0
	check "the lease: htype 32, empty chaddr, client id with the port GUID (RFC 4390)" \
		rfc4390_lease "$a" ib0
	check "NetworkManager shows the DHCP4 options" sh -c \
		"nmcli -g DHCP4 device show ib0 | grep -q 'ip_address = $a'"
	check_wait "ping the head node from the leased address" 30 reaches 10.57.0.1
else
	show
	tail -n 20 $N/dnsmasq.log
fi

# --- a P_Key child made by NetworkManager, DHCP in partition 0x8001 ---
check "nmcli connection add: infiniband.parent ib0, p-key 0x8001 (DHCP)" \
	nmc connection add type infiniband con-name ibp autoconnect no \
	infiniband.parent ib0 infiniband.p-key 0x8001 \
	ipv4.method auto ipv6.method disabled
if check "nmcli connection up ibp" nm_up ibp; then
	check "NetworkManager made ib0.8001 (pkey 0x8001)" a_sys_is ib0.8001 pkey 0x8001
	check "ib0.8001's parent is ib0" a_sys_is ib0.8001 parent ib0
	check "ib0.8001's address is from the partition's range" in_pool ib0.8001 10.58.0
	check "its lease is RFC 4390's too" rfc4390_lease "$(addr4 ib0.8001)" ib0.8001
	check_wait "ping the head node in partition 0x8001" 30 reaches 10.58.0.1
else
	show
	tail -n 20 $N/dnsmasq.log
fi

# --- deleting the active child's connection deletes the child ---
check "nmcli connection delete ibp (active)" nmc connection delete ibp
check_wait "ib0.8001 is gone" 30 sh -c "! /usr/sbin/ip link show ib0.8001 >/dev/null 2>&1" ||
	grep -E 'ib0\.8001' $N/nm.log | grep -v -E 'platform: |add_pending|remove_pending' | tail -n 30

# --- the transport mode: connected and back ---
nm_mode connected 65520
nm_mode datagram 2044

# --- a port flap: NetworkManager takes ibs down and brings it back ---
echo down >"$(sib sib0 state)"
check_wait "port down: ib0 loses its carrier" 30 sh -c \
	"! /usr/sbin/ip -o link show dev ib0 | grep -q LOWER_UP"
check_wait "NetworkManager deactivates ibs (device unavailable)" 90 dev_is ib0 unavailable
echo up >"$(sib sib0 state)"
check_wait "port up: NetworkManager activates ibs again by itself" 120 con_active ibs || show
check_wait "ping the head node after the flap" 60 reaches 10.57.0.1

# --- NetworkManager stops; the interface stays as it left it ---
kill $NMPID
check_wait "NetworkManager exits" 30 sh -c "! kill -0 $NMPID 2>/dev/null"
grep -E -i 'infiniband|ib0|dhcp4' $N/nm.log | tail -n 40
check "NetworkManager logged no error about ib0 or its child" sh -c \
	"! grep -E '<(error|warn)>.*ib0' $N/nm.log"
kill $DNSMASQ "$(cat $N/dbus.pid)" 2>/dev/null
udevadm control --exit
check "unload everything" unload_all
