package dev.ccm.example.memjava;

import dev.ccm.provider.sdk.Rpc;
import dev.ccm.provider.v1.InstanceExistsRequest;
import dev.ccm.provider.v1.InstanceExistsResponse;
import dev.ccm.provider.v1.InstanceMetadata;
import dev.ccm.provider.v1.InstanceMetadataRequest;
import dev.ccm.provider.v1.InstanceMetadataResponse;
import dev.ccm.provider.v1.InstanceShutdownRequest;
import dev.ccm.provider.v1.InstanceShutdownResponse;
import dev.ccm.provider.v1.InstancesServiceGrpc;
import io.grpc.stub.StreamObserver;

/** InstancesService: the three InstancesV2 RPCs (no batch, no legacy: the SDK declares no capability for them). */
final class Instances extends InstancesServiceGrpc.InstancesServiceImplBase {
  private final Cloud cloud;

  Instances(Cloud cloud) {
    this.cloud = cloud;
  }

  @Override
  public void instanceExists(InstanceExistsRequest request, StreamObserver<InstanceExistsResponse> out) {
    Rpc.reply(out, () -> {
      synchronized (cloud) {
        return InstanceExistsResponse.newBuilder().setExists(cloud.find(request.getNode()) != null).build();
      }
    });
  }

  @Override
  public void instanceShutdown(InstanceShutdownRequest request, StreamObserver<InstanceShutdownResponse> out) {
    Rpc.reply(out, () -> {
      synchronized (cloud) {
        return InstanceShutdownResponse.newBuilder().setShutdown(cloud.findOrThrow(request.getNode()).shutdown).build();
      }
    });
  }

  @Override
  public void instanceMetadata(InstanceMetadataRequest request, StreamObserver<InstanceMetadataResponse> out) {
    Rpc.reply(out, () -> {
      synchronized (cloud) {
        Cloud.Instance i = cloud.findOrThrow(request.getNode());
        InstanceMetadata md =
            InstanceMetadata.newBuilder()
                .setProviderId(i.providerId())
                .setInstanceType(i.type)
                .addAllNodeAddresses(i.addresses)
                .setZone(i.zone)
                .setRegion(i.region)
                .putAllAdditionalLabels(i.labels)
                .build();
        return InstanceMetadataResponse.newBuilder().setMetadata(md).build();
      }
    });
  }
}
