#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install everything ipclab needs on a fresh Debian 12 machine.
#   install-deps.sh host   engine + CLI: build tools, the Python virtualenv, and the peer programs
#                          the peers suite runs (perf from linux-perf, stress-ng, pmqtest from
#                          rt-tests)
#   install-deps.sh lab    kernel lab: build deps, QEMU (virtme-ng is in the venv), Slurm and
#                          munge (--executor slurm, and its tests' one-node cluster), and each base's
#                          kernel source and Debian config (kernel/bases), downloaded into the
#                          lab's cache by `ipclab kernel fetch` with the system's own Debian mirror
#   install-deps.sh reference
#                          what booting Debian's own kernel takes (`--kernel debian`): it has
#                          virtiofs and no 9p, and virtme-ng wants the Rust virtiofsd, which
#                          Debian 12 lacks: built from crates.io into the lab's cache (minutes)
# Idempotent: apt runs only when a package is missing, pip only when requirements.txt or
# pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

host_pkgs=(gcc make stress-ng linux-perf rt-tests)
VIRTIOFSD_VERSION=1.14.0
# liburing-dev and libpopt-dev: the census's io_uring workload and the base's mqueue
# selftests (kernel/tests/workloads), built on the host
lab_pkgs=(flex bison bc libelf-dev libssl-dev patch qemu-system-x86 busybox-static cpio
	  xz-utils kmod liburing-dev libpopt-dev
	  # arm64 (--arch arm64): the cross compiler, its libc for static guest programs, QEMU
	  gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm
	  # --executor slurm: Slurm's commands and daemons, and munge, its authentication; the
	  # slurm tier starts a one-node cluster of its own from them (tests/slurm_cluster.py)
	  slurm-wlm munge)

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

# The pinned requirements, then this checkout as the editable package `ipclab` (pyproject.toml),
# which puts the `ipclab` command in .venv/bin.
venv() {
	local py=${PYTHON:-python3} stamp=.venv/.requirements.sha
	[ -x .venv/bin/python ] || "$py" -m venv .venv
	local want
	want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x .venv/bin/ipclab ]; then
		.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt >&2
		.venv/bin/pip install -q --disable-pip-version-check --no-deps -e . >&2
		echo "$want" > "$stamp"
	fi
}

case "${1:-host}" in
host)	apt_install "${host_pkgs[@]}"; venv ;;
lab)	apt_install "${host_pkgs[@]}" "${lab_pkgs[@]}"; venv
	.venv/bin/python -m ipclab kernel fetch >&2 ;;
reference)
	apt_install libcap-ng-dev libseccomp-dev pkg-config
	tools=${IPCLAB_CACHE:-/var/cache/ipclab}/tools
	if [ ! -x "$tools/bin/virtiofsd" ]; then
		command -v cargo >/dev/null || { echo "install-deps: cargo (Rust) needed" >&2; exit 1; }
		echo "install-deps: cargo install virtiofsd into $tools (a few minutes)" >&2
		nice -n 10 cargo install -q virtiofsd --version "$VIRTIOFSD_VERSION" --locked \
			--root "$tools" >&2
	fi ;;
*)	echo "usage: $0 host|lab|reference" >&2; exit 2 ;;
esac
