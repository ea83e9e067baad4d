#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The DKMS package installed the way a Debian user installs it, by dpkg on
# a Debian root, without touching the build host: in a private mount
# namespace, an overlay over the host's own / (writes go to a tmpfs that
# vanishes with the namespace) is chrooted into, and there
#  - dpkg -i ib-ipoib-dkms_<ver>_all.deb: the package's postinst (dh_dkms)
#    adds, builds and installs ours for every kernel that has headers;
#    ib_ipoib resolves to updates/dkms/ with the package's version;
#  - a second kernel (6.12, when installed) gets it from the kernel's
#    postinst hook (/etc/kernel/postinst.d/dkms), after dkms remove for it;
#  - dpkg -i of a newer version upgrades: the old one's module is gone;
#  - dpkg -r: the in-tree ib_ipoib resolves again, nothing of ours is left;
#  - make install / make uninstall from the source tree, the same way.
# Each state's /lib/modules/<kernel>/updates (6.1 and 6.12) is kept in
# build/dkms-test/guest/<kernel>/ for tests/cases/dkms.sh, which loads
# exactly those modules in a VM of that kernel (the guest has no compiler
# or headers, and compiling under TCG would cost minutes).
# Prints "ok - NAME" / "not ok - NAME # why" lines; exits non-zero on a
# failure.
set -uo pipefail
. "$(dirname "$0")/vm/kernel.sh" || exit 1
cd "$REPO" || exit 1
T=$BUILD/dkms-test
fails=0
ok() { echo "ok - $1"; }
nok() { echo "not ok - $1 # $2"; fails=$((fails + 1)); }
ver=$(sed -n 's/^#define IPOIB_VERSION[[:space:]]*"\([^"]*\)".*/\1/p' ipoib.h)
ver2=$ver.1	# the upgrade (dpkg orders 1.0.1 after 1.0)

# cannot_run WHY: the stage is skipped (exit 77), and so is tests/cases/dkms.sh
cannot_run() {
	mkdir -p "$T/guest"
	echo "$1" >"$T/guest/none"
	echo "skip: $1"
	exit 77
}

if [ "${1:-}" != --inside ]; then
	rm -rf "$T"
	[ "$(id -u)" = 0 ] || cannot_run "dpkg in a throw-away root needs root (make check runs as root)"
	unshare -m --propagation private true 2>/dev/null ||
		cannot_run "no private mount namespace here (unshare -m failed)"
	if ! out=$(bash scripts/deb.sh 2>&1); then
		printf '%s\n' "$out" | sed 's/^/#   /'
		nok "make deb builds the package" "scripts/deb.sh failed"
		exit 1
	fi
	ok "make deb builds build/deb/ib-ipoib-dkms_${ver}_all.deb"
	# the same sources as version $ver2 (ipoib.h's IPOIB_VERSION too)
	mkdir -p "$T/src2"
	cp -p Kbuild ipoib*.c ipoib*.h LICENSE dkms.conf "$T/src2/"
	sed -i "s/^\(#define IPOIB_VERSION[[:space:]]*\)\"$ver\"/\1\"$ver2\"/" "$T/src2/ipoib.h"
	if ! out=$(DEB_SRC=$T/src2 DEB_OUT=$T/deb2 bash scripts/deb.sh 2>&1); then
		printf '%s\n' "$out" | sed 's/^/#   /'
		nok "make deb builds version $ver2 (for the upgrade)" "scripts/deb.sh failed"
		exit 1
	fi
	exec unshare -m --propagation private bash "$0" --inside
fi

deb=$BUILD/deb/ib-ipoib-dkms_${ver}_all.deb
deb2=$T/deb2/ib-ipoib-dkms_${ver2}_all.deb
if dpkg-deb -f "$deb" Depends | grep -q 'dkms'; then
	ok "the package depends on dkms"
else
	nok "the package depends on dkms" "no dkms in Depends"
fi

# root_mounts DIR: /proc, /sys, /dev, a fresh /tmp and the repository (at
# its own path) in the root DIR
root_mounts() {
	mount -t proc proc "$1/proc" && mount --rbind /sys "$1/sys" &&
		mount --rbind /dev "$1/dev" && mount -t tmpfs tmpfs "$1/tmp" &&
		mkdir -p "$1$REPO" && mount --bind "$REPO" "$1$REPO"
}

# --- the throw-away root: an overlay over the host's / ---
R=$T/root
mkdir -p "$T/rw" "$R" "$T/guest"
if ! { mount -t tmpfs tmpfs "$T/rw" &&
	mkdir -p "$T/rw/upper" "$T/rw/work"; }; then
	cannot_run "no tmpfs mount here"
fi
if ! mount -t overlay overlay -o "lowerdir=/,upperdir=$T/rw/upper,workdir=$T/rw/work" "$R"; then
	cannot_run "no overlay over / here (mount -t overlay failed)"
fi
if ! root_mounts "$R"; then
	nok "an overlay root over /" "mount failed"
	exit 1
fi
ok "a throw-away root: overlay over / in a private mount namespace"
ch() {	# ch CMD...: CMD in the throw-away root, as a root shell there
	chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
cp "$deb" "$deb2" "$R/tmp/"
# a host that has ours installed already: start from the in-tree module
ch dpkg -P ib-ipoib-dkms >/dev/null 2>&1
rm -f "$R/lib/modules/$KVER/updates/ib_ipoib.ko"

log=$T/dkms.log
step() {	# step NAME CMD...: CMD in the root, its output to the log; ok if it exits 0
	local name=$1
	shift
	if ch "$@" >>"$log" 2>&1; then
		ok "$name"
	else
		nok "$name" "see ${log#"$REPO"/}"
	fi
}
res() {	# res KVER: the file modprobe loads for ib_ipoib in the root
	ch modinfo -k "$1" -F filename ib_ipoib 2>/dev/null
}
modver() {	# modver KVER: the version of that file
	ch modinfo -k "$1" -F version ib_ipoib 2>/dev/null
}
is_ours() {	# is_ours NAME KVER VERSION
	local f v
	f=$(res "$2")
	v=$(modver "$2")
	case $f in
	*/updates/dkms/ib_ipoib.ko*)
		if [ "$v" = "$3" ]; then
			ok "$1: $2: ib_ipoib resolves to ours in updates/dkms, version $3"
		else
			nok "$1: $2: ib_ipoib resolves to ours in updates/dkms, version $3" "version '$v'"
		fi ;;
	*) nok "$1: $2: ib_ipoib resolves to ours in updates/dkms, version $3" \
		"resolves to '${f:-nothing}' (see ${log#"$REPO"/})" ;;
	esac
}
is_intree() {	# is_intree NAME KVER
	local f
	f=$(res "$2")
	case $f in
	*/kernel/*ib_ipoib.ko*) ok "$1: $2: ib_ipoib resolves to the in-tree module" ;;
	*) nok "$1: $2: ib_ipoib resolves to the in-tree module" "resolves to '${f:-nothing}'" ;;
	esac
}
k612=
if [ -n "$KVER612" ] && [ "$KVER612" != "$KVER" ] && [ -e "$KDIR612/Makefile" ] &&
   [ -e "/lib/modules/$KVER612/modules.dep" ]; then
	k612=$KVER612
fi
KVERS="$KVER $k612"
keep() {	# keep STATE [KVER...]: the root's updates/ of each kernel, for the guest
	local st=$1 k ks
	shift
	ks=${*:-$KVERS}
	for k in $ks; do
		rm -rf "$T/guest/$k/$st"
		mkdir -p "$T/guest/$k/$st"
		[ -d "$R/lib/modules/$k/updates" ] && cp -a "$R/lib/modules/$k/updates" "$T/guest/$k/$st/"
	done
	true
}

# intree KVER MODDIR: that kernel's in-tree module (under MODDIR, its
# /lib/modules/KVER), for the guest's "removed" states
intree() {
	local p
	p=$(grep -o '^[^:]*ulp/ipoib/ib_ipoib\.ko[^:]*' "$2/modules.dep")
	install -D -m 0644 "$2/$p" "$T/guest/$1/intree/$p"
}
for k in $KVERS; do
	intree "$k" "/lib/modules/$k"
done

# sequence: in the root $R, for the kernels $KVERS (the first: the one the
# package's postinst builds for; $k612: one more, through the kernel's
# postinst hook), install, upgrade and remove the package, then make
# install and uninstall; each state's trees kept for the guest
sequence() {
	local k1=${KVERS%% *} k

	# --- dpkg -i ---
	step "${pre}dpkg -i ib-ipoib-dkms_${ver}_all.deb (its postinst ran DKMS)" dpkg -i "/tmp/${deb##*/}"
	ch dkms status 2>/dev/null | sed 's/^/# dkms status: /'
	is_ours "${pre}dpkg -i" "$k1" "$ver"
	keep installed "$k1"

	# --- a second kernel: the kernel's postinst hook ---
	if [ -n "$k612" ]; then
		ch dkms remove -m ib-ipoib -v "$ver" -k "$k612" >>"$log" 2>&1
		is_intree "${pre}dkms remove -k $k612" "$k612"
		step "${pre}/etc/kernel/postinst.d/dkms $k612 ran" /etc/kernel/postinst.d/dkms "$k612"
		is_ours "${pre}kernel postinst hook" "$k612" "$ver"
		keep installed "$k612"	# what the hook built
	elif [ -z "$pre" ]; then	# (sid's root has one kernel)
		echo "ok - second kernel: the kernel postinst hook # SKIP no Linux 6.12 headers and modules (scripts/deps.sh)"
	fi

	# --- upgrade (not on sid: dpkg's and DKMS's part, proven above) ---
	if [ -z "$pre" ]; then
		step "${pre}dpkg -i ib-ipoib-dkms_${ver2}_all.deb upgrades" dpkg -i "/tmp/${deb2##*/}"
		ch dkms status 2>/dev/null | sed 's/^/# dkms status: /'
		is_ours "${pre}upgrade" "$k1" "$ver2"
		[ -n "$k612" ] && is_ours "${pre}upgrade" "$k612" "$ver2"
		if ch dkms status -m ib-ipoib -v "$ver" 2>/dev/null | grep -q .; then
			nok "${pre}upgrade: DKMS has no $ver any more" "$(ch dkms status -m ib-ipoib -v "$ver")"
		else
			ok "${pre}upgrade: DKMS has no $ver any more"
		fi
		keep upgraded
	fi

	# --- dpkg -r ---
	step "${pre}dpkg -r ib-ipoib-dkms" dpkg -r ib-ipoib-dkms
	is_intree "${pre}dpkg -r" "$k1"
	[ -n "$k612" ] && is_intree "${pre}dpkg -r" "$k612"
	left=$(find "$R/lib/modules" -path '*/updates/*' -name 'ib_ipoib.ko*' 2>/dev/null)
	if [ -z "$left" ] && ! ch dkms status 2>/dev/null | grep -q ib-ipoib; then
		ok "${pre}dpkg -r leaves no module of ours and nothing in DKMS"
	else
		nok "${pre}dpkg -r leaves no module of ours and nothing in DKMS" "$left $(ch dkms status)"
	fi
	keep removed

	# --- make install / make uninstall, for each kernel (not on sid) ---
	[ -n "$pre" ] && return
	for k in $KVERS; do
		step "${pre}make install KVER=$k" make -C "$REPO" install KVER="$k"
		f=$(res "$k")
		if [ "$f" = "/lib/modules/$k/updates/ib_ipoib.ko" ] && [ "$(modver "$k")" = "$ver" ]; then
			ok "${pre}make install: $k: ib_ipoib resolves to ours in updates/, version $ver"
		else
			nok "${pre}make install: $k: ib_ipoib resolves to ours in updates/, version $ver" \
				"resolves to '${f:-nothing}', version '$(modver "$k")'"
		fi
		keep make-installed "$k"
		step "${pre}make uninstall KVER=$k" make -C "$REPO" uninstall KVER="$k"
		is_intree "${pre}make uninstall" "$k"
		keep make-uninstalled "$k"
	done
}
pre=
sequence

# --- Debian sid's newest kernel (7.x), as a sid user installs it ---
# An overlay over scripts/sid.sh's root (made by the lint, which runs at
# the same time: scripts/sid.sh root waits for it or makes it) and the image
# scripts/sid.sh image unpacked (its modules, as linux-image installs
# them), with dkms installed by apt as its Depends would bring it, then
# dpkg -i and dpkg -r for that kernel (the upgrade and make install are
# the same mechanics as above, and two more module builds: left out for
# the time they cost). Its trees go to guest/<release>/ for the 7.x
# tier's dkms case. No sid root: skipped, with the reason.
sid_root=${SID_ROOT:-$BUILD/sid-root}
k7=$(bash "$REPO/scripts/sid.sh" root 2>>"$log" || true)
if [ -z "$k7" ]; then
	echo "ok - sid: the package on Debian sid's 7.x # SKIP no sid root (scripts/sid.sh root failed: see ${log#"$REPO"/})"
elif ! img=$(bash "$REPO/scripts/sid.sh" image 2>>"$log"); then
	nok "sid: the image of $k7 (scripts/sid.sh image)" "see ${log#"$REPO"/}"
else
	R=$T/sid
	mkdir -p "$R" "$T/rw/sid-upper" "$T/rw/sid-work"
	if mount -t overlay overlay \
		-o "lowerdir=$img:$sid_root,upperdir=$T/rw/sid-upper,workdir=$T/rw/sid-work" "$R" &&
	   root_mounts "$R"; then
		ok "sid: a throw-away root over the sid root and the $k7 image"
		cp "$deb" "$R/tmp/"	# (no upgrade on sid)
		step "sid: apt-get install dkms" sh -c 'apt-get -q -o Acquire::Check-Valid-Until=false update &&
			apt-get -q -y install dkms'
		intree "$k7" "$R/usr/lib/modules/$k7"
		KVERS=$k7 k612= pre="sid: "
		sequence
	else
		nok "sid: a throw-away root over the sid root and the $k7 image" "mount failed"
	fi
fi

# nothing of this reached the host
if [ -e "/lib/modules/$KVER/updates/dkms/ib_ipoib.ko" ] ||
   dpkg-query -W ib-ipoib-dkms >/dev/null 2>&1; then
	nok "the host is untouched" "ib-ipoib-dkms or updates/dkms/ib_ipoib.ko on the host"
else
	ok "the host is untouched"
fi
exit $((fails > 0))
