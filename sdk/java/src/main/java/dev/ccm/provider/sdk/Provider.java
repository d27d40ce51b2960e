package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.ClustersServiceGrpc;
import dev.ccm.provider.v1.ConfigureRequest;
import dev.ccm.provider.v1.ConfigureResponse;
import dev.ccm.provider.v1.GetProviderSchemaResponse;
import dev.ccm.provider.v1.InstancesServiceGrpc;
import dev.ccm.provider.v1.LoadBalancersServiceGrpc;
import dev.ccm.provider.v1.RoutesServiceGrpc;
import dev.ccm.provider.v1.VolumesServiceGrpc;
import dev.ccm.provider.v1.ZonesServiceGrpc;

/**
 * A cloud provider, as {@link ProviderServer#serve} serves it. Only
 * {@link #info()} is required. Each service accessor returns the service
 * object (usually a subclass of the generated {@code XServiceImplBase}) or
 * null when the provider does not serve it; the server declares a service for
 * every non-null one and derives the optional capabilities from the RPC
 * methods the object overrides ({@link Capabilities}). Methods it does not
 * override answer UNIMPLEMENTED (the generated default).
 *
 * <p>In an RPC method, answer with {@code responseObserver.onNext(..);
 * onCompleted()}, or {@link Rpc#reply}; fail with an {@link Errors} helper,
 * thrown or passed to {@code onError}: both reach the host with their code and
 * details. Any other exception answers INTERNAL and is logged.
 *
 * <p>Until the first successful {@link #configure}, the server answers every
 * cloud call itself with FAILED_PRECONDITION/NOT_CONFIGURED and Probe with
 * ready=false, so a provider method never runs unconfigured.
 */
public interface Provider {
  /** Name, providerName and the declarations of GetPluginCapabilities; fixed for the life of the process. */
  Info info();

  /**
   * The cloud config (the bytes of the host's --cloud-config), after every
   * (re)start and whenever the host repeats it; throw
   * {@link Errors#invalidArgument} for one that cannot be used (the provider then
   * stays as it was). Success marks the provider configured.
   */
  default ConfigureResponse configure(ConfigureRequest request) {
    return ConfigureResponse.getDefaultInstance();
  }

  /** Readiness once configured (Probe); default true. */
  default boolean probe() {
    return true;
  }

  /**
   * Prometheus text for IdentityService/GetMetrics; overriding it declares
   * CAPABILITY_METRICS.
   */
  default String metrics() {
    throw Errors.notImplemented("this provider exports no metrics");
  }

  /**
   * The Service annotations (and cloud-config keys) the provider reads and the
   * annotation prefixes it owns, for IdentityService/GetProviderSchema
   * (protocol 1.1); overriding it declares CAPABILITY_PROVIDER_SCHEMA. The
   * host checks every Service's annotations against it before each ensure (an
   * unlisted key under an owned prefix, or a value that does not fit, is a
   * Warning event and no cloud call). Build it with {@link Schema}. Must not
   * change during the life of the process; at most 1 MiB encoded.
   */
  default GetProviderSchemaResponse schema() {
    throw Errors.notImplemented("this provider publishes no schema (Provider.schema)");
  }

  /** Once on stop, after in-flight calls ended or the grace period ran out. */
  default void close() {}

  default InstancesServiceGrpc.AsyncService instances() {
    return null;
  }

  default ZonesServiceGrpc.AsyncService zones() {
    return null;
  }

  default ClustersServiceGrpc.AsyncService clusters() {
    return null;
  }

  default LoadBalancersServiceGrpc.AsyncService loadBalancers() {
    return null;
  }

  default RoutesServiceGrpc.AsyncService routes() {
    return null;
  }

  default VolumesServiceGrpc.AsyncService volumes() {
    return null;
  }
}
