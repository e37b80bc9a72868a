#!/usr/bin/env bash
# Regenerates CRDs, RBAC, deepcopy, internal/store/schema.sql, the OpenAPI description, the
# Go client and the summarizer's intent classifier, and fails when anything committed was stale.
set -euo pipefail
CONTROLLER_GEN="$1"
cd "$(dirname "$0")/.."
files() { find config/crd/bases config/rbac -name '*.yaml' 2>/dev/null; find api -name 'zz_generated*.go'; printf '%s
' internal/store/schema.sql api/openapi/v1.json api/client/client.gen.go internal/transcription/intent_model.json; }
before="$(files | sort | xargs -r sha256sum)"
"$CONTROLLER_GEN" rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." \
  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
"$CONTROLLER_GEN" object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
go run ./hack/schemadump internal/store/schema.sql
hack/generate-openapi.sh
go generate ./internal/transcription/
after="$(files | sort | xargs -r sha256sum)"
if [[ "$before" != "$after" ]]; then
  echo "Generated files were stale (now regenerated): run 'make manifests generate' and commit the result." >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "generated CRDs, RBAC, deepcopy, schema.sql, OpenAPI description, Go client and summarizer intent classifier are current"
