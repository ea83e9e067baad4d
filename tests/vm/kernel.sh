# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the harness scripts (bash). Chooses the kernel the modules are
# built for and the VM boots, from KERNEL=stock|debug (default stock) and the
# optional overrides KVER= and KDIR= (default: the newest installed Debian
# 6.1 headers; KVER=6.12 or any other series picks the newest of that
# series, a full release such as 6.12.117+deb12-amd64 that one). Sets:
#   REPO BUILD KERNEL KVER KDIR VMLINUZ MODROOT (modules in $MODROOT/lib/modules/$KVER)
#   VM_MEM (MiB) KBUILD_DIR (build/<kver>)
# KERNEL=debug extracts the prebuilt debug kernel debs from
# DEBUG_KERNEL_DIR (default ../shared/kernels/6.1-debug beside the repo), or
# else those `make debug-kernel` built into DEBUG_KERNEL_CACHE (default
# build/debug-kernel-cache), into build/debug-kernel/ once. If neither has
# them it sets KERNEL_SKIP to a reason.

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$REPO/build}
KERNEL=${KERNEL:-stock}
KERNEL_SKIP=

# kernel_newest SERIES: the newest installed Debian amd64 headers of one
# kernel series, e.g. 6.1 (6.1.0-57-amd64) or 6.12 (6.12.117+deb12-amd64);
# the dot after the series keeps 6.1 from matching 6.12.
kernel_newest() {
	{ ls -d "/usr/src/linux-headers-$1".*-amd64 2>/dev/null || true; } |
		sed 's,.*/linux-headers-,,' | sort -V | tail -n 1
}

# KMAKE: how make runs for KDIR (a command line); KDIR_HOST: where KDIR's
# files are as the host sees them. The same for every kernel except sid's.
KMAKE="make"
KDIR_HOST=

case "$KERNEL" in
stock)
	# Linux 7.x (KVER=7, a 7.x series or release): sid's newest headers, in
	# the throw-away sid root of scripts/sid.sh, built there, booted
	# from the image scripts/sid.sh image extracts
	# (natively, on a host that has 7.x headers, e.g. sid itself: as any
	# other series)
	case ${KVER:-} in
	7 | 7.*)
		if [ -d "/usr/src/linux-headers-$KVER" ] || [ -n "$(kernel_newest "$KVER")" ]; then
			:	# installed here: as any other series, below
		elif ! _sid=$("$REPO/scripts/sid.sh" kver) || [ -z "$_sid" ]; then
			echo "no sid root with Linux 7.x headers: run scripts/sid.sh root" >&2
			return 1 2>/dev/null || exit 1
		else
			case $KVER in 7 | 7.[0-9] | 7.[0-9][0-9]) KVER=$_sid ;; esac
			KDIR=${KDIR:-/usr/src/linux-headers-$KVER}
			KDIR_HOST=${SID_ROOT:-$BUILD/sid-root}$KDIR
			KMAKE="$REPO/scripts/sid.sh make"
			# the image scripts/sid.sh image extracted (vmlinuz and
			# modules under usr/lib/modules: Debian 7.x ships no /boot)
			_img=$BUILD/sid-image/$KVER/usr
			VMLINUZ=${VMLINUZ:-$_img/lib/modules/$KVER/vmlinuz}
			MODROOT=${MODROOT:-$_img}
			VM_MEM=${VM_MEM:-1024}
		fi
		;;
	esac
	# a bare series (KVER=6.12) means its newest installed release
	case ${KVER:-} in
	[0-9] | [0-9].[0-9] | [0-9].[0-9][0-9])
		series=$KVER
		KVER=$(kernel_newest "$series")
		if [ -z "$KVER" ]; then
			echo "no /usr/src/linux-headers-$series.*-amd64: run scripts/deps.sh" >&2
			return 1 2>/dev/null || exit 1
		fi
		;;
	esac
	KVER=${KVER:-$(kernel_newest 6.1)}
	if [ -z "$KDIR_HOST" ] && [ -z "$KVER" ]; then
		echo "no /usr/src/linux-headers-6.1.*-amd64: run scripts/deps.sh" >&2
		return 1 2>/dev/null || exit 1
	fi
	if [ -z "${KDIR:-}" ]; then
		if [ -d "/usr/src/linux-headers-$KVER" ]; then
			KDIR=/usr/src/linux-headers-$KVER
		else
			KDIR=/lib/modules/$KVER/build
		fi
	fi
	VMLINUZ=${VMLINUZ:-/boot/vmlinuz-$KVER}
	MODROOT=${MODROOT:-}
	VM_MEM=${VM_MEM:-1024}
	;;
debug)
	DEBUG_KERNEL_DIR=${DEBUG_KERNEL_DIR:-$(cd "$REPO/.." && pwd)/shared/kernels/6.1-debug}
	DEBUG_KERNEL_CACHE=${DEBUG_KERNEL_CACHE:-$BUILD/debug-kernel-cache}
	img_deb= hdr_deb=
	for d in "$DEBUG_KERNEL_DIR" "$DEBUG_KERNEL_CACHE"; do
		img_deb=$(ls "$d"/linux-image-*_amd64.deb 2>/dev/null | grep -v dbg | head -n 1 || true)
		hdr_deb=$(ls "$d"/linux-headers-*_amd64.deb 2>/dev/null | head -n 1 || true)
		[ -n "$img_deb" ] && [ -n "$hdr_deb" ] && break
	done
	if [ -z "$img_deb" ] || [ -z "$hdr_deb" ]; then
		KERNEL_SKIP="no debug kernel: no debs in $DEBUG_KERNEL_DIR (prebuilt) nor in ${DEBUG_KERNEL_CACHE#"$REPO"/} (make debug-kernel builds one, about an hour)"
		KVER=none KDIR=none VMLINUZ=none MODROOT=none VM_MEM=2048
	else
		KVER=$(basename "$img_deb" | sed 's/^linux-image-\([^_]*\)_.*/\1/')
		dk=$BUILD/debug-kernel
		if [ ! -e "$dk/.stamp-$KVER" ]; then
			echo "extracting debug kernel $KVER into $dk" >&2
			rm -rf "$dk" && mkdir -p "$dk"
			dpkg-deb -x "$img_deb" "$dk/img"
			dpkg-deb -x "$hdr_deb" "$dk/hdr"
			touch "$dk/.stamp-$KVER"
		fi
		KDIR=$dk/hdr/usr/src/linux-headers-$KVER
		VMLINUZ=$dk/img/boot/vmlinuz-$KVER
		MODROOT=$dk/img
		VM_MEM=${VM_MEM:-2048}
	fi
	;;
*)
	echo "KERNEL must be stock or debug (got '$KERNEL')" >&2
	return 1 2>/dev/null || exit 1
	;;
esac
KBUILD_DIR=$BUILD/$KVER
# The second supported kernel, for make lint and the 6.12 tier of make check:
# the newest installed 6.12 headers (KVER612=/KDIR612= override); empty when
# there are none.
KVER612=${KVER612:-$(kernel_newest 6.12)}
KDIR612=${KVER612:+${KDIR612:-/usr/src/linux-headers-$KVER612}}
KDIR_HOST=${KDIR_HOST:-$KDIR}
export REPO BUILD KERNEL KVER KDIR VMLINUZ MODROOT VM_MEM KBUILD_DIR KERNEL_SKIP
# KERNEL_ENV: env(1) without the variables this file takes from the
# environment, for a command that sources it again for another kernel:
#   "${KERNEL_ENV[@]}" KERNEL=stock KVER=6.12 CMD...
# (the others it sets afresh, KMAKE, KDIR_HOST and KERNEL_SKIP included)
KERNEL_ENV=(env -u KVER -u KDIR -u VMLINUZ -u MODROOT -u VM_MEM)
export KMAKE KDIR_HOST
export KVER612 KDIR612
