#!/usr/bin/env bash
# Fails when a tracked file is an executable binary, or is larger than 1 MB and not on the
# allow-list below. Built things go to the ignored bin/; generated code that is committed
# on purpose is listed here with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
# Committed generated code (regenerated and checked by hack/verify-generated.sh).
allow=(
  api/client/client.gen.go # the Go client generated from api/openapi/v1.json
)
bad=0
while IFS= read -r -d '' f; do
  [[ -f "$f" ]] || continue
  # ELF, Mach-O, PE and the like: any file whose first bytes are a binary executable header.
  magic="$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')"
  case "$magic" in
    7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | cafebabe | 4d5a*)
      echo "tracked executable binary: $f (build into bin/, which is ignored)" >&2
      bad=1
      continue
      ;;
  esac
  size=$(stat -c %s "$f")
  if ((size > limit)); then
    allowed=0
    for a in "${allow[@]}"; do [[ "$f" == "$a" ]] && allowed=1; done
    if ((!allowed)); then
      echo "tracked file over 1 MB: $f ($size bytes); add it to hack/verify-tracked.sh's allow-list with a reason, or stop tracking it" >&2
      bad=1
    fi
  fi
done < <(git ls-files -z)
((bad == 0)) || exit 1
echo "no tracked binaries; no tracked file over 1 MB outside the allow-list"
