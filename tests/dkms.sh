#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The DKMS package on the build host, staged: nothing is installed on the
# host. make deb builds build/deb/ib-ipoib-dkms_<version>_all.deb; its files
# are extracted into build/dkms-test/, and Debian's dkms (the commands the
# package's postinst, the kernels' postinst hook and its prerm run) works
# there with --sourcetree/--dkmstree/--installtree, beside a copy of the
# kernel's in-tree ib_ipoib:
#  - add/build/install for $KVER puts ours in updates/dkms/, with the
#    package's version, and depmod then resolves ib_ipoib to it;
#  - autoinstall for $KVER612 (the second kernel, when its headers are
#    installed) does the same there, as /etc/kernel/postinst.d/dkms would;
#  - remove --all takes ours out, and ib_ipoib resolves to the in-tree
#    module again.
# Prints "ok - NAME" / "not ok - NAME # why" lines; exits non-zero on a
# failure. What it does not prove: an install by dpkg on a running system
# (the guest has no dkms, compiler or headers).
set -uo pipefail
. "$(dirname "$0")/vm/kernel.sh" || exit 1
cd "$REPO" || exit 1
T=$BUILD/dkms-test
fails=0
ok() { echo "ok - $1"; }
nok() { echo "not ok - $1 # $2"; fails=$((fails + 1)); }

if ! out=$(bash scripts/deb.sh 2>&1); then
	printf '%s\n' "$out" | sed 's/^/#   /'
	nok "make deb builds the package" "scripts/deb.sh failed"
	exit 1
fi
ver=$(sed -n 's/^#define IPOIB_VERSION[[:space:]]*"\([^"]*\)".*/\1/p' ipoib.h)
deb=$BUILD/deb/ib-ipoib-dkms_${ver}_all.deb
ok "make deb builds ${deb#"$REPO"/}"

rm -rf "$T"
mkdir -p "$T/pkg" "$T/dkms" "$T/root/lib/modules"
dpkg-deb -x "$deb" "$T/pkg"
conf=$T/pkg/usr/src/ib-ipoib-$ver/dkms.conf
if grep -qx "PACKAGE_VERSION=\"$ver\"" "$conf" 2>/dev/null &&
   [ -e "$T/pkg/usr/src/ib-ipoib-$ver/Kbuild" ]; then
	ok "the package holds the sources and dkms.conf of version $ver"
else
	nok "the package holds the sources and dkms.conf of version $ver" "see dpkg-deb -c $deb"
fi
if dpkg-deb -f "$deb" Depends | grep -q 'dkms'; then
	ok "the package depends on dkms"
else
	nok "the package depends on dkms" "no dkms in Depends"
fi

dk() {	# dk CMD [ARGS...]: dkms on the staged trees, for ib-ipoib/$ver
	dkms "$@" -m ib-ipoib -v "$ver" --sourcetree "$T/pkg/usr/src" \
		--dkmstree "$T/dkms" --installtree "$T/root/lib/modules"
}
# resolve KVER: the file modprobe would load for ib_ipoib in the staged root
resolve() {
	depmod -b "$T/root" "$1" 2>/dev/null
	modinfo -b "$T/root" -k "$1" -F filename ib_ipoib 2>/dev/null
}
stage_kernel() {	# stage_kernel KVER: the in-tree ib_ipoib beside ours
	local p
	p=$(grep -o '^[^:]*ulp/ipoib/ib_ipoib\.ko[^:]*' "/lib/modules/$1/modules.dep")
	install -D -m 0644 "/lib/modules/$1/$p" "$T/root/lib/modules/$1/$p"
	cp "/lib/modules/$1"/modules.{order,builtin} "$T/root/lib/modules/$1/" 2>/dev/null
	true
}

stage_kernel "$KVER"
log=$T/dkms.log
if dk add >>"$log" 2>&1 && dk build -k "$KVER" --kernelsourcedir "$KDIR" >>"$log" 2>&1 &&
   dk install -k "$KVER" --kernelsourcedir "$KDIR" >>"$log" 2>&1; then
	ok "dkms add, build, install for $KVER"
else
	nok "dkms add, build, install for $KVER" "see ${log#"$REPO"/}"
fi
f=$(resolve "$KVER")
case $f in
*/updates/dkms/ib_ipoib.ko*) ok "$KVER: ib_ipoib resolves to ours in updates/dkms" ;;
*) nok "$KVER: ib_ipoib resolves to ours in updates/dkms" "resolves to '${f:-nothing}' (dkms: $(grep -m1 'will not replace' "$log"))" ;;
esac
v=$(modinfo -F version "$f" 2>/dev/null)
if [ "$v" = "$ver" ]; then
	ok "$KVER: its version is the package's ($ver)"
else
	nok "$KVER: its version is the package's ($ver)" "modinfo: '$v'"
fi

if [ -n "$KVER612" ] && [ "$KVER612" != "$KVER" ] && [ -e "$KDIR612/Makefile" ] &&
   [ -e "/lib/modules/$KVER612/modules.dep" ]; then
	stage_kernel "$KVER612"
	dkms autoinstall -k "$KVER612" --kernelsourcedir "$KDIR612" --sourcetree "$T/pkg/usr/src" \
		--dkmstree "$T/dkms" --installtree "$T/root/lib/modules" >>"$log" 2>&1
	f=$(resolve "$KVER612")
	case $f in
	*/updates/dkms/ib_ipoib.ko*) ok "second kernel $KVER612: autoinstall puts ours in updates/dkms" ;;
	*) nok "second kernel $KVER612: autoinstall puts ours in updates/dkms" "resolves to '${f:-nothing}', see ${log#"$REPO"/}" ;;
	esac
else
	echo "ok - second kernel: autoinstall # SKIP no Linux 6.12 headers and modules (scripts/deps.sh)"
fi

dk remove --all >>"$log" 2>&1 || true
f=$(resolve "$KVER")
case $f in
*/kernel/*ib_ipoib.ko*) ok "$KVER: after dkms remove, ib_ipoib resolves to the in-tree module" ;;
*) nok "$KVER: after dkms remove, ib_ipoib resolves to the in-tree module" "resolves to '${f:-nothing}'" ;;
esac
if find "$T/root" -path '*/updates/*' -name 'ib_ipoib.ko*' | grep -q .; then
	nok "dkms remove leaves no module of ours" "$(find "$T/root" -path '*/updates/*' -name 'ib_ipoib.ko*')"
else
	ok "dkms remove leaves no module of ours"
fi
exit $((fails > 0))
