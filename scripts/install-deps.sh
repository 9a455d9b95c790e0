#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install everything ipclab needs on a fresh Debian 12 machine.
#   install-deps.sh host   engine + CLI: build tools, the Python virtualenv, and the peer programs
#                          the peers suite runs (perf from linux-perf, stress-ng, pmqtest from
#                          rt-tests)
#   install-deps.sh lab    kernel lab: build deps, QEMU (virtme-ng is in the venv), and each base's
#                          kernel source (kernel/bases), downloaded into the lab's cache by
#                          `ipclab kernel fetch` with the system's own Debian mirror
# Idempotent: apt runs only when a package is missing, pip only when requirements changed.
set -euo pipefail
cd "$(dirname "$0")/.."

host_pkgs=(gcc make stress-ng linux-perf rt-tests)
lab_pkgs=(flex bison bc libelf-dev libssl-dev patch qemu-system-x86 busybox-static cpio
	  xz-utils kmod
	  # arm64 (--arch arm64): the cross compiler, its libc for static guest programs, QEMU
	  gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm)

apt_install() {
	local missing=() p name
	for p in "$@"; do
		name=${p%%=*}
		dpkg-query -W -f='${Status}\n' "$name" 2>/dev/null | grep -q '^install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "install-deps: apt-get install ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: need root to install: ${missing[*]}" >&2
		exit 1
	fi
	apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

venv() {
	local py=${PYTHON:-python3} stamp=.venv/.requirements.sha
	[ -x .venv/bin/python ] || "$py" -m venv .venv
	local want
	want=$(sha256sum requirements.txt | cut -d' ' -f1)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt >&2
		echo "$want" > "$stamp"
	fi
}

case "${1:-host}" in
host)	apt_install "${host_pkgs[@]}"; venv ;;
lab)	apt_install "${host_pkgs[@]}" "${lab_pkgs[@]}"; venv
	.venv/bin/python -m ipclab kernel fetch >&2 ;;
*)	echo "usage: $0 host|lab" >&2; exit 2 ;;
esac
