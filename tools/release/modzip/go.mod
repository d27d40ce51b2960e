module github.com/grpc-ccm/grpc-cloud-controller-manager/tools/release/modzip

go 1.26.0

require golang.org/x/mod v0.42.0
