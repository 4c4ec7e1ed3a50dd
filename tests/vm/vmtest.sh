#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Run a test script inside one or two qemu (TCG) guests booted on a Debian
# kernel, with the host's / as the guest root (read-only 9p + tmpfs overlay).
#
#   tests/vm/vmtest.sh [--kernel VER] [--guests 1|2] [--planes N] [--mem MB]
#                      [--timeout SEC] [--out DIR] [--verbose] -- SCRIPT [ARGS...]
#
#   --kernel VER   6.1 (default), 6.12, or a full uname -r (scripts/kernel-versions.sh)
#   --guests N     1 (default; 2 vCPUs) or 2 (1 vCPU each, joined by the planes)
#   --planes N     plane NICs per guest, eth0..eth<N-1> (default 1, max 8); guest i
#                  has 10.77.<plane>.<i+1>/24 on plane <plane>. Each plane is its
#                  own qemu `-netdev dgram` UDP link on 127.0.0.1.
#   --mem MB       memory per guest (default 1024)
#   --timeout SEC  wall-clock limit for the guests (the kernel fetch before them
#                  is not counted); then the qemus are killed (default 300)
#   --out DIR      where logs go (default: a new ${TMPDIR:-/tmp}/metaroce-vmtest.XXXXXX)
#   --verbose      copy the guests' consoles to stderr while they run
#
# SCRIPT (a bash script on the host) runs as root inside each guest with
# GUEST_INDEX, GUEST_COUNT, PLANES, KVER, METAROCE_SRC, RESULTS (a per-guest
# directory shared back to the host at the same path) and VMTEST_LIB (source
# it for the helpers in tests/vm/guest-lib.sh). Exit status: 0 only if the
# script exited 0 in every guest and every guest's dmesg passed the check in
# tests/vm/dmesg-check.sh; 1 if a guest failed or timed out; 2 on a usage or
# host setup error. See tests/vm/README.md.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=dmesg-check.sh
. "$here/dmesg-check.sh"

kernel=6.1
guests=1
planes=1
mem=1024
timeout=300
out=
verbose=
PEER_GRACE=${VMTEST_PEER_GRACE:-15} # s a guest may outlive its failed peer
# Boot attempts: a guest the emulator crashes before its script starts, or
# that has not started it BOOT_TIMEOUT s after launch (booting takes 5-25 s),
# or that dies with an RFLAGS no CPU can hold, is booted again (see
# emulator_failed_before_script, emulator_corrupted_cpu); this run's number.
attempt=${VMTEST_ATTEMPT:-1}
max_attempts=${VMTEST_BOOT_ATTEMPTS:-3}
BOOT_TIMEOUT=${VMTEST_BOOT_TIMEOUT:-180}
orig_args=("$@")

usage() { sed -n '4,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
die() { echo "vmtest: error: $*" >&2; exit 2; }
log() { echo "vmtest: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:?}; shift 2 ;;
	--guests) guests=${2:?}; shift 2 ;;
	--planes) planes=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--kernel=*|--guests=*|--planes=*|--mem=*|--timeout=*|--out=*)
		set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
	-v|--verbose) verbose=1; shift ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) echo "vmtest: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "vmtest: no SCRIPT given" >&2; usage; }
script=$1
shift
script_args=("$@")

isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
[[ $guests == 1 || $guests == 2 ]] || die "--guests must be 1 or 2"
isnum "$planes" && [ "$planes" -le 8 ] || die "--planes must be 0..8"
isnum "$mem" && [ "$mem" -ge 256 ] || die "--mem must be a number of MB >= 256"
isnum "$timeout" && [ "$timeout" -ge 1 ] || die "--timeout must be a number of seconds"
isnum "$attempt" && [ "$attempt" -ge 1 ] || die "VMTEST_ATTEMPT must be a number >= 1"
isnum "$max_attempts" && [ "$max_attempts" -ge 1 ] || die "VMTEST_BOOT_ATTEMPTS must be a number >= 1"
isnum "$BOOT_TIMEOUT" && [ "$BOOT_TIMEOUT" -ge 1 ] || die "VMTEST_BOOT_TIMEOUT must be a number >= 1"
[ -f "$script" ] || die "script $script not found"
script=$(realpath -e "$script")

# Paths the guest mounts over: a script or output dir there would be hidden.
hidden_path() {
	case $1/ in
	/proc/*|/sys/*|/dev/*|/run/*|/lib/modules/*|/usr/lib/modules/*) return 0 ;;
	esac
	return 1
}
hidden_path "$script" && die "script $script is under a path the guest mounts over"

# ---------------------------------------------------------------- host checks
qemu=${VMTEST_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || die "$qemu not found (apt-get install qemu-system-x86)"
command -v ss >/dev/null || die "ss not found (apt-get install iproute2)"
command -v flock >/dev/null || die "flock not found (util-linux)"
pdeath=
setpriv --pdeathsig KILL true 2>/dev/null && pdeath="setpriv --pdeathsig KILL"
accel=${VMTEST_ACCEL:-tcg}
case $accel in
tcg)
	cpu=max
	# Multi-threaded TCG (one host thread per vCPU, the default) lets
	# a vCPU run stale code while another live-patches the kernel
	# (text_poke_bp): rarely, a guest dies with "Oops: int3". Single-
	# threaded TCG runs the vCPUs in turn and cannot race.
	tcg_thread=${VMTEST_TCG_THREAD:-multi}
	case $tcg_thread in
	single|multi) accel="tcg,thread=$tcg_thread" ;;
	*) die "VMTEST_TCG_THREAD must be single or multi" ;;
	esac ;;
kvm)
	# Not the default: on the reference hosts qemu cannot use /dev/kvm
	# (see tests/vm/README.md); kept for machines where it works.
	[ -e /dev/kvm ] || die "VMTEST_ACCEL=kvm but /dev/kvm does not exist (use the default TCG)"
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || die "VMTEST_ACCEL=kvm but /dev/kvm is not read/writable by $(id -un)"
	cpu=host ;;
*) die "VMTEST_ACCEL must be tcg or kvm" ;;
esac

kdir=$("$here/fetch-kernel.sh" --quiet "$kernel") || die "could not fetch kernel $kernel (see above)"
kver=$(cat "$kdir/kver")
# The decompressed ELF boots through its PVH entry, ~5 s faster under TCG.
kimage=$kdir/vmlinux
[ -r "$kimage" ] || kimage=$kdir/vmlinuz
kimage=${VMTEST_KERNEL:-$kimage}
for f in "$kimage" "$kdir/initramfs.cpio.gz"; do
	[ -r "$f" ] || die "$f missing or unreadable"
done

# ---------------------------------------------------------------- out dir
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/metaroce-vmtest.XXXXXX") || die "mktemp failed"
else
	mkdir -p "$out" || die "cannot create $out"
fi
out=$(realpath -e "$out")
hidden_path "$out" && die "--out $out is under a path the guest mounts over"
[[ $out == *[[:space:],\'\"\\]* ]] && die "--out path must not contain spaces, commas or quotes"
exec {outlock}>"$out/.vmtest.lock"
flock -n "$outlock" || die "another vmtest.sh run is using $out"
for ((g = 0; g < 2; g++)); do rm -rf "${out:?}/guest$g"; done
[ "$attempt" = 1 ] && rm -rf "${out:?}"/attempt[0-9]*-guest[01]
rm -f "$out/summary.txt"

# ---------------------------------------------------------------- cleanup
declare -a qpid=() tailpid=() boot_deadline=()
cleanup() {
	local p
	for p in "${qpid[@]}" "${tailpid[@]}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	for p in "${qpid[@]}"; do
		[ -n "$p" ] || continue
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM HUP

# ---------------------------------------------------------------- ports
# Each run takes a block of 16 UDP ports (2 per plane) on 127.0.0.1, held by
# an flock on a lock file for the run's lifetime, so parallel runs never share
# a block; ports some other program has bound are skipped.
portbase=
if [ "$planes" -gt 0 ]; then
	lockdir=${TMPDIR:-/tmp}/metaroce-vm-ports
	mkdir -p "$lockdir" && chmod 1777 "$lockdir" 2>/dev/null
	for _ in $(seq 1 200); do
		b=$((40000 + (RANDOM % 1250) * 16))
		exec {lockfd}>>"$lockdir/$b.lock" || continue
		if flock -n "$lockfd"; then
			if [ -z "$(ss -Hun -a "( sport >= :$b and sport <= :$((b + 15)) )" 2>/dev/null)" ]; then
				portbase=$b
				break
			fi
		fi
		exec {lockfd}>&-
	done
	[ -n "$portbase" ] || die "no free UDP port block on 127.0.0.1 in 40000-59999"
fi

# ---------------------------------------------------------------- launch
q() { printf '%q ' "$@"; }
start=$(date +%s.%N)
declare -a launched=()
for ((g = 0; g < guests; g++)); do
	gd=$out/guest$g
	mkdir -p "$gd/.vmtest"
	{
		echo "export RESULTS=$(q "$gd")"
		echo "RUNNER=$(q "$here/guest-run.sh")"
		echo "MODULES=$(q "$kdir/root/lib/modules")"
	} >"$gd/.vmtest/init.conf"
	{
		echo "GUEST_INDEX=$g"
		echo "GUEST_COUNT=$guests"
		echo "PLANES=$planes"
		echo "METAROCE_SRC=$(q "$src")"
		echo "VMTEST_MODULES=$(q "$kdir/root/lib/modules")"
		echo "VMTEST_SCRIPT=$(q "$script")"
		echo "VMTEST_ARGS=($(q "${script_args[@]}"))"
	} >"$gd/.vmtest/env"

	cpus=$((guests == 1 ? 2 : 1))
	args=(-name "vmtest-$kver-g$g" -machine pc -accel "$accel" -cpu "$cpu"
		-smp "$cpus" -m "$mem" -nodefaults -no-user-config -display none
		-no-reboot -serial "file:$gd/console.log"
		-kernel "$kimage" -initrd "$kdir/initramfs.cpio.gz"
		-append "console=ttyS0 loglevel=5 panic=-1 tsc=unstable vmtest.attempt=$attempt ${VMTEST_APPEND:-}"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$gd,mount_tag=results,security_model=none,multidevs=remap")
	for ((p = 0; p < planes; p++)); do
		lport=$((portbase + 2 * p + g))
		rport=$((portbase + 2 * p + 1 - g))
		args+=(-netdev "dgram,id=plane$p,local.type=inet,local.host=127.0.0.1,local.port=$lport,remote.type=inet,remote.host=127.0.0.1,remote.port=$rport"
			-device "virtio-net-pci,netdev=plane$p,mac=52:54:00:77:$(printf %02x%s%02x "$p" : $((g + 1))),addr=$(printf 0x%x $((0x10 + p)))")
	done
	printf '%q ' "$qemu" "${args[@]}" >"$gd/.vmtest/qemu-cmdline"
	# pdeathsig: the qemus die with this script even if it is SIGKILLed
	# (e.g. by a ctest timeout) and cannot run its EXIT trap.
	$pdeath "$qemu" "${args[@]}" </dev/null >"$gd/qemu.log" 2>&1 &
	qpid[g]=$!
	launched[g]=$(date +%s.%N)
	boot_deadline[g]=$((${launched[g]%.*} + BOOT_TIMEOUT))
	if [ -n "$verbose" ]; then
		tail -F -n +1 "$gd/console.log" 2>/dev/null | sed -u "s/^/[vm$g] /" >&2 &
		tailpid[g]=$!
	fi
done
log "kernel $kver, $guests guest(s), $planes plane(s), logs in $out"
# Datagrams the host dropped because a receiving socket was full: between
# guests, those are the links' own losses (a qemu busy with a guest reads
# its dgram socket late).  Host-wide, so other traffic counts too.
host_udp_rcvbuf_errors() {
	awk '$1 == "Udp:" { if (!n) { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; n = 1 } else print $c }' /proc/net/snmp
}
udp_drops_start=$(host_udp_rcvbuf_errors)

# ---------------------------------------------------------------- wait
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
deadline=$(awk -v s="$start" -v t="$timeout" 'BEGIN { printf "%d", s + t }')
declare -a done_=() qrc=() state=() end=()
peer_deadline=
while :; do
	running=0
	for ((g = 0; g < guests; g++)); do
		[ -n "${done_[g]:-}" ] && continue
		if kill -0 "${qpid[g]}" 2>/dev/null &&
			{ [ -e "$out/guest$g/.started" ] || [ "$EPOCHSECONDS" -lt "${boot_deadline[g]}" ]; }; then
			running=$((running + 1))
			continue
		fi
		if kill -0 "${qpid[g]}" 2>/dev/null; then
			# Alive, but its script never started: hung while booting.
			kill "${qpid[g]}" 2>/dev/null
			sleep 0.5
			kill -9 "${qpid[g]}" 2>/dev/null
			state[g]=boot-hang
		fi
		wait "${qpid[g]}"
		qrc[g]=$?
		done_[g]=1
		end[g]=$(now)
		st=$(cat "$out/guest$g/exit_status" 2>/dev/null)
		if [ "$st" != 0 ] && [ -z "$peer_deadline" ]; then
			peer_deadline=$(($(date +%s) + PEER_GRACE))
		fi
	done
	[ "$running" -eq 0 ] && break
	t=$(date +%s)
	if [ "$t" -ge "$deadline" ]; then
		reason=timeout
	elif [ -n "$peer_deadline" ] && [ "$t" -ge "$peer_deadline" ]; then
		reason=peer-failed
	else
		sleep 0.2
		continue
	fi
	for ((g = 0; g < guests; g++)); do
		[ -n "${done_[g]:-}" ] && continue
		kill "${qpid[g]}" 2>/dev/null
		sleep 0.5
		kill -9 "${qpid[g]}" 2>/dev/null
		wait "${qpid[g]}" 2>/dev/null
		qrc[g]=killed
		state[g]=$reason
		done_[g]=1
		end[g]=$(now)
	done
	break
done
for p in "${tailpid[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
tailpid=()
finish=$(now)

# ---------------------------------------------------------------- verdict
overall=0
summary=()
declare -a failed=()
for ((g = 0; g < guests; g++)); do
	gd=$out/guest$g
	st=$(cat "$gd/exit_status" 2>/dev/null)
	boot=-
	[ -f "$gd/.started" ] && boot=$(elapsed "${launched[g]}" "$(stat -c %.3Y "$gd/.started")")
	run=$(elapsed "${launched[g]}" "${end[g]}")
	# dmesg.txt is written after the script; a guest that hung or died
	# left at least the stream or its console.
	why=()
	dm=$gd/dmesg.txt
	if [ ! -f "$dm" ]; then
		[ -n "$st" ] && [ "$st" != 125 ] && why+=("no dmesg.txt collected")
		dm=$gd/dmesg.stream
		[ -s "$dm" ] || dm=$gd/console.log
	fi
	bad=$(vmtest_dmesg_check "$dm" 2>&1)
	dmesg_ok=$?
	if [ "${state[g]:-}" = boot-hang ]; then
		why+=("its script had not started ${BOOT_TIMEOUT}s after launch: hung while booting")
	elif [ "${state[g]:-}" = timeout ]; then
		why+=("timed out after ${timeout}s")
	elif [ "${state[g]:-}" = peer-failed ]; then
		why+=("killed ${PEER_GRACE}s after its peer failed")
	elif [ -z "$st" ]; then
		why+=("guest stopped without an exit status (qemu rc ${qrc[g]}; see console.log)")
	elif [ "$st" = 125 ]; then
		why+=("guest setup failed")
	elif [ "$st" != 0 ]; then
		why+=("script exit $st")
	fi
	[ "$dmesg_ok" -ne 0 ] && why+=("dmesg check failed")
	if [ ${#why[@]} -eq 0 ]; then
		verdict=PASS
	else
		verdict=FAIL
		overall=1
		failed[g]=1
	fi
	line="guest$g: $verdict  boot-to-script ${boot}s, total ${run}s"
	[ ${#why[@]} -gt 0 ] && line+="  ($(IFS=';'; echo "${why[*]}" | sed 's/;/; /g'))"
	summary+=("$line")
	if [ "$verdict" = FAIL ]; then
		if [ "$dmesg_ok" -ne 0 ]; then
			summary+=("  dmesg ($(basename "$dm")):")
			while IFS= read -r l; do summary+=("    $l"); done < <(printf '%s\n' "$bad" | head -n 10)
		fi
		if [ -s "$gd/output.log" ]; then
			summary+=("  output.log (last lines):")
			while IFS= read -r l; do summary+=("    $l"); done < <(tail -n 15 "$gd/output.log")
		elif [ -z "$st" ] && [ -s "$gd/console.log" ]; then
			summary+=("  console.log (last lines):")
			while IFS= read -r l; do summary+=("    $l"); done < <(tail -n 15 "$gd/console.log" | tr -d '\r')
		fi
		if [ -s "$gd/diag.txt" ]; then
			summary+=("  diag.txt (vm_net_diag):")
			while IFS= read -r l; do summary+=("    $l"); done < <(head -n 24 "$gd/diag.txt")
		fi
		[ -s "$gd/qemu.log" ] && summary+=("  qemu: $(head -n 3 "$gd/qemu.log" | tr '\n' ' ')")
	fi
done

# A guest the emulator crashed before its script started ran nothing of the
# project's: multi-threaded TCG can run stale kernel text while another vCPU
# live-patches it (text_poke_bp), and the guest dies with "Oops: int3"
# (README.md, "Known TCG hazard"); CI saw it at 0.8 s into a 6.12 boot.  A
# guest can also stop in the middle of booting (seen once at 1.1 s into a
# 6.1 boot, console silent for 500 s): killed at BOOT_TIMEOUT, likewise.
# Such a run is booted again, up to max_attempts boots, when every failed
# guest either crashed or hung that way or was only killed because its
# peer did.  The same oops once a script has started is a failure like any
# other, unless the oops shows CPU state no x86-64 CPU can hold (below).
emulator_failed_before_script() {
	local gd=$out/guest$1
	[ ! -e "$gd/.started" ] && [ ! -e "$gd/exit_status" ] || return 1
	[ "${state[$1]:-}" = boot-hang ] ||
		tr -d '\r' <"$gd/console.log" 2>/dev/null | grep -Eq '(Oops: int3|^\[ *[0-9.]+\] int3: [0-9a-f]{4} \[#)'
}
# A guest that died with a kernel register dump whose RFLAGS has a
# reserved bit set (3, 5, 15, 22-63) or bit 1 clear: the CPU pushes RFLAGS
# itself and no x86-64 CPU holds such a value (IRET and POPF cannot load
# one), so it is the emulator's own state that went wrong, whatever ran
# in the guest.  Two 6.12 guests died so on 2026-12-07, "Oops: double
# fault" in the slab allocator's fast path with EFLAGS 05d20a02 and
# 062bde9a: 0x202 or-ed into a kernel pointer's low half (README.md,
# "Known TCG hazard").  Sets bad_rflags to the value.
emulator_corrupted_cpu() {
	local gd=$out/guest$1 f
	[ ! -e "$gd/exit_status" ] || return 1
	for f in $(tr -d '\r' <"$gd/console.log" 2>/dev/null |
		sed -n 's/^\[ *[0-9.]*\] RSP: 0018:[0-9a-f]* EFLAGS: \([0-9a-f]\{1,16\}\)$/\1/p'); do
		if (((16#$f & ~16#3f7fd7) != 0 || (16#$f & 2) == 0)); then
			bad_rflags=$f
			return 0
		fi
	done
	return 1
}
if [ "$overall" -ne 0 ] && [ "$attempt" -lt "$max_attempts" ]; then
	crashed=() corrupted=() retry=1
	for ((g = 0; g < guests; g++)); do
		if emulator_failed_before_script "$g"; then
			crashed+=("guest$g")
		elif [ -n "${failed[g]:-}" ] && emulator_corrupted_cpu "$g"; then
			corrupted+=("guest$g (RFLAGS $bad_rflags)")
		elif [ -n "${failed[g]:-}" ] && [ "${state[g]:-}" != peer-failed ]; then
			retry=
		fi
	done
	if [ -n "$retry" ] && [ $((${#crashed[@]} + ${#corrupted[@]})) -gt 0 ]; then
		retry_why=
		[ ${#crashed[@]} -eq 0 ] ||
			retry_why+="${crashed[*]} crashed (Oops: int3) or hung in the emulator before its script started; "
		[ ${#corrupted[@]} -eq 0 ] ||
			retry_why+="${corrupted[*]} died with CPU state no x86-64 CPU can hold, the emulator's; "
		log "${retry_why}booting again, attempt $((attempt + 1)) of $max_attempts (logs of this one: $out/attempt$attempt-guest<i>)"
		for ((g = 0; g < guests; g++)); do
			mv "$out/guest$g" "$out/attempt$attempt-guest$g"
		done
		exec {outlock}>&-
		[ -n "$portbase" ] && exec {lockfd}>&-
		VMTEST_ATTEMPT=$((attempt + 1)) exec "$0" --out "$out" "${orig_args[@]}"
	fi
fi

verdict=PASS
[ "$overall" -ne 0 ] && verdict=FAIL
boots=
[ "$attempt" -gt 1 ] && boots=", boot attempt $attempt of $max_attempts"
{
	echo "vmtest: $verdict  $(basename "$script") on $kver, $guests guest(s), $planes plane(s), $(elapsed "$start" "$finish")s$boots"
	printf '  %s\n' "${summary[@]}"
	[ "$guests" -ge 2 ] && echo "  host: $(($(host_udp_rcvbuf_errors) - udp_drops_start)) datagrams dropped at full socket buffers during the run (UdpRcvbufErrors)"
	echo "  logs: $out/guest<i>/{console.log,output.log,dmesg.txt}"
} | tee "$out/summary.txt"
exit "$overall"
