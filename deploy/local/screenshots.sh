#!/usr/bin/env bash
# Takes PNG screenshots of the console's main pages into docs/console/, with the headless
# Chromium and chromedriver of the browser tests (installed here as test.sh does): the
# ignored tests `console_browser::screenshots` and `console_browser_audit::screenshots` run
# the real daemon, sign in, make a VM on `local` (the second destroys it, for the audit
# history, the VM as it was and a job's output) and save each page.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "screenshots: $*" >&2; }

source deploy/local/prelude.sh

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if ((${#missing[@]})); then
  command -v apt-get >/dev/null || { log "not found: ${missing[*]}"; exit 1; }
  timed "installing ${missing[*]}" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing[*]}"
fi

export SCREENSHOTS_DIR="$PWD/docs/console"
timed "taking the screenshots" cargo test -p daemon --test it --locked -- \
  --ignored --exact console_browser::screenshots console_browser_audit::screenshots
log "written: $(ls "$SCREENSHOTS_DIR"/*.png | xargs -n1 basename | tr '\n' ' ')"
