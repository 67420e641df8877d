#!/bin/sh
# dbrig doctor's collector. It prints the sysfs and /proc files that the
# checks read, as lines dbrig parses into an in-memory tree, so the same
# checks run on a remote host (ssh HOST sh -s < collect.sh) as on this one:
#
#   @dbrig-doctor 1      header: format version
#   @F path              a file; its lines follow, each prefixed with "|"
#   @L path target       a symbolic link and its target
#   @E path              a file that exists but cannot be read
#   @C ethtool IFACE     the output of "ethtool IFACE", lines prefixed with "|"
#   @end                 the collector finished
#
# Paths are relative to the root: DBRIG_ROOT, default /. The script only
# reads; the one program it runs is ethtool, when installed and only on the
# real root. It needs no privileges and works in any POSIX sh (dash, bash,
# busybox): everything but readlink, ethtool and timeout is a shell builtin.
LC_ALL=C
export LC_ALL
root=${DBRIG_ROOT:-/}
cd "$root" || exit 1
echo "@dbrig-doctor 1"

lines() {
	while IFS= read -r line || [ -n "$line" ]; do
		printf '|%s\n' "$line"
	done
}

f() {
	for p do
		[ -f "$p" ] || continue
		if [ -r "$p" ]; then
			printf '@F %s\n' "$p"
			case $p in
			proc/sys/*)
				# A sysctl read at a non-zero offset is empty, and sh's read
				# takes one byte at a time: cat reads the value whole.
				cat "$p" 2>/dev/null | lines ;;
			*) lines <"$p" 2>/dev/null ;;
			esac
		else
			printf '@E %s\n' "$p"
		fi
	done
}

l() {
	for p do
		[ -L "$p" ] && printf '@L %s %s\n' "$p" "$(readlink "$p")"
	done
}

# Block devices and their partitions.
for d in sys/block/*; do
	[ -d "$d" ] || continue
	l "$d"
	f "$d/size" "$d/ro" "$d/removable" "$d/alignment_offset" "$d/dev" \
		"$d/queue/logical_block_size" "$d/queue/physical_block_size" \
		"$d/queue/minimum_io_size" "$d/queue/optimal_io_size" "$d/queue/rotational" \
		"$d/loop/backing_file" "$d/dm/name"
	for p in "$d"/*/partition; do
		[ -f "$p" ] || continue
		p=${p%/partition}
		f "$p/partition" "$p/start" "$p/size" "$p/alignment_offset" "$p/dev"
	done
done

# Network interfaces; ethtool adds autonegotiation and what the link
# partner advertises.
ethtool=
if [ "$root" = / ] && command -v ethtool >/dev/null 2>&1; then
	ethtool=ethtool
	command -v timeout >/dev/null 2>&1 && ethtool="timeout 1 ethtool"
fi
for d in sys/class/net/*; do
	[ -e "$d" ] || continue
	l "$d" "$d/device/driver"
	f "$d/type" "$d/mtu" "$d/carrier" "$d/operstate" "$d/speed" "$d/duplex"
	if [ -n "$ethtool" ] && [ -e "$d/device" ]; then
		printf '@C ethtool %s\n' "${d##*/}"
		$ethtool "${d##*/}" 2>/dev/null | lines
	fi
done

# TCP buffers, window scaling, congestion control, keepalives.
for k in tcp_rmem tcp_wmem tcp_window_scaling tcp_moderate_rcvbuf \
	tcp_congestion_control tcp_keepalive_time tcp_keepalive_intvl tcp_keepalive_probes; do
	f "proc/sys/net/ipv4/$k"
done
f proc/sys/net/core/rmem_max proc/sys/net/core/wmem_max \
	proc/sys/net/core/rmem_default proc/sys/net/core/wmem_default

# Host, CPU, clock, virtualization, mounts, routes.
f proc/sys/kernel/hostname proc/sys/kernel/osrelease proc/cpuinfo proc/meminfo \
	proc/net/route proc/self/mountinfo \
	sys/devices/system/clocksource/clocksource0/current_clocksource \
	sys/devices/system/clocksource/clocksource0/available_clocksource \
	sys/hypervisor/type sys/class/dmi/id/sys_vendor sys/class/dmi/id/product_name \
	sys/devices/system/cpu/cpuidle/current_driver sys/devices/system/cpu/cpuidle/current_governor \
	sys/devices/system/cpu/cpuidle/current_governor_ro sys/module/haltpoll/parameters/guest_halt_poll_ns
for c in sys/devices/system/cpu/cpu[0-9]*; do
	f "$c/cpufreq/scaling_governor" "$c/cpufreq/cpuinfo_max_freq" "$c/cpufreq/scaling_driver"
done
echo "@end"
