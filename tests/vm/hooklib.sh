# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the host-side VM hooks (tests/vm/*/vm-hook.sh, see
# tests/vm/vmhook.sh) after they set
#   ROOT   the layer they fill (DIR/root)
#   BASE   the common initramfs's tree ($BUILD/$KVER/initramfs/base), whose
#          files the layer need not carry again

# NetworkManager's package, unpacked (not installed) by scripts/deps.sh
NM_DIR=${NM_DIR:-$REPO/build/deps/network-manager}

# copy_with_libs BIN...: BIN and its ldd closure into $ROOT
copy_with_libs() {
	copy_with_libs_from '' "$@"
}

# copy_with_libs_from PREFIX BIN...: PREFIX/BIN into $ROOT/BIN, with its ldd
# closure (PREFIX: an unpacked package; its libraries are installed)
copy_with_libs_from() {
	local pfx=$1 bin lib dst
	shift
	for bin in "$@"; do
		install -D -m 0755 "$pfx$bin" "$ROOT$bin"
		for lib in $(ldd "$pfx$bin" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
			case $lib in
			*/ld-linux*) dst=/lib64/$(basename "$lib") ;;
			*) dst=/lib/x86_64-linux-gnu/$(basename "$lib") ;;
			esac
			[ -e "$BASE$dst" ] || [ -e "$ROOT$dst" ] || install -D -m 0755 "$lib" "$ROOT$dst"
		done
	done
}

# copy_nm: NetworkManager and nmcli (from NM_DIR), with dbus-daemon and udevd
copy_nm() {
	local t
	for t in "$NM_DIR/usr/sbin/NetworkManager" "$NM_DIR/usr/bin/nmcli" \
		/usr/bin/dbus-daemon /lib/systemd/systemd-udevd /bin/udevadm; do
		[ -x "$t" ] || {
			echo "vm-hook: $t is missing (make deps: scripts/deps.sh)" >&2
			return 1
		}
	done
	copy_with_libs_from "$NM_DIR" /usr/sbin/NetworkManager /usr/bin/nmcli
	copy_with_libs /usr/bin/dbus-daemon /lib/systemd/systemd-udevd /bin/udevadm
}
