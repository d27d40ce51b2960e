"""mempy: an in-memory cloud provider for the grpc cloud-controller-manager."""
