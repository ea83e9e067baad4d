#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# drivers: ours
# tier: 612 7
# vms: 1
# timeout: 300
# vm-hook: tests/vm/dkms/vm-hook.sh
# after: DKMS_STAGE_RC
#
# What DKMS and make install leave behind is what modprobe loads. The
# dkms stage (tests/dkms.sh) installs, upgrades and removes the package
# with dpkg, and runs make install / make uninstall, in a throw-away Debian
# root on the host, where the compiler and the kernel headers are; the hook
# brings each state's /lib/modules/$KVER/updates here. For each state this
# guest builds that module tree (its own kernel modules, the in-tree
# ib_ipoib where Debian has it, the state's updates/), runs depmod over it
# and then modprobe -d: after dpkg -i, the upgrade and make install ours
# is loaded (the file in updates/: its build ID, version and srcversion in
# sysfs) and carries traffic between two ports; after dpkg -r and make
# uninstall the in-tree driver is loaded and works. In the 6.12 tier the
# same on Linux 6.12, where the dpkg -i state is the module the kernel's
# postinst hook built.
. /tests/lib.sh

D=/dkms
K=$(uname -r)

# tree STATE: /tmp/dkms/STATE/lib/modules/$K as a Debian root has it
tree() {
	local t=/tmp/dkms/$1/lib/modules/$K
	rm -rf "/tmp/dkms/$1"
	mkdir -p "$t"
	cp -a "/lib/modules/$K/kernel" "$t/" || return 1
	cp -a "$D/intree/." "$t/" || return 1
	cp "/lib/modules/$K"/modules.builtin* "$t/" 2>/dev/null
	[ -d "$D/$1/updates" ] && cp -a "$D/$1/updates" "$t/"
	depmod -b "/tmp/dkms/$1" "$K"
}
res() { modinfo -b "/tmp/dkms/$1" -k "$K" -F filename ib_ipoib; }
# build_id: the GNU build ID of the loaded ib_ipoib, in hex (the note's
# 16-byte header, then the ID)
build_id() {
	od -An -tx1 -v -j 16 /sys/module/ib_ipoib/notes/.note.gnu.build-id | tr -d ' \n'
}
# loaded_is FILE: the ib_ipoib in the kernel is FILE: FILE holds the loaded
# module's build ID, and version and srcversion (where FILE has them) agree
loaded_is() {
	local id s v
	id=$(build_id)
	[ ${#id} = 40 ] || return 1
	case $1 in
	*.xz) xzcat "$1" ;;	# 6.12's modules and what DKMS builds there
	*) cat "$1" ;;
	esac | od -An -tx1 -v | tr -d ' \n' | grep -q "$id" || return 1
	s=$(modinfo -F srcversion "$1")
	v=$(modinfo -F version "$1")
	if [ -n "$s" ]; then
		[ "$(cat /sys/module/ib_ipoib/srcversion)" = "$s" ] || return 1
	fi
	if [ -n "$v" ]; then
		[ "$(cat /sys/module/ib_ipoib/version)" = "$v" ]
	else
		[ ! -e /sys/module/ib_ipoib/version ]
	fi
}

# state STATE WHAT WANT VERSION: WANT is the path (below the tree's
# lib/modules/$K/) that ib_ipoib must resolve to
state() {
	local st=$1 what=$2 want=$3 v=$4 f
	check "$what: depmod over the tree" tree "$st" || return 1
	f=$(res "$st")
	check "$what: ib_ipoib resolves to $want" test "$f" = "/tmp/dkms/$st/lib/modules/$K/$want"
	[ -n "$v" ] && check "$what: modinfo says version $v" \
		test "$(modinfo -F version "$f")" = "$v"
	check "$what: load the IB core" load_ib_core
	check "$what: modprobe -d ib_ipoib" modprobe -d "/tmp/dkms/$st" ib_ipoib
	check "$what: the loaded ib_ipoib is that file (build ID $(build_id))" loaded_is "$f"
	check "$what: load softib ndevs=2" load_softib ndevs=2
	check_wait "$what: ib0 and ib1 exist" 20 test -d /sys/class/net/ib1
	check "$what: host a (ib0)" make_host a ib0 10.60.0.1/24
	check "$what: host b (ib1)" make_host b ib1 10.60.0.2/24
	check_wait "$what: ping a -> b" 40 pings a 10.60.0.2
	check "$what: unload everything" unload_all
	rm -rf "/tmp/dkms/$st"
}

if [ -e $D/none ]; then
	skip "DKMS and make install states for $K" "$(cat $D/none)"
	exit 0
fi
check "the dkms stage's trees are here for $K" test "$(cat $D/kver)" = "$K" || exit 0
intree=$(cd $D/intree && find . -name 'ib_ipoib.ko*' | sed 's|^\./||')
# DKMS compresses as the kernel's own modules are (6.12: .ko.xz)
ko1=$(cd $D/installed && ls updates/dkms/ib_ipoib.ko*)
ver=$(modinfo -F version "$D/installed/$ko1")
ko2= ver2=
# (on sid's 7.x only dpkg -i and dpkg -r, see tests/dkms.sh)
if [ -d $D/upgraded ]; then
	ko2=$(cd $D/upgraded && ls updates/dkms/ib_ipoib.ko*)
	ver2=$(modinfo -F version "$D/upgraded/$ko2")
fi
echo "in-tree: $intree; DKMS: $ko1, $ko2; package versions: $ver, $ver2"
what="dpkg -i"
case $K in 6.12*) what="dpkg -i, then the kernel hook" ;; esac
state installed "$what" "$ko1" "$ver"
# (its contents: 7.x's srcversion no longer covers the header that holds
# the version, so two versions of ours may share one)
ko_sum() { case $1 in *.xz) xzcat "$1" ;; *) cat "$1" ;; esac | md5sum; }
if [ -n "$ko2" ]; then
	state upgraded "upgrade to $ver2" "$ko2" "$ver2"
	check "the upgrade's module is another build (contents differ)" test \
		"$(ko_sum "$D/installed/$ko1")" != "$(ko_sum "$D/upgraded/$ko2")"
fi
state removed "dpkg -r" "$intree" ""
if [ -d $D/make-installed ]; then
	state make-installed "make install" updates/ib_ipoib.ko "$ver"
	state make-uninstalled "make uninstall" "$intree" ""
fi
