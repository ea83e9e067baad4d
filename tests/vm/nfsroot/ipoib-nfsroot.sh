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
#
# Tunables (environment; defaults in brackets):
#   IPOIB_MODULES [ib_ipoib]: modules to load (add the HCA driver, e.g.
#     mlx5_ib, if udev does not load it); modprobe resolves dependencies.
#   NFSROOT_MODULES [nfsv4]
#   IPOIB_DEV_TIMEOUT [30] s for the netdev to appear;
#   IPOIB_CARRIER_TIMEOUT [90] s for the carrier: the SM must have made the
#     port ACTIVE and the SA must have answered the broadcast-group join;
#   NFSROOT_SERVER_TIMEOUT [60] s for the server to answer a ping;
#   NFSROOT_MOUNT_TIMEOUT [60] s of mount attempts.

: "${IPOIB_MODULES:=ib_ipoib}"
: "${NFSROOT_MODULES:=nfsv4}"
: "${IPOIB_DEV_TIMEOUT:=30}"
: "${IPOIB_CARRIER_TIMEOUT:=90}"
: "${NFSROOT_SERVER_TIMEOUT:=60}"
: "${NFSROOT_MOUNT_TIMEOUT:=60}"
: "${NFSROOT_DEFAULT_OPTS:=vers=4.2}"

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
# IPN_HOSTNAME IPN_DEV.
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
	dhcp | on | any | bootp | rarp | both | dhcp6 | auto6)
		ipoib_nfsroot_log "ip=$_ipn_ip: only static addressing is supported (ip=<client>:<server>:<gw>:<netmask>:<host>:<dev>:off)"
		return 1 ;;
	esac
	_ipn_ifs=$IFS
	IFS=:
	# shellcheck disable=SC2086
	set -- $_ipn_ip
	IFS=$_ipn_ifs
	IPN_CLIENT=${1:-} IPN_SERVER=${2:-} IPN_GW=${3:-} IPN_HOSTNAME=${5:-}
	IPN_DEV=${6:-ib0}
	case ${7:-off} in
	off | none | static) ;;
	*)
		ipoib_nfsroot_log "ip=...:${7}: only autoconf 'off' is supported"
		return 1 ;;
	esac
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
# NFSROOT_PATH NFSROOT_OPTS.
ipoib_nfsroot_cmdline() {
	ipoib_nfsroot_parse_ip "$@" || return 1
	# nfsroot=[<server-ip>:]<root-dir>[,<nfs-options>]
	NFSROOT_OPTS=
	case $_ipn_nfs in
	*,*) NFSROOT_OPTS=${_ipn_nfs#*,} _ipn_nfs=${_ipn_nfs%%,*} ;;
	esac
	case $_ipn_nfs in
	*:*) NFSROOT_SERVER=${_ipn_nfs%%:*} NFSROOT_PATH=${_ipn_nfs#*:} ;;
	*) NFSROOT_SERVER=$IPN_SERVER NFSROOT_PATH=$_ipn_nfs ;;
	esac
	if [ -z "$NFSROOT_SERVER" ] || [ -z "$NFSROOT_PATH" ]; then
		ipoib_nfsroot_log "need nfsroot=<server-ip>:<dir> (or a server in ip=)"
		return 1
	fi
	case ,$NFSROOT_OPTS, in
	*,vers=* | *,nfsvers=*) ;;
	*) NFSROOT_OPTS=$NFSROOT_DEFAULT_OPTS${NFSROOT_OPTS:+,$NFSROOT_OPTS} ;;
	esac
	ipoib_nfsroot_log "$IPN_DEV $IPN_CLIENT/$IPN_PREFIX${IPN_GW:+ gw $IPN_GW}${IPN_HOSTNAME:+ host $IPN_HOSTNAME}, root $NFSROOT_SERVER:$NFSROOT_PATH ($NFSROOT_OPTS)"
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
ipoib_nfsroot_configure() {
	[ -n "$IPN_HOSTNAME" ] && hostname "$IPN_HOSTNAME"
	ip link set dev lo up
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
	ipoib_nfsroot_wait_server &&
	ipoib_nfsroot_mount "${1:-/root}"
}

if [ "${0##*/}" = ipoib-nfsroot.sh ]; then
	ipoib_nfsroot_main "${1:-/root}"
fi
