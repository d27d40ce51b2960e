module ccm.example/provider-go

go 1.26.0

require google.golang.org/grpc v1.85.0

require (
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go v0.0.0
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go => ../../sdk/go
