#!/usr/bin/env bash
# slurm-up.sh: starts a real Slurm in the two-node pair (scripts/vm/pair.sh), from node 1:
# munged on both nodes with one key, slurmctld and a slurmd on node 1, a slurmd on node 2,
# every daemon as root with its state, spool, logs and key in the guest's own tmpfs
# (/run/wireup-slurm), the configuration in the pair directory (the same path on both nodes).
# Returns once `sinfo` shows both nodes idle (0), or prints ONE line naming what did not come
# up, with the tail of that daemon's log, and returns 1 (within WIREUP_SLURM_UP_S, default 60 s).
# Idempotent: a second call with Slurm already up only checks it. Then, on node 1:
#   . "$WIREUP_VM_PAIR_DIR/slurm/env"       # SLURM_CONF
#   srun --mpi=pmix -N 2 --ntasks-per-node=4 --overcommit wireup_a2a --bootstrap pmix ...
# Slurm 22.05 as Debian 12 packages it (slurmctld, slurmd, slurm-client, munge, and
# libpmix-dev for the PMIx plugin's dlopen): scripts/install-deps.sh.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=${WIREUP_VM_PAIR_DIR:?slurm-up: WIREUP_VM_PAIR_DIR is not set (run on node 1 inside scripts/vm/pair.sh)}
[ "${WIREUP_VM_NODE:-}" = 1 ] || { echo "slurm-up: FAILED: run on node 1 of the pair, not node ${WIREUP_VM_NODE:-?}"; exit 2; }
SSH=${WIREUP_VM_PAIR_SSH:-$HERE/pair-ssh.sh}
UP_S=${WIREUP_SLURM_UP_S:-60}
C=$D/slurm                 # slurm.conf, env (shared)
R=/run/wireup-slurm        # per node, guest tmpfs
N1=wireup-node1 N2=wireup-node2
PLUGINS=/usr/lib/x86_64-linux-gnu/slurm-wlm

fail() { echo "slurm-up: FAILED: $*"; exit 1; }
tail_of() { tr '\n' '|' <<<"$(tail -n "${2:-4}" "$1" 2>/dev/null || echo "(no log at $1)")"; }
tail_on2() { tr '\n' '|' <<<"$("$SSH" 10.0.1.2 "tail -n ${2:-4} $1 2>/dev/null || echo '(no log at $1)'")"; }

for b in munged munge unmunge slurmctld slurmd sinfo srun scontrol; do
  command -v $b >/dev/null || fail "'$b' is not installed (scripts/install-deps.sh installs slurmctld slurmd slurm-client munge)"
done
[ -e $PLUGINS/mpi_pmix.so ] || fail "Slurm's PMIx plugin $PLUGINS/mpi_pmix.so is missing (slurm-wlm-basic-plugins)"
[ -e /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so ] ||
  fail "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so is missing: Slurm's PMIx plugin dlopens it (libpmix-dev)"

both_idle() { [ "$(SLURM_CONF=$C/slurm.conf sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | tr '\n' ' ')" = "$N1 idle $N2 idle " ]; }
if [ -f "$C/env" ] && both_idle; then echo "slurm-up: already up"; exit 0; fi

# --- what runs on each node: the node's hostname resolvable, its munged ---------------------
# The host's /etc/hosts (read-only here) knows neither node: a copy with both lines is
# bind-mounted over it in each guest (a mount of this guest's kernel only). munged reads the
# key from this node's tmpfs and keeps its socket where Slurm's auth_munge looks by default.
node_setup() {
  local r=$1
  set -e
  mkdir -p "$r"/etc "$r"/munge "$r"/log "$r"/ctld "$r"/spool /run/munge
  chmod 700 "$r"/munge
  chmod 755 /run/munge
  # slurmd 22.05 starts its cgroup plugin whatever the proctrack/task plugins: the guest's
  # kernel has cgroup v2, unmounted until here.
  grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
  # Without systemd slurmd makes its scope itself, under a system.slice it expects to find.
  mkdir -p /sys/fs/cgroup/system.slice
  if ! grep -q wireup-node2 /etc/hosts; then
    { cat /etc/hosts; echo "10.0.1.1 wireup-node1"; echo "10.0.1.2 wireup-node2"; } >"$r"/etc/hosts
    mount --bind "$r"/etc/hosts /etc/hosts
  fi
  cat >"$r"/munge/munge.key
  chmod 400 "$r"/munge/munge.key
  [ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null && sleep 0.3
  munged --key-file="$r"/munge/munge.key --seed-file="$r"/munge/seed --log-file="$r"/log/munged.log \
    --pid-file=/run/munge/munged.pid </dev/null >/dev/null 2>&1
}
mkdir -p "$C"
t0=$(date +%s.%N)
key=$(mktemp -p /run)
head -c 1024 /dev/urandom >"$key"
(node_setup $R <"$key") || fail "munged did not start on node 1: $(tail_of $R/log/munged.log)"
"$SSH" 10.0.1.2 "$(declare -f node_setup); node_setup $R" <"$key" ||
  fail "munged did not start on node 2 (ssh exit $?): $(tail_on2 $R/log/munged.log)"
rm -f "$key"
t_munge=$(date +%s.%N)
munge -n </dev/null | unmunge >/dev/null 2>&1 || fail "munge on node 1 does not answer: $(tail_of $R/log/munged.log)"
munge -n </dev/null | "$SSH" 10.0.1.2 unmunge >/dev/null 2>&1 ||
  fail "node 2's munged does not accept node 1's credential (different keys, or not running): $(tail_on2 $R/log/munged.log)"

# --- slurm.conf: both nodes, as root, everything in the guests' tmpfs ------------------------
# No cgroup confinement: processes tracked by /proc (linuxproc), no task binding (task/none).
# Each node offers SLOTS CPUs whatever it has (config_overrides: slurmd reports the configured
# count), so that jobs of 4+ ranks per node fit on the guests' 2 vCPUs as under mpirun
# --oversubscribe.
SLOTS=${WIREUP_SLURM_SLOTS:-8}
cat >"$C/slurm.conf" <<EOF
ClusterName=wireup-pair
SlurmctldHost=$N1(10.0.1.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SwitchType=switch/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$R/ctld
SlurmdSpoolDir=$R/spool
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd.pid
SlurmctldLogFile=$R/log/slurmctld.log
SlurmdLogFile=$R/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdTimeout=30
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
TmpFS=/tmp
NodeName=$N1 NodeAddr=10.0.1.1 CPUs=$SLOTS State=UNKNOWN
NodeName=$N2 NodeAddr=10.0.1.2 CPUs=$SLOTS State=UNKNOWN
PartitionName=pair Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
# cgroup v2 without systemd (no dbus in the guests): slurmd makes its own scope.
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$C/cgroup.conf"
echo "export SLURM_CONF=$C/slurm.conf" >"$C/env"

# --- the daemons ---------------------------------------------------------------------------
export SLURM_CONF=$C/slurm.conf
slurmctld -f "$SLURM_CONF" -c </dev/null >/dev/null 2>&1 || fail "slurmctld did not start on node 1: $(tail_of $R/log/slurmctld.log)"
for _ in $(seq 50); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done
scontrol ping 2>/dev/null | grep -q 'is UP' || fail "slurmctld on node 1 does not answer scontrol ping: $(tail_of $R/log/slurmctld.log)"
t_ctld=$(date +%s.%N)
slurmd -f "$SLURM_CONF" </dev/null >/dev/null 2>&1 || fail "slurmd did not start on node 1: $(tail_of $R/log/slurmd.log)"
"$SSH" 10.0.1.2 "slurmd -f $SLURM_CONF </dev/null >/dev/null 2>&1" ||
  fail "slurmd did not start on node 2: $(tail_on2 $R/log/slurmd.log)"
until both_idle; do
  if (($(date +%s) - ${t0%.*} > UP_S)); then
    st=$(sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' ')
    if ! sinfo -h -N -o '%N %t' 2>/dev/null | grep -q "^$N1 idle"; then
      fail "slurmd on node 1 ($N1) not idle after ${UP_S} s (sinfo: $st): $(tail_of $R/log/slurmd.log)"
    fi
    fail "slurmd on node 2 ($N2) not idle after ${UP_S} s (sinfo: $st): $(tail_on2 $R/log/slurmd.log)"
  fi
  sleep 0.3
done
el() { awk -v a="$t0" -v b="$1" 'BEGIN { printf "%.1f", b - a }'; }
echo "slurm-up: munged x2 up at $(el "$t_munge") s, slurmctld at $(el "$t_ctld") s, $N1 and $N2 idle at" \
     "$(el "$(date +%s.%N)") s (SLURM_CONF=$SLURM_CONF)"
