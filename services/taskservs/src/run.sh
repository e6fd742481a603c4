#!/bin/bash
# Installs this VM's taskservs in plan order; written by cloud-init, run at first boot.
# Running it again is safe: a taskserv whose health check passed in an earlier run is
# skipped, and the install scripts themselves change nothing the second time.
# The callback URLs carry tokens: they are never printed, and reach curl on its standard
# input (not its command line, which ps shows).
set -uo pipefail
# Install scripts get the usual umask (services read the files they write); the files
# run.sh keeps (logs, outputs) are made private by `private`.
umask 022

base=/var/lib/provisioning/taskservs
exec 9>"$base/run.lock"
if ! flock -n 9; then
  echo "taskservs: another run is in progress" >&2
  exit 0
fi
failed_any=0

# private FILE: empties FILE, made readable by root only when new.
private() {
  (umask 077 && : >"$1")
}

# post CALLBACK_URL [CURL_FORM_ARGS...]: reports to a callback; nothing when it is empty.
post() {
  local callback_url="$1"
  shift
  [ -n "$callback_url" ] || return 0
  if ! printf 'url = "%s"\n' "$callback_url" |
    curl -fsS --retry 5 -X POST -K - -o /dev/null "$@" 2>/dev/null; then
    echo "taskservs: a report could not be sent" >&2
  fi
}

# run_step NAME ON_ERROR MAX_RETRIES HEALTH_TIMEOUT STARTED_URL INSTALLED_URL FAILED_URL
# Fails when the plan must stop.
run_step() {
  local name="$1" on_error="$2" max_retries="$3" health_timeout="$4"
  local started_url="$5" installed_url="$6" failed_url="$7"
  local dir="$base/$name"
  local log="$dir/install.log" outputs="$dir/outputs"
  if [ -e "$dir/installed" ]; then
    echo "taskservs: $name was installed by an earlier run"
    return 0
  fi
  post "$started_url"
  private "$log"
  local attempts=1 attempt=1 code=0 deadline
  if [ "$on_error" = retry ]; then
    attempts=$((max_retries + 1))
  fi
  while :; do
    private "$outputs"
    echo "taskservs: installing $name (attempt $attempt of $attempts)" | tee -a "$log"
    TASKSERV_OUTPUTS="$outputs" bash "$dir/install.sh" </dev/null 2>&1 | tee -a "$log"
    code=${PIPESTATUS[0]}
    if [ "$code" -eq 0 ]; then
      deadline=$((SECONDS + health_timeout))
      until timeout "$health_timeout" bash "$dir/health.sh" </dev/null >>"$log" 2>&1; do
        code=$?
        if [ "$SECONDS" -ge "$deadline" ]; then
          echo "taskservs: $name is not healthy after ${health_timeout}s" | tee -a "$log"
          break
        fi
        code=0
        sleep 2
      done
    fi
    if [ "$code" -eq 0 ] || [ "$attempt" -ge "$attempts" ]; then
      break
    fi
    attempt=$((attempt + 1))
    sleep 10
  done
  if [ "$code" -eq 0 ]; then
    touch "$dir/installed"
    post "$installed_url" --data-urlencode "outputs@$outputs"
    echo "taskservs: $name installed"
    return 0
  fi
  failed_any=1
  private "$dir/last_lines"
  tail -n 20 "$log" >"$dir/last_lines"
  post "$failed_url" --data-urlencode "exit_code=$code" \
    --data-urlencode "last_lines@$dir/last_lines"
  echo "taskservs: $name failed with exit code $code" >&2
  [ "$on_error" = continue ]
}

