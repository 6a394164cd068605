#!/usr/bin/env bash
# shaped-net.sh: run N ranks of a command, each in its own Linux network
# namespace, every pair of namespaces joined by its own rate-shaped full-duplex
# link, so that measured step times can be compared with slowpipe's simulated
# network (docs/netmodel.md, "Topology"; docs/shaped-net.md explains this
# script). Root only.
#
#   scripts/shaped-net.sh --nproc N --rate RATE [--keep] [--port P]
#                         [--fair MODE] -- COMMAND [ARGS...]
#
# Rank i runs in namespace sp<pid>-<i> with RANK=i, LOCAL_RANK=i,
# WORLD_SIZE=N, MASTER_ADDR=<rank 0's address>, MASTER_PORT=P and
# GLOO_SOCKET_IFNAME=sprank. Exit status: the first non-zero rank exit status
# in rank order, else 0; 1 on a set-up failure; 2 on bad arguments.
set -euo pipefail

PROG=${0##*/}
readonly PROG

# Leaf classes of the per-flow fair queue used when the kernel has no fq
# qdisc (power of two; see build_link).
readonly BUCKETS=64
# Largest GSO packet handed to a link's qdisc (bytes; see build_link).
readonly GSO_MAX=16384
# Interface that carries each namespace's rank address.
readonly RANK_IF=sprank

usage() {
  cat <<EOF
Usage: $PROG --nproc N --rate RATE [--keep] [--port P] [--fair MODE] -- COMMAND [ARGS...]

Runs COMMAND once per rank (0..N-1), each rank in its own network namespace
sp<pid>-<rank>. Every pair of namespaces is joined by its own veth pair whose
two directions are each shaped to RATE (htb) with a per-flow fair queue, the
topology slowpipe's network model assumes (docs/netmodel.md): one host per
rank, one full-duplex link per pair of hosts. Must be run as root.

Options:
  --nproc N    number of ranks, 1..64
  --rate RATE  rate of every link direction, in bits per second: a number
               with a decimal prefix and 'bit' or 'bit/s', e.g. 100mbit,
               1gbit, 2.5Gbit/s, 500kbit (1 Mbit/s .. 100 Gbit/s). Byte
               rates ('mbps' means megabytes per second to tc and megabits
               per second to slowpipe) are refused to avoid the ambiguity.
  --port P     MASTER_PORT given to the ranks (default 29500)
  --fair MODE  queue inside each link direction: auto (default: fq if the
               kernel has it, else buckets), fq (htb class + fq child),
               buckets ($BUCKETS htb leaf classes picked by a hash of the TCP/UDP
               ports, each a FIFO, served round-robin), fifo (one FIFO;
               for comparisons only: flows do not share fairly)
  --keep       leave the namespaces in place on exit (prints how to remove them)
  -h, --help   show this help

Environment of each rank: RANK=i LOCAL_RANK=i WORLD_SIZE=N
MASTER_ADDR=<rank 0's address> MASTER_PORT=P GLOO_SOCKET_IFNAME=$RANK_IF.
The literal string {rank} in any ARG is replaced by the rank number.
Each rank's stdout and stderr lines are prefixed with '[rank i] '.

Exit status: the first non-zero rank exit status in rank order, else 0;
1 when not root, a kernel feature is missing or the set-up fails; 2 on bad
arguments; 128+n when stopped by signal n (the ranks are killed).

Example:
  sudo $PROG --nproc 4 --rate 100mbit -- slowpipe train --out run-{rank}.h5
EOF
}

die() {
  echo "$PROG: error: $*" >&2
  exit 1
}

bad_usage() {
  echo "$PROG: $*" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}

# ---------------------------------------------------------------- arguments
NPROC=
RATE_ARG=
PORT=29500
KEEP=0
FAIR=auto
while (($# > 0)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --nproc | --rate | --port | --fair)
      (($# >= 2)) || bad_usage "option $1 needs a value"
      case $1 in
        --nproc) NPROC=$2 ;;
        --rate) RATE_ARG=$2 ;;
        --port) PORT=$2 ;;
        --fair) FAIR=$2 ;;
      esac
      shift 2
      ;;
    --nproc=*) NPROC=${1#*=} && shift ;;
    --rate=*) RATE_ARG=${1#*=} && shift ;;
    --port=*) PORT=${1#*=} && shift ;;
    --fair=*) FAIR=${1#*=} && shift ;;
    --keep)
      KEEP=1
      shift
      ;;
    --)
      shift
      break
      ;;
    *) bad_usage "unexpected argument '$1' (the command goes after '--')" ;;
  esac
done
CMD=("$@")

[[ -n $NPROC ]] || bad_usage "--nproc is required"
[[ -n $RATE_ARG ]] || bad_usage "--rate is required"
((${#CMD[@]} > 0)) || bad_usage "no command given after '--'"
if ! [[ $NPROC =~ ^[0-9]+$ ]] || ((10#$NPROC < 1 || 10#$NPROC > 64)); then
  bad_usage "--nproc must be an integer from 1 to 64, got '$NPROC'"
fi
NPROC=$((10#$NPROC))
if ! [[ $PORT =~ ^[0-9]+$ ]] || ((10#$PORT < 1 || 10#$PORT > 65535)); then
  bad_usage "--port must be an integer from 1 to 65535, got '$PORT'"
fi
PORT=$((10#$PORT))
case $FAIR in
  auto | fq | buckets | fifo) ;;
  *) bad_usage "--fair must be auto, fq, buckets or fifo, got '$FAIR'" ;;
esac

# RATE -> integer bits per second. Decimal prefixes (k = 1000), as tc and
# slowpipe both use them.
parse_rate() {
  local s=$1 num pfx mult
  if [[ $s =~ ^([0-9]+(\.[0-9]+)?)([kKmMgGtT]?)(bit|bit/s)$ ]]; then
    num=${BASH_REMATCH[1]}
    pfx=${BASH_REMATCH[3],,}
  else
    return 1
  fi
  case $pfx in
    '') mult=1 ;;
    k) mult=1e3 ;;
    m) mult=1e6 ;;
    g) mult=1e9 ;;
    t) mult=1e12 ;;
  esac
  awk -v n="$num" -v m="$mult" 'BEGIN { printf "%.0f\n", n * m }'
}
RATE_BPS=$(parse_rate "$RATE_ARG") ||
  bad_usage "--rate '$RATE_ARG' is not a bit rate (examples: 100mbit, 1gbit, 2.5Gbit/s)"
((RATE_BPS >= 1000000 && RATE_BPS <= 100000000000)) ||
  bad_usage "--rate must be between 1mbit and 100gbit, got '$RATE_ARG'"

# The same rate written the way slowpipe's net.bandwidth reads it.
slowpipe_rate() {
  local b=$1
  if ((b % 1000000000 == 0)); then
    echo "$((b / 1000000000))Gbps"
  elif ((b % 1000000 == 0)); then
    echo "$((b / 1000000))Mbps"
  elif ((b % 1000 == 0)); then
    echo "$((b / 1000))Kbps"
  else
    echo "${b}bps"
  fi
}

# ------------------------------------------------------------ preconditions
((EUID == 0)) || die "must be run as root (network namespaces, veth and tc need CAP_NET_ADMIN)"
for tool in ip tc awk sed timeout; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found in PATH"
done

# Subnet 10.X.0.0/24 for the rank addresses: the first X whose /24 neither
# overlaps a route of this host nor lies inside one (the default route aside).
# The namespaces cannot reach the host's networks anyway; this only keeps the
# addresses unambiguous for whoever reads them.
pick_subnet() {
  local x
  for x in $(seq 213 254) $(seq 16 212); do
    if [[ -z $(ip -4 route show table all match "10.$x.0.0/24" | grep -v '^default' || true) &&
      -z $(ip -4 route show table all root "10.$x.0.0/24" || true) ]]; then
      echo "$x"
      return 0
    fi
  done
  return 1
}
SUBNET_X=$(pick_subnet) || die "no free 10.X.0.0/24 subnet for the rank addresses"

NS=()
ADDR=()
for ((i = 0; i < NPROC; i++)); do
  NS[i]="sp$$-$i"
  ADDR[i]="10.$SUBNET_X.0.$((i + 1))"
done

# ------------------------------------------------------ teardown and signals
CREATED=()    # namespaces this invocation created
RANK_PIDS=()  # background rank launchers

# The next three functions run from traps (shellcheck cannot see that).
# shellcheck disable=SC2317
# Kill every process left inside our namespaces (the ranks and anything they
# started), TERM first, KILL after a grace period.
kill_ns_procs() {
  local ns pids=() p t
  for ns in "${CREATED[@]}"; do
    while read -r p; do
      [[ -n $p ]] && pids+=("$p")
    done < <(ip netns pids "$ns" 2>/dev/null || true)
  done
  ((${#pids[@]} > 0)) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((t = 0; t < 30; t++)); do
    local alive=0
    for p in "${pids[@]}"; do
      kill -0 "$p" 2>/dev/null && alive=1
    done
    ((alive)) || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# shellcheck disable=SC2317
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if ((KEEP)); then
    if ((${#CREATED[@]} > 0)); then
      echo "$PROG: --keep: namespaces left in place: ${CREATED[*]}" >&2
      echo "$PROG: remove them with: for n in ${CREATED[*]}; do ip netns del \$n; done" >&2
    fi
    exit "$rc"
  fi
  kill_ns_procs
  local ns
  for ns in "${CREATED[@]}"; do
    ip netns del "$ns" 2>/dev/null || echo "$PROG: warning: could not delete namespace $ns" >&2
  done
  exit "$rc"
}
trap cleanup EXIT

# shellcheck disable=SC2317
on_signal() {
  local sig=$1 num=$2
  trap '' INT TERM
  echo "$PROG: caught SIG$sig, stopping the ranks" >&2
  if ((${#RANK_PIDS[@]} > 0)); then
    kill_ns_procs
    kill -TERM "${RANK_PIDS[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  exit $((128 + num))
}
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM

# ------------------------------------------------------------------- set-up
for ((i = 0; i < NPROC; i++)); do
  if ip netns list | awk '{print $1}' | grep -qx "${NS[i]}"; then
    die "namespace ${NS[i]} already exists (left by an earlier run with --keep?)"
  fi
  ip netns add "${NS[i]}" || die "cannot create network namespace ${NS[i]}"
  CREATED+=("${NS[i]}")
done
NS0=${NS[0]}

# Kernel features, probed on the loopback device of the first namespace.
probe_qdisc() { # KIND [ARGS...]
  if tc -n "$NS0" qdisc add dev lo root handle 1: "$@" 2>/dev/null; then
    tc -n "$NS0" qdisc del dev lo root 2>/dev/null || true
    return 0
  fi
  return 1
}
probe_qdisc htb || die "the kernel has no htb qdisc (CONFIG_NET_SCH_HTB): cannot shape the links"
HAVE_FQ=0
probe_qdisc fq && HAVE_FQ=1
case $FAIR in
  auto) if ((HAVE_FQ)); then FAIR=fq; else FAIR=buckets; fi ;;
  fq) ((HAVE_FQ)) || die "--fair fq: the kernel has no fq qdisc (CONFIG_NET_SCH_FQ); try --fair buckets" ;;
esac

# Rank-address device: a dummy interface if the kernel has one, else an ifb
# (equally inert: it never receives or sends anything here).
RANK_KIND=
for kind in dummy ifb; do
  if ip -n "$NS0" link add "$RANK_IF" type "$kind" 2>/dev/null; then
    ip -n "$NS0" link del "$RANK_IF"
    RANK_KIND=$kind
    break
  fi
done
[[ -n $RANK_KIND ]] || die "the kernel has neither dummy nor ifb interfaces (CONFIG_DUMMY, CONFIG_IFB) for the rank addresses"

# Per namespace: lo up, IPv6 off (keeps the links silent and leaves the rank
# device with its IPv4 address only, which is what Gloo picks), no TCP metrics
# cache (every connection starts from the same state), rank device + address.
for ((i = 0; i < NPROC; i++)); do
  ns=${NS[i]}
  # shellcheck disable=SC2016  # expanded by the inner sh
  ip netns exec "$ns" sh -c '
    for f in /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/default/disable_ipv6; do
      [ -w "$f" ] && echo 1 > "$f"
    done
    echo 1 > /proc/sys/net/ipv4/tcp_no_metrics_save' ||
    die "cannot set the sysctls of namespace $ns"
  ip -n "$ns" -batch - <<EOF || die "cannot configure the rank device of namespace $ns"
link set lo up
link add $RANK_IF type $RANK_KIND
addr add ${ADDR[i]}/32 dev $RANK_IF
link set $RANK_IF up
EOF
done

# Burst: how many bytes a class may send back to back once it has been idle
# or served late. HTB refills its tokens when it is dequeued; if the dequeue
# runs late (timer slack, softirq latency: tens to a few hundred microseconds
# on a loaded VM), the tokens of the delay are lost unless the burst holds
# them. tc's default (one MTU, ~1600 B) is 13 us at 1 Gbit/s and measured
# 13-17% below rate there; a burst worth 250 us of the rate measured on rate
# from 100 Mbit/s to 1 Gbit/s. The price: a transfer starting on an idle link
# gets its first 250 us worth at line speed, i.e. finishes at most 0.25 ms
# early (0.1% of a 25 MiB transfer at 1 Gbit/s). The floor of two full frames
# matters below ~100 Mbit/s, where 250 us is less than one frame.
BURST=$((RATE_BPS * 250 / 8000000))
((BURST >= 3028)) || BURST=3028
# Quantum: the bytes a leaf class may send per round of HTB's round robin.
# HTB serves at least one packet per turn, so sharing is fair in bytes only
# when the quantum is at least the largest packet: with GSO limited to
# GSO_MAX bytes (plus the headers of up to ~12 segments that qdisc_pkt_len
# adds back), 18000 B. It is also what a single class is given, so that tc
# does not derive (and warn about) rate/r2q.
QUANTUM=18000
LEAF_RATE=$((RATE_BPS / BUCKETS))
((LEAF_RATE >= 1)) || LEAF_RATE=1

# Classic BPF classifier for the buckets mode, run on every packet at the
# egress of a link end (offset 0 = Ethernet header). IPv4 TCP/UDP packets
# that are not non-first fragments go to leaf 1:(0x100 + ((sport ^ dport) &
# (BUCKETS-1))); everything else (ARP) to leaf 1:100. The xor is symmetric,
# so a connection's data and its ACKs use the same bucket in both directions;
# connections to one server port differ in their client port, and ports that
# differ by less than BUCKETS (successive ephemeral ports) never collide.
#   0 ldh [12]               ethertype
#   1 jeq #0x800 ? 2 : 16
#   2 ldh [20]               flags + fragment offset
#   3 jset #0x1fff ? 16 : 4
#   4 ldb [23]               protocol
#   5 jeq #6 ? 7 : 6
#   6 jeq #17 ? 7 : 16
#   7 ldxb 4*([14]&0xf)      IP header length
#   8 ldh [x+14]             source port
#   9 st M[0]
#  10 ldh [x+16]             destination port
#  11 ldx M[0]
#  12 xor x
#  13 and #(BUCKETS-1)
#  14 add #0x10100           classid 1:100 + bucket
#  15 ret a
#  16 ret #0x10100
bpf_prog() {
  local base=$((0x10100))
  echo "17,40 0 0 12,21 0 14 2048,40 0 0 20,69 12 0 8191,48 0 0 23,21 1 0 6,21 0 9 17,177 0 0 14,72 0 0 14,2 0 0 0,72 0 0 16,97 0 0 0,172 0 0 0,84 0 0 $((BUCKETS - 1)),4 0 0 $base,22 0 0 0,6 0 0 $base"
}

# tc batch commands shaping the egress of one link end DEV:
#   root htb 1: -> class 1:1 (rate = ceil = RATE) -> per-flow fair queue
build_link() {
  local dev=$1 k minor
  local cls="htb rate ${RATE_BPS}bit ceil ${RATE_BPS}bit burst $BURST cburst $BURST quantum $QUANTUM"
  case $FAIR in
    fq)
      echo "qdisc add dev $dev root handle 1: htb default 1"
      echo "class add dev $dev parent 1: classid 1:1 $cls"
      echo "qdisc add dev $dev parent 1:1 handle 10: fq"
      ;;
    fifo)
      echo "qdisc add dev $dev root handle 1: htb default 1"
      echo "class add dev $dev parent 1: classid 1:1 $cls"
      echo "qdisc add dev $dev parent 1:1 handle 10: pfifo limit 1000"
      ;;
    buckets)
      # BUCKETS leaves under 1:1, each guaranteed RATE/BUCKETS and allowed
      # to borrow up to RATE: the active leaves split 1:1's rate round-robin,
      # QUANTUM bytes a turn, i.e. max-min fairly among buckets.
      echo "qdisc add dev $dev root handle 1: htb default 100"
      echo "class add dev $dev parent 1: classid 1:1 $cls"
      for ((k = 0; k < BUCKETS; k++)); do
        minor=$(printf '%x' $((0x100 + k)))
        echo "class add dev $dev parent 1:1 classid 1:$minor htb rate ${LEAF_RATE}bit ceil ${RATE_BPS}bit burst $BURST cburst $BURST quantum $QUANTUM prio 0"
        echo "qdisc add dev $dev parent 1:$minor handle $minor: pfifo limit 1000"
      done
      echo "filter add dev $dev parent 1: protocol all prio 1 bpf bytecode \"$(bpf_prog)\""
      ;;
  esac
}

fair_needs() {
  case $FAIR in
    fq) echo " and fq" ;;
    buckets) echo ", pfifo and the bpf classifier (CONFIG_NET_CLS_BPF)" ;;
    fifo) echo " and pfifo" ;;
  esac
}

# One veth pair per pair of namespaces: end peer<j> in namespace i leads to
# namespace j. Both ends are created directly inside their namespaces, so the
# names cannot clash with another invocation.
NPAIRS=$((NPROC * (NPROC - 1) / 2))
if ((NPAIRS > 0)); then
  for ((i = 0; i < NPROC; i++)); do
    for ((j = i + 1; j < NPROC; j++)); do
      echo "link add peer$j netns ${NS[i]} type veth peer name peer$i netns ${NS[j]}"
    done
  done | ip -batch - || die "cannot create the veth pairs (CONFIG_VETH?)"
fi

# Each end: up, GSO packets limited to GSO_MAX bytes (finer interleaving of
# flows; see QUANTUM), unnumbered, with a host route to the peer's rank
# address. The route carries 'src' so that connections leave from the rank
# address; the peer answers ARP for its rank address on the veth (the kernel
# answers for any local address by default), so no per-link subnet is needed.
for ((i = 0; i < NPROC && NPROC > 1; i++)); do
  ns=${NS[i]}
  for ((j = 0; j < NPROC; j++)); do
    ((j != i)) || continue
    echo "link set peer$j gso_max_size $GSO_MAX"
    echo "link set peer$j up"
    echo "route add ${ADDR[j]}/32 dev peer$j src ${ADDR[i]}"
  done | ip -n "$ns" -batch - || die "cannot configure the links of namespace $ns"
  for ((j = 0; j < NPROC; j++)); do
    ((j != i)) || continue
    build_link "peer$j"
  done | tc -n "$ns" -batch - ||
    die "cannot install the qdiscs of namespace $ns (--fair $FAIR needs htb$(fair_needs))"
done

case $FAIR in
  fq) QDESC="htb (rate=ceil=$RATE_ARG, burst ${BURST}B) + fq per-flow fair queue" ;;
  buckets) QDESC="htb (rate=ceil=$RATE_ARG, burst ${BURST}B) + $BUCKETS port-hashed htb leaves (round-robin, quantum ${QUANTUM}B) as per-flow fair queue$( ((HAVE_FQ)) || echo ' [no fq in this kernel]')" ;;
  fifo) QDESC="htb (rate=ceil=$RATE_ARG, burst ${BURST}B) + one pfifo (NOT per-flow fair)" ;;
esac
echo "$PROG: $NPROC ranks in namespaces ${NS[0]}..${NS[NPROC - 1]}, $NPAIRS veth pairs (one full-duplex link per rank pair), each direction $RATE_ARG = ${RATE_BPS} bit/s: $QDESC; rank addresses ${ADDR[0]}..${ADDR[NPROC - 1]} on $RANK_IF ($RANK_KIND); MASTER=${ADDR[0]}:$PORT; slowpipe: net.bandwidth=$(slowpipe_rate "$RATE_BPS") net.efficiency=0.9564 net.stages_per_host=1" >&2

# ------------------------------------------------------------ verification
# 1. Every namespace routes every other rank address over that pair's veth,
#    from its own rank address.
for ((i = 0; i < NPROC; i++)); do
  for ((j = 0; j < NPROC; j++)); do
    ((j != i)) || continue
    got=$(ip -n "${NS[i]}" -o route get "${ADDR[j]}")
    [[ $got == *" dev peer$j "* && $got == *" src ${ADDR[i]} "* ]] ||
      die "namespace ${NS[i]} routes ${ADDR[j]} wrongly: $got"
  done
done

# TX packet counts of every veth end of a namespace: "name count" lines.
tx_counts() {
  ip -n "$1" -s link show type veth | awk '
    /^[0-9]+:/ { name = $2; sub(/@.*/, "", name); sub(/:$/, "", name) }
    /TX:/ { getline; print name, $2 }'
}

# 2. A TCP connection attempt from every rank to every higher rank (port 9,
#    where nothing listens: the SYN goes one way, the reset comes back) must
#    be answered, and every veth end must have carried packets.
if ((NPROC > 1)); then
  declare -A TX_BEFORE=()
  for ((i = 0; i < NPROC; i++)); do
    while read -r dev n; do TX_BEFORE["$i/$dev"]=$n; done < <(tx_counts "${NS[i]}")
  done
  for ((i = 0; i < NPROC; i++)); do
    for ((j = i + 1; j < NPROC; j++)); do
      # shellcheck disable=SC2016  # expanded by the inner bash
      if out=$(ip netns exec "${NS[i]}" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/9"' "${ADDR[j]}" 2>&1); then
        :
      elif [[ $out != *refused* ]]; then
        die "rank $i cannot reach rank $j (${ADDR[j]}) over its link: ${out:-timed out}"
      fi
    done
  done
  for ((i = 0; i < NPROC; i++)); do
    while read -r dev n; do
      ((n > ${TX_BEFORE["$i/$dev"]:-0})) ||
        die "link end $dev of namespace ${NS[i]} carried no packet during the connectivity check"
    done < <(tx_counts "${NS[i]}")
  done
  echo "$PROG: checked: every rank routes every other rank over its own link, and every link direction carries traffic" >&2
fi

# --------------------------------------------------------------------- ranks
prefix() { sed -u "s/^/$1/"; }

run_rank() {
  local i=$1 a pfx="[rank $1] "
  local argv=()
  for a in "${CMD[@]}"; do argv+=("${a//"{rank}"/$i}"); done
  set +e
  {
    ip netns exec "${NS[i]}" env RANK="$i" LOCAL_RANK="$i" WORLD_SIZE="$NPROC" \
      MASTER_ADDR="${ADDR[0]}" MASTER_PORT="$PORT" GLOO_SOCKET_IFNAME="$RANK_IF" \
      "${argv[@]}" 2>&1 1>&3 3>&- | prefix "$pfx" >&2 3>&-
    exit "${PIPESTATUS[0]}"
  } 3>&1 | prefix "$pfx"
  exit "${PIPESTATUS[0]}"
}

for ((i = 0; i < NPROC; i++)); do
  run_rank "$i" &
  RANK_PIDS[i]=$!
done

STATUS=0
for ((i = 0; i < NPROC; i++)); do
  rc=0
  wait "${RANK_PIDS[i]}" || rc=$?
  if ((rc != 0)); then
    echo "$PROG: rank $i exited with status $rc" >&2
    ((STATUS != 0)) || STATUS=$rc
  fi
done
exit "$STATUS"
