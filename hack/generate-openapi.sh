#!/usr/bin/env bash
# Writes the served OpenAPI description to api/openapi/v1.json and generates the Go client
# from it (api/client/client.gen.go, oapi-codegen pinned by go.mod's tool directive).
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./hack/openapi -o api/openapi/v1.json
go tool oapi-codegen -config api/client/oapi-codegen.yaml api/openapi/v1.json
