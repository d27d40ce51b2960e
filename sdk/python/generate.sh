#!/bin/sh
# Regenerates src/ccm (the ccm.provider.v1 and ccm.provider.testing.v1 Python
# modules shipped in the ccm-provider-sdk package) from ../../proto with
# grpcio-tools (requirements-dev.txt).
# Usage: generate.sh [OUT_DIR] (default: src next to this script; only its ccm/ is replaced).
# Only the ccm.* packages are generated: google.rpc comes from the
# googleapis-common-protos package, google.protobuf from protobuf.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/src}
python=${PYTHON:-python3}
rm -rf "$out/ccm" && mkdir -p "$out"
cd "$here/../../proto"
"$python" -m grpc_tools.protoc -I . --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  ccm/provider/v1/*.proto ccm/provider/testing/v1/*.proto
