#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The newest kernel Debian has (sid's Linux 7.x) from a Debian 12 host: a
# throw-away sid root with sid's compiler, make, sparse and the newest
# linux-headers-amd64, made by mmdebstrap in build/sid-root. Debian 12
# cannot build against those headers itself: they were made by a newer gcc
# (flags gcc-12 rejects) and their kbuild tools need a newer glibc. Nothing
# of sid is installed on the host; `make clean` removes the root.
#
#   scripts/sid.sh root         make the root once (about 2-3 minutes and
#                               400 MB, from the host's Debian mirror)
#   scripts/sid.sh kver         the newest linux-headers-*-amd64 release in it
#   scripts/sid.sh make ARGS    make ARGS inside the root (as root), with the
#                               repository at its own path and /proc (objtool
#                               needs it) mounted in a private mount namespace
#   scripts/sid.sh image        the kernel image and modules of the root's
#                               headers, for the VMs to boot (once: about
#                               125 MB of packages, 20 s): extracted into
#                               build/sid-image/KVER/ and indexed by depmod
#                               (Debian's 7.x packages ship no /boot and no
#                               modules.dep); prints that directory
#
# Env: SID_ROOT (default build/sid-root), SID_MIRROR (default the first
# deb.debian.org-style URI of the host's apt sources).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$REPO/build}
ROOT=${SID_ROOT:-$BUILD/sid-root}

sid_kver() {
	{ ls -d "$ROOT"/usr/src/linux-headers-*-amd64 2>/dev/null || true; } |
		sed 's,.*/linux-headers-,,' | sort -V | tail -n 1
}

sid_mirror() {
	local m
	m=${SID_MIRROR:-$(grep -hoE '^(URIs:|deb) *https?://[^ ]*/debian/?( |$)' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		grep -oE 'https?://[^ ]*' | head -n 1)}
	echo "${m:-http://deb.debian.org/debian}"
}

# Debian's headers lack the kernel's scripts/checker-valid.sh, and without
# it the kernel's Makefile turns C=1 off with one line ("sparse is not
# available or not up to date") that contains no "warning:". Ours answers
# the same question: can this sparse parse __typeof_unqual__ (which the
# 7.x headers use)? It prints 1 if so.
checker_valid() {
	cat <<'EOF'
#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# written by ib_ipoib's scripts/sid.sh: prints 1 when the checker "$@"
# parses __typeof_unqual__, 0 otherwise
f=$(mktemp --suffix=.c) || { echo 0; exit 0; }
printf 'static int x;\nstatic __typeof_unqual__(x) y;\n' >"$f"
out=$("$@" "$f" 2>&1)
rc=$?
rm -f "$f"
[ $rc = 0 ] && [ -z "$out" ] && echo 1 || echo 0
EOF
}

sid_root() {
	local tmp kver common
	mkdir -p "$BUILD"
	exec 8>"$BUILD/.sid-root.lock"
	flock -w 900 8 || { echo "sid: could not lock $ROOT" >&2; exit 1; }
	if [ -e "$ROOT/.ready" ] && [ -n "$(sid_kver)" ]; then
		sid_kver
		return 0
	fi
	if ! command -v mmdebstrap >/dev/null; then
		echo "sid: no mmdebstrap (scripts/deps.sh installs it)" >&2
		exit 1
	fi
	tmp=$ROOT.tmp
	rm -rf "$tmp" "$ROOT"
	echo "sid: making a sid root in ${ROOT#"$REPO"/} (make, sparse, linux-headers-amd64)" >&2
	# Check-Valid-Until: a mirror may serve a sid Release file past its
	# Valid-Until date, which apt refuses by default
	mmdebstrap --quiet --variant=apt \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--include=make,sparse,linux-headers-amd64 \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		sid "$tmp" "$(sid_mirror)" >&2
	ROOT=$tmp
	kver=$(sid_kver)
	if [ -z "$kver" ]; then
		echo "sid: no linux-headers-*-amd64 in the new root" >&2
		exit 1
	fi
	common=$(readlink -f "$tmp/usr/src/linux-headers-$kver/scripts" || true)
	for d in "$tmp/usr/src/linux-headers-$kver/scripts" \
		 "$tmp/usr/src/linux-headers-${kver%-amd64}-common/scripts" \
		 "$common"; do
		if [ -d "$d" ] && [ ! -e "$d/checker-valid.sh" ]; then
			checker_valid >"$d/checker-valid.sh"
			chmod 0755 "$d/checker-valid.sh"
		fi
	done
	touch "$tmp/.ready"
	ROOT=${SID_ROOT:-$BUILD/sid-root}
	mv "$tmp" "$ROOT"
	echo "$kver"
}

sid_make() {
	if [ ! -e "$ROOT/.ready" ]; then
		echo "sid: no sid root in ${ROOT#"$REPO"/} (scripts/sid.sh root)" >&2
		exit 1
	fi
	# shellcheck disable=SC2016
	exec unshare --mount --propagation private bash -c '
		set -e
		root=$1 repo=$2
		shift 2
		mkdir -p "$root$repo"
		mount --bind "$repo" "$root$repo"
		mount -t proc proc "$root/proc"
		case $PWD in "$repo"*) dir=$PWD ;; *) dir=/ ;; esac
		exec chroot "$root" sh -c "cd \"\$0\" && exec make \"\$@\"" "$dir" "$@"
	' sid-make "$ROOT" "$REPO" "$@"
}

# in_root CMD: a shell command in the root, with /proc
in_root() {
	# shellcheck disable=SC2016
	unshare --mount --propagation private bash -c '
		mount -t proc proc "$1/proc" && exec chroot "$1" sh -c "$2"' \
		sid-root "$ROOT" "$1"
}

# The image packages of the headers' release: linux-image-KVER is an empty
# package whose dependencies hold the kernel (linux-binary-KVER), its
# modules (linux-modules-KVER) and config (linux-base-KVER). They are
# fetched by the root's apt (whose package lists mmdebstrap dropped) and
# unpacked with dpkg-deb, not installed: the root needs no initramfs tools.
sid_image() {
	local kver dir tmp d
	kver=$(sid_kver)
	[ -e "$ROOT/.ready" ] && [ -n "$kver" ] || {
		echo "sid: no sid root in ${ROOT#"$REPO"/} (scripts/sid.sh root)" >&2
		exit 1
	}
	dir=$BUILD/sid-image/$kver
	exec 8>"$BUILD/.sid-image.lock"
	flock -w 900 8 || { echo "sid: could not lock $dir" >&2; exit 1; }
	if [ ! -e "$dir/.ready" ]; then
		tmp=$dir.tmp
		rm -rf "$tmp" "$dir" "$ROOT/tmp/sid-image"
		mkdir -p "$tmp" "$ROOT/tmp/sid-image"
		chmod 0777 "$ROOT/tmp/sid-image"	# apt downloads as _apt
		echo "sid: fetching the $kver image and modules" >&2
		in_root "apt-get -q -o Acquire::Check-Valid-Until=false update >/dev/null &&
			 cd /tmp/sid-image && apt-get -q download linux-binary-$kver \
			 linux-modules-$kver linux-base-$kver" >&2 || {
			echo "sid: could not fetch the $kver image packages" >&2
			exit 1
		}
		for d in "$ROOT"/tmp/sid-image/*.deb; do
			dpkg-deb -x "$d" "$tmp" || exit 1
		done
		rm -rf "$ROOT/tmp/sid-image"
		if [ ! -e "$tmp/usr/lib/modules/$kver/vmlinuz" ]; then
			echo "sid: no usr/lib/modules/$kver/vmlinuz in the image packages" >&2
			exit 1
		fi
		depmod -b "$tmp/usr" "$kver" || exit 1
		touch "$tmp/.ready"
		mv "$tmp" "$dir"
	fi
	echo "$dir"
}

case ${1:-} in
root) sid_root ;;
image) sid_image ;;
kver)
	[ -e "$ROOT/.ready" ] || exit 1
	sid_kver
	;;
make)
	shift
	sid_make "$@"
	;;
*)
	sed -n '3,24s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
