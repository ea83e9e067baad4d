#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# ipoib-nfsroot.sh: the early-boot steps of a diskless node whose root
# filesystem is on NFS over IPoIB (ib0). See Documentation/nfsroot.rst.
#
# POSIX sh (busybox ash, dash); needs modprobe, ip, ping, mount. Either run it
#   ipoib-nfsroot.sh [NEWROOT]         (default NEWROOT: /root)
# which does every step and exits 0 with the NFS root mounted on NEWROOT, or
# source it and call the steps one by one (tests/cases/nfsroot.sh does):
#   ipoib_nfsroot_cmdline      parse ip= and nfsroot= from /proc/cmdline
#   ipoib_nfsroot_load         modprobe $IPOIB_MODULES, wait for the netdev
#   ipoib_nfsroot_configure    address, link up (starts the broadcast join)
#   ipoib_nfsroot_wait_carrier wait for carrier (port ACTIVE + group joined)
#   ipoib_nfsroot_wait_lease   with ip=dhcp: the address (and the root path)
#   ipoib_nfsroot_wait_server  wait until the server answers (ARP + path)
#   ipoib_nfsroot_mount DIR    modprobe $NFSROOT_MODULES, mount, retrying
# Each returns non-zero with a message on stderr when its timeout expires.
# The caller (PID 1 of the initramfs) then moves /dev, /proc, /sys, /run
# into NEWROOT and runs switch_root NEWROOT /sbin/init.
#
# Kernel command line (the kernel's own nfsroot syntax, see
# Documentation/admin-guide/nfs/nfsroot.rst; the kernel's IP_PNP is not
# needed, this script does the work):
#   ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:off
#   nfsroot=[<server-ip>:]<root-dir>[,<nfs-options>]
# or, with DHCP (RFC 4390 over IPoIB):
#   ip=dhcp  or  ip=:::::<device>:dhcp
#   nfsroot= optional: without it, the root path is DHCP's (option 17,
#   root-path, "[<server-ip>:]<root-dir>[,<nfs-options>]"; the server is
#   the DHCP server when the path names none).
# The DHCP client is NetworkManager's, as in dracut's network-manager
# module: the initramfs needs NetworkManager, nmcli, dbus-daemon and udevd
# (/lib/systemd/systemd-udevd, udevadm); the hook starts them and stops
# them once the lease is there (NetworkManager leaves the address in place;
# make the lease long enough for the boot, the node's own network
# configuration takes over from there).
#
# Tunables (environment; defaults in brackets):
#   IPOIB_MODULES [ib_ipoib]: modules to load (add the HCA driver, e.g.
#     mlx5_ib, if udev does not load it); modprobe resolves dependencies.
#   NFSROOT_MODULES [nfsv4]
#   IPOIB_DEV_TIMEOUT [30] s for the netdev to appear;
#   IPOIB_CARRIER_TIMEOUT [90] s for the carrier: the SM must have made the
#     port ACTIVE and the SA must have answered the broadcast-group join;
#   NFSROOT_SERVER_TIMEOUT [60] s for the server to answer a ping;
#   NFSROOT_MOUNT_TIMEOUT [60] s of mount attempts;
#   IPOIB_DHCP_TIMEOUT [60] s for the lease once there is carrier.

: "${IPOIB_MODULES:=ib_ipoib}"
: "${NFSROOT_MODULES:=nfsv4}"
: "${IPOIB_DEV_TIMEOUT:=30}"
: "${IPOIB_CARRIER_TIMEOUT:=90}"
: "${NFSROOT_SERVER_TIMEOUT:=60}"
: "${NFSROOT_MOUNT_TIMEOUT:=60}"
: "${NFSROOT_DEFAULT_OPTS:=vers=4.2}"
: "${IPOIB_DHCP_TIMEOUT:=60}"

ipoib_nfsroot_log() {
	echo "ipoib-nfsroot: [$(cut -d' ' -f1 /proc/uptime)] $*" >&2
}

# uptime in tenths of seconds
_ipn_now() {
	read -r _ipn_up _ipn_rest </proc/uptime
	_ipn_up=${_ipn_up%.*}${_ipn_up#*.}
	_ipn_up=${_ipn_up%?}
	while [ "${_ipn_up#0}" != "$_ipn_up" ] && [ "${#_ipn_up}" -gt 1 ]; do
		_ipn_up=${_ipn_up#0}
	done
	echo "$_ipn_up"
}

# _ipn_wait TIMEOUT_S CMD...: poll CMD every 0.2 s; 1 on timeout
_ipn_wait() {
	_ipn_end=$(($(_ipn_now) + $1 * 10))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(_ipn_now)" -ge "$_ipn_end" ] && return 1
		sleep 0.2
	done
	return 0
}

# _ipn_prefix NETMASK: prefix length of a dotted-quad netmask
_ipn_prefix() {
	_ipn_bits=0
	_ipn_ifs=$IFS
	IFS=.
	# shellcheck disable=SC2086
	set -- $1
	IFS=$_ipn_ifs
	for _ipn_o in "$@"; do
		case $_ipn_o in
		255) _ipn_bits=$((_ipn_bits + 8)) ;;
		254) _ipn_bits=$((_ipn_bits + 7)) ;;
		252) _ipn_bits=$((_ipn_bits + 6)) ;;
		248) _ipn_bits=$((_ipn_bits + 5)) ;;
		240) _ipn_bits=$((_ipn_bits + 4)) ;;
		224) _ipn_bits=$((_ipn_bits + 3)) ;;
		192) _ipn_bits=$((_ipn_bits + 2)) ;;
		128) _ipn_bits=$((_ipn_bits + 1)) ;;
		0) ;;
		*) return 1 ;;
		esac
	done
	echo "$_ipn_bits"
}

# ipoib_nfsroot_parse_ip [CMDLINE]: parse ip= only (default: from
# /proc/cmdline). Sets IPN_CLIENT (this node) IPN_SERVER IPN_GW IPN_PREFIX
# IPN_HOSTNAME IPN_DEV, and IPN_DHCP (1 with DHCP: IPN_CLIENT and
# IPN_PREFIX come from the lease).
ipoib_nfsroot_parse_ip() {
	_ipn_cmdline=${1:-$(cat /proc/cmdline)}
	_ipn_ip='' _ipn_nfs=''
	for _ipn_arg in $_ipn_cmdline; do
		case $_ipn_arg in
		ip=*) _ipn_ip=${_ipn_arg#ip=} ;;
		nfsroot=*) _ipn_nfs=${_ipn_arg#nfsroot=} ;;
		esac
	done
	case $_ipn_ip in
	"")
		ipoib_nfsroot_log "no ip= on the kernel command line"
		return 1 ;;
	dhcp | on | any)
		_ipn_ip=::::::dhcp ;;
	bootp | rarp | both | dhcp6 | auto6)
		ipoib_nfsroot_log "ip=$_ipn_ip: only static addressing and DHCP are supported"
		return 1 ;;
	esac
	_ipn_ifs=$IFS
	IFS=:
	# shellcheck disable=SC2086
	set -- $_ipn_ip
	IFS=$_ipn_ifs
	IPN_CLIENT=${1:-} IPN_SERVER=${2:-} IPN_GW=${3:-} IPN_HOSTNAME=${5:-}
	IPN_DEV=${6:-ib0}
	IPN_DHCP=0
	case ${7:-off} in
	off | none | static) ;;
	dhcp | on | any) IPN_DHCP=1 ;;
	*)
		ipoib_nfsroot_log "ip=...:${7}: only autoconf 'off' and 'dhcp' are supported"
		return 1 ;;
	esac
	[ "$IPN_DHCP" = 1 ] && return 0
	if [ -z "$IPN_CLIENT" ]; then
		ipoib_nfsroot_log "ip=$_ipn_ip: no client address"
		return 1
	fi
	IPN_PREFIX=24
	if [ -n "${4:-}" ]; then
		IPN_PREFIX=$(_ipn_prefix "$4") || {
			ipoib_nfsroot_log "ip=$_ipn_ip: bad netmask '$4'"
			return 1
		}
	fi
	return 0
}

# ipoib_nfsroot_cmdline [CMDLINE]: parse ip= and nfsroot= (default: from
# /proc/cmdline). Sets what ipoib_nfsroot_parse_ip does and NFSROOT_SERVER
# NFSROOT_PATH NFSROOT_OPTS (with DHCP and no nfsroot=: after the lease).
ipoib_nfsroot_cmdline() {
	ipoib_nfsroot_parse_ip "$@" || return 1
	NFSROOT_SERVER='' NFSROOT_PATH='' NFSROOT_OPTS=''
	if [ "$IPN_DHCP" = 1 ]; then
		IPN_NFS_SPEC=$_ipn_nfs	# parsed once the lease names the server
		ipoib_nfsroot_log "$IPN_DEV: DHCP, root ${IPN_NFS_SPEC:-from DHCP}"
		return 0
	fi
	_ipn_nfsroot "$_ipn_nfs" "$IPN_SERVER" || return 1
	ipoib_nfsroot_log "$IPN_DEV $IPN_CLIENT/$IPN_PREFIX${IPN_GW:+ gw $IPN_GW}${IPN_HOSTNAME:+ host $IPN_HOSTNAME}, root $NFSROOT_SERVER:$NFSROOT_PATH ($NFSROOT_OPTS)"
}

# _ipn_nfsroot SPEC DEFAULT_SERVER: parse "[<server-ip>:]<root-dir>[,<opts>]"
# (nfsroot=, or DHCP's root path) into NFSROOT_SERVER NFSROOT_PATH
# NFSROOT_OPTS
_ipn_nfsroot() {
	_ipn_nfs=$1
	NFSROOT_OPTS=
	case $_ipn_nfs in
	*,*) NFSROOT_OPTS=${_ipn_nfs#*,} _ipn_nfs=${_ipn_nfs%%,*} ;;
	esac
	case $_ipn_nfs in
	*:*) NFSROOT_SERVER=${_ipn_nfs%%:*} NFSROOT_PATH=${_ipn_nfs#*:} ;;
	*) NFSROOT_SERVER=$2 NFSROOT_PATH=$_ipn_nfs ;;
	esac
	if [ -z "$NFSROOT_SERVER" ] || [ -z "$NFSROOT_PATH" ]; then
		ipoib_nfsroot_log "need nfsroot=<server-ip>:<dir> (or a server in ip=, or DHCP's root path)"
		return 1
	fi
	case ,$NFSROOT_OPTS, in
	*,vers=* | *,nfsvers=*) ;;
	*) NFSROOT_OPTS=$NFSROOT_DEFAULT_OPTS${NFSROOT_OPTS:+,$NFSROOT_OPTS} ;;
	esac
	return 0
}

# ipoib_nfsroot_load: load the IPoIB stack (dependencies by modprobe) and
# wait for the netdev. A module already present (built in, or loaded by
# udev) is left alone.
ipoib_nfsroot_load() {
	for _ipn_m in $IPOIB_MODULES; do
		[ -d "/sys/module/$_ipn_m" ] && continue
		modprobe "$_ipn_m" || {
			ipoib_nfsroot_log "modprobe $_ipn_m failed"
			return 1
		}
	done
	_ipn_wait "$IPOIB_DEV_TIMEOUT" test -d "/sys/class/net/$IPN_DEV" || {
		ipoib_nfsroot_log "no $IPN_DEV after ${IPOIB_DEV_TIMEOUT}s (is the HCA driver loaded, the port cabled?)"
		return 1
	}
}

# ipoib_nfsroot_configure: hostname, address, link up, default route. The
# link going up starts the broadcast-group join; the route waits for it.
# With DHCP: link up, and the DHCP client started.
ipoib_nfsroot_configure() {
	[ -n "$IPN_HOSTNAME" ] && hostname "$IPN_HOSTNAME"
	ip link set dev lo up
	if [ "$IPN_DHCP" = 1 ]; then
		ip link set dev "$IPN_DEV" up || return 1
		IPN_LINKUP_T=$(_ipn_now)
		_ipn_dhcp_start
		return
	fi
	ip addr flush dev "$IPN_DEV" 2>/dev/null
	ip addr add "$IPN_CLIENT/$IPN_PREFIX" dev "$IPN_DEV" || return 1
	ip link set dev "$IPN_DEV" up || return 1
	IPN_LINKUP_T=$(_ipn_now)
	if [ -n "$IPN_GW" ]; then
		ip route add default via "$IPN_GW" dev "$IPN_DEV" onlink || return 1
	fi
	return 0
}

_ipn_has_carrier() {
	[ "$(cat "/sys/class/net/$IPN_DEV/carrier" 2>/dev/null)" = 1 ]
}

# ipoib_nfsroot_wait_carrier: IPoIB has carrier once the port is ACTIVE and
# the broadcast group is joined. Sets IPN_CARRIER_S (seconds since the link
# was set up).
ipoib_nfsroot_wait_carrier() {
	_ipn_t0=${IPN_LINKUP_T:-$(_ipn_now)}
	_ipn_wait "$IPOIB_CARRIER_TIMEOUT" _ipn_has_carrier || {
		ipoib_nfsroot_log "$IPN_DEV: no carrier after ${IPOIB_CARRIER_TIMEOUT}s (port state: $(cat "/sys/class/net/$IPN_DEV/device/infiniband/"*/ports/*/state 2>/dev/null | head -n 1); is an SM running?)"
		return 1
	}
	_ipn_t=$(($(_ipn_now) - _ipn_t0))
	IPN_CARRIER_S=$((_ipn_t / 10)).$((_ipn_t % 10))
	ipoib_nfsroot_log "$IPN_DEV: carrier ${IPN_CARRIER_S}s after link up"
}

# --- DHCP: NetworkManager's client (RFC 4390 over IPoIB) ---

_IPN_NM=/run/ipoib-nfsroot	# its configuration, state and logs

# ipoib_nfsroot_nm_deps DIR: what NetworkManager needs running: udevd (it
# manages a device only once udev has seen it) and a D-Bus system bus
# (its configuration and pid file in DIR)
ipoib_nfsroot_nm_deps() {
	mkdir -p "$1" /run/dbus
	/lib/systemd/systemd-udevd --daemon >/dev/null 2>&1 || {
		ipoib_nfsroot_log "udevd does not start"
		return 1
	}
	udevadm trigger --action=add --subsystem-match=net
	udevadm settle --timeout=30
	cat >"$1/dbus.conf" <<'DBUS'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="root"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
DBUS
	dbus-daemon --config-file="$1/dbus.conf" --fork --print-pid=3 3>"$1/dbus.pid" || {
		ipoib_nfsroot_log "dbus-daemon does not start"
		return 1
	}
}

# _ipn_dhcp_start: udevd and D-Bus, then NetworkManager managing $IPN_DEV
# alone, with one connection: datagram mode, DHCP without a timeout of its
# own (the hook has one), no IPv6.
_ipn_dhcp_start() {
	mkdir -p "$_IPN_NM/connections" /run/NetworkManager /var/lib/NetworkManager
	ipoib_nfsroot_nm_deps "$_IPN_NM" || return 1
	cat >"$_IPN_NM/NetworkManager.conf" <<NMCONF
[main]
plugins=keyfile
no-auto-default=*
dhcp=internal
auth-polkit=false

[keyfile]
path=$_IPN_NM/connections
unmanaged-devices=except:interface-name:$IPN_DEV
NMCONF
	# a keyfile must be readable by its owner only
	(umask 077 && cat >"$_IPN_NM/connections/nfsroot.nmconnection" <<NMKEY
[connection]
id=nfsroot
type=infiniband
interface-name=$IPN_DEV

[infiniband]
transport-mode=datagram

[ipv4]
method=auto
dhcp-timeout=2147483647

[ipv6]
method=disabled
NMKEY
	)
	# in the background rather than as a daemon: its log (no syslog here)
	NetworkManager --no-daemon --debug --config="$_IPN_NM/NetworkManager.conf" \
		--state-file="$_IPN_NM/NetworkManager.state" >"$_IPN_NM/nm.log" 2>&1 &
	echo $! >"$_IPN_NM/nm.pid"
}

# _ipn_dhcp_show: what NetworkManager says, when there is no lease
_ipn_dhcp_show() {
	nmcli device status | cat
	nmcli connection show | cat
	tail -n 40 "$_IPN_NM/nm.log"
} >&2

# _ipn_dhcp_opt NAME: an option of $IPN_DEV's lease (NetworkManager's
# name); nmcli -e no -g prints "OPTION[1]:name = value | OPTION[2]:..."
_ipn_dhcp_opt() {
	nmcli -e no -g DHCP4 device show "$IPN_DEV" 2>/dev/null | tr '|' '\n' |
		sed -n "s/^.*[: ]$1 = \([^ ]*\).*/\1/p" | head -n 1
}

_ipn_leased() {
	_ipn_a=$(_ipn_dhcp_opt ip_address)
	[ -n "$_ipn_a" ] && ip -4 addr show dev "$IPN_DEV" | grep -q "inet $_ipn_a/"
}

# _ipn_dhcp_stop: NetworkManager, D-Bus and udevd go; the address stays
_ipn_dhcp_stop() {
	for _ipn_p in "$_IPN_NM/nm.pid" "$_IPN_NM/dbus.pid"; do
		[ -s "$_ipn_p" ] || continue
		read -r _ipn_pid <"$_ipn_p"
		kill "$_ipn_pid" 2>/dev/null
		_ipn_wait 10 sh -c "! kill -0 $_ipn_pid"
	done
	udevadm control --exit 2>/dev/null
}

# ipoib_nfsroot_wait_lease: with DHCP, wait for the lease; set IPN_CLIENT,
# IPN_PREFIX, IPN_SERVER (the DHCP server) and the root (nfsroot=, else the
# lease's root path); then stop the DHCP client. Without DHCP: nothing.
ipoib_nfsroot_wait_lease() {
	[ "$IPN_DHCP" = 1 ] || return 0
	_ipn_wait "$IPOIB_DHCP_TIMEOUT" _ipn_leased || {
		ipoib_nfsroot_log "$IPN_DEV: no DHCP lease after ${IPOIB_DHCP_TIMEOUT}s"
		_ipn_dhcp_show
		_ipn_dhcp_stop
		return 1
	}
	IPN_CLIENT=$(_ipn_dhcp_opt ip_address)
	# the prefix as NetworkManager configured it from the lease's mask
	IPN_PREFIX=$(ip -4 -o addr show dev "$IPN_DEV" |
		sed -n "s,.* inet $IPN_CLIENT/\([0-9]*\) .*,\1,p" | head -n 1)
	IPN_SERVER=$(_ipn_dhcp_opt dhcp_server_identifier)
	_ipn_root=${IPN_NFS_SPEC:-$(_ipn_dhcp_opt root_path)}
	_ipn_dhcp_stop
	ipoib_nfsroot_log "$IPN_DEV: lease $IPN_CLIENT/$IPN_PREFIX from $IPN_SERVER, root path ${_ipn_root:-none}"
	_ipn_nfsroot "$_ipn_root" "$IPN_SERVER" || return 1
	ipoib_nfsroot_log "root $NFSROOT_SERVER:$NFSROOT_PATH ($NFSROOT_OPTS)"
}

# ipoib_nfsroot_wait_server: the server answers a ping (ARP over the
# broadcast group, then a unicast path from the SA).
ipoib_nfsroot_wait_server() {
	_ipn_wait "$NFSROOT_SERVER_TIMEOUT" ping -c 1 -W 1 "$NFSROOT_SERVER" || {
		ipoib_nfsroot_log "server $NFSROOT_SERVER does not answer after ${NFSROOT_SERVER_TIMEOUT}s"
		return 1
	}
}

# NFSv4 needs no helper: the kernel takes addr= (no name resolution) and
# clientaddr= (callbacks). NFSv3 needs mount.nfs (nfs-common) and rpcbind
# on the server, and nolock unless rpc.statd runs in the initramfs.
_ipn_mount() {
	case ,$NFSROOT_OPTS, in
	*,vers=4* | *,nfsvers=4*)
		mount -t nfs4 -o "$NFSROOT_OPTS,addr=$NFSROOT_SERVER,clientaddr=$IPN_CLIENT" \
			"$NFSROOT_SERVER:$NFSROOT_PATH" "$1" ;;
	*)
		mount -t nfs -o "$NFSROOT_OPTS" "$NFSROOT_SERVER:$NFSROOT_PATH" "$1" ;;
	esac
}

# ipoib_nfsroot_mount NEWROOT: mount the root, retrying until the timeout.
ipoib_nfsroot_mount() {
	for _ipn_m in $NFSROOT_MODULES; do
		[ -d "/sys/module/$_ipn_m" ] || modprobe "$_ipn_m" || {
			ipoib_nfsroot_log "modprobe $_ipn_m failed"
			return 1
		}
	done
	mkdir -p "$1"
	_ipn_wait "$NFSROOT_MOUNT_TIMEOUT" _ipn_mount "$1" || {
		ipoib_nfsroot_log "mount $NFSROOT_SERVER:$NFSROOT_PATH failed for ${NFSROOT_MOUNT_TIMEOUT}s: $(_ipn_mount "$1" 2>&1)"
		return 1
	}
	ipoib_nfsroot_log "mounted $NFSROOT_SERVER:$NFSROOT_PATH on $1"
}

# ipoib_nfsroot_main NEWROOT: every step, in order
ipoib_nfsroot_main() {
	ipoib_nfsroot_cmdline "" &&
	ipoib_nfsroot_load &&
	ipoib_nfsroot_configure &&
	ipoib_nfsroot_wait_carrier &&
	ipoib_nfsroot_wait_lease &&
	ipoib_nfsroot_wait_server &&
	ipoib_nfsroot_mount "${1:-/root}"
}

if [ "${0##*/}" = ipoib-nfsroot.sh ]; then
	ipoib_nfsroot_main "${1:-/root}"
fi
