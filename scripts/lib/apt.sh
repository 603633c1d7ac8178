# Sourced by every script that runs apt: `source "$ROOT/scripts/lib/apt.sh"`.
#
#   apt_get ARGS...   apt-get ARGS..., non-interactive, that WAITS for another apt or dpkg
#                     process to release its lock instead of failing at once.
#
# apt's own `-o DPkg::Lock::Timeout` waits for the dpkg locks only: `apt-get update` still
# fails at once on /var/lib/apt/lists/lock ("Could not get lock", apt 2.6). So apt_get also
# retries, every 2 s, a run that failed on any lock, until AGENT_BRIDGE_APT_LOCK_WAIT
# seconds (default 900) have passed; any other failure is returned as it is.

apt_get() {
  local wait="${AGENT_BRIDGE_APT_LOCK_WAIT:-900}"
  local deadline=$((SECONDS + wait)) told=0 rc err
  err="$(mktemp)"
  while :; do
    rc=0
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" "$@" 2>"$err" || rc=$?
    if ((rc != 0)) && ((SECONDS < deadline)) \
      && grep -qE 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' "$err"; then
      if ((told == 0)); then
        echo "[apt] another apt or dpkg process holds its lock: waiting (up to ${wait}s)" >&2
        told=1
      fi
      sleep 2
      continue
    fi
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
  done
}
