#!/bin/sh
# Regenerates gen/ from ../../proto with grpcio-tools (requirements-dev.txt).
# Usage: generate.sh [OUT_DIR] (default: gen next to this script).
# Only the ccm.* packages are generated: google.rpc comes from the
# googleapis-common-protos package, google.protobuf from protobuf.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/gen}
python=${PYTHON:-python3}
rm -rf "$out" && mkdir -p "$out"
cd "$here/../../proto"
"$python" -m grpc_tools.protoc -I . --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  ccm/provider/v1/*.proto ccm/provider/testing/v1/*.proto
