package main

// The schema the bridged AWS provider publishes (bridge.Options.Schema,
// IdentityService.GetProviderSchema): the Service annotations
// k8s.io/cloud-provider-aws reads for its classic ELBs and NLBs, as its docs
// (docs/service_controller.md) and the constants of pkg/providers/v1 name
// them, and the main keys of its cloud config. The host checks the values of
// these keys before a cloud call.
//
// The prefix "service.beta.kubernetes.io/aws-load-balancer-" is not declared
// owned (so the host does not refuse an unlisted key under it as a
// misspelling): the AWS Load Balancer Controller reads its own keys under the
// same prefix (aws-load-balancer-nlb-target-type, -scheme, -attributes,
// -listener-attributes.<protocol>-<port>, ...), on Services it serves
// (aws-load-balancer-type: external or nlb-ip, which this provider answers
// ImplementedElsewhere) and on Services left over from a switch. Owning the
// prefix made the host refuse such a Service with a Warning and a status
// condition, where upstream says nothing (docs/providers/aws.md).
//
// Types are as lenient as upstream where upstream accepts more than its docs
// say (e.g. aws-load-balancer-internal: any value but "false" means
// internal), so the host never refuses a Service upstream would serve.
// Ranges AWS enforces (e.g. healthy threshold 2-10) are in the descriptions:
// the schema has no range type. Keep in step with the module version in
// go.mod when it moves.

import (
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

// awsAnnotationPrefix is the prefix of every key of the table; shared with the AWS Load Balancer Controller, so not owned.
const awsAnnotationPrefix = "service.beta.kubernetes.io/aws-load-balancer-"

// awsAnnotation is one row of the table: the key's suffix after the prefix.
type awsAnnotation struct {
	suffix      string
	typ         pb.SchemaValueType
	allowed     []string
	anyCase     bool
	pattern     string
	def         string
	description string
}

const (
	tString   = pb.SchemaValueType_SCHEMA_VALUE_TYPE_STRING
	tBool     = pb.SchemaValueType_SCHEMA_VALUE_TYPE_BOOL
	tInt      = pb.SchemaValueType_SCHEMA_VALUE_TYPE_INT
	tEnum     = pb.SchemaValueType_SCHEMA_VALUE_TYPE_ENUM
	tList     = pb.SchemaValueType_SCHEMA_VALUE_TYPE_STRING_LIST
	tKeyValue = pb.SchemaValueType_SCHEMA_VALUE_TYPE_KEY_VALUE_LIST
)

// awsAnnotations, sorted by key.
var awsAnnotations = []awsAnnotation{
	{suffix: "access-log-emit-interval", typ: tEnum, allowed: []string{"5", "60"},
		description: "Classic ELB: minutes between access log deliveries."},
	{suffix: "access-log-enabled", typ: tBool, def: "false",
		description: "Classic ELB: whether access logs are written to S3."},
	{suffix: "access-log-s3-bucket-name", typ: tString,
		description: "Classic ELB: the S3 bucket access logs go to."},
	{suffix: "access-log-s3-bucket-prefix", typ: tString,
		description: "Classic ELB: the key prefix of access logs in the bucket."},
	{suffix: "additional-resource-tags", typ: tList, pattern: `[^=]+(=.*)?`,
		description: "Extra tags for the load balancer (and its security group), as Key=Value items; a Key alone is a tag with an empty value."},
	{suffix: "backend-protocol", typ: tEnum, allowed: []string{"http", "https", "ssl", "tcp"}, anyCase: true,
		description: "Classic ELB: what the backends speak. http/https make HTTP(S) listeners that parse requests; ssl/tcp make raw listeners. Without it, TCP."},
	{suffix: "connection-draining-enabled", typ: tBool, def: "false",
		description: "Classic ELB: whether deregistered instances drain their connections first."},
	{suffix: "connection-draining-timeout", typ: tInt, def: "300",
		description: "Classic ELB: seconds (1-3600) connections of a deregistered instance may last."},
	{suffix: "connection-idle-timeout", typ: tInt, def: "60",
		description: "Classic ELB: seconds (1-4000) an idle connection stays open."},
	{suffix: "cross-zone-load-balancing-enabled", typ: tBool, def: "false",
		description: "Whether each load balancer node spreads traffic over the instances of every zone, not only its own."},
	{suffix: "eip-allocations", typ: tList, pattern: `eipalloc-[0-9a-z]+`,
		description: "NLB: Elastic IP allocation IDs, one per subnet of the load balancer, for its public addresses."},
	{suffix: "extra-security-groups", typ: tList,
		description: "Security group IDs added to the load balancer beside the one the provider manages."},
	{suffix: "healthcheck-healthy-threshold", typ: tInt,
		description: "Consecutive successful checks (2-10) before a backend counts as healthy; for an NLB it must equal the unhealthy threshold."},
	{suffix: "healthcheck-interval", typ: tInt, def: "30",
		description: "Seconds (5-300) between health checks."},
	{suffix: "healthcheck-path", typ: tString, def: "/",
		description: "NLB: the request path of an HTTP or HTTPS health check."},
	{suffix: "healthcheck-port", typ: tString, pattern: `traffic-port|[0-9]+`, def: "traffic-port",
		description: "NLB: the port health checks go to, a number or traffic-port (the node port of the traffic)."},
	{suffix: "healthcheck-protocol", typ: tEnum, allowed: []string{"TCP", "HTTP", "HTTPS"}, anyCase: true, def: "TCP",
		description: "NLB: the protocol of the health checks."},
	{suffix: "healthcheck-timeout", typ: tInt, def: "5",
		description: "Seconds (2-60) to wait for a health check's answer."},
	{suffix: "healthcheck-unhealthy-threshold", typ: tInt, def: "2",
		description: "Consecutive failed checks (2-10) before a backend counts as unhealthy."},
	{suffix: "internal", typ: tString, def: "false",
		description: "Makes the load balancer internal (no public address): any value but false does, true is the documented one."},
	{suffix: "proxy-protocol", typ: tEnum, allowed: []string{"*"},
		description: "Classic ELB: enables the PROXY protocol towards every backend (* is the only value)."},
	{suffix: "security-groups", typ: tList,
		description: "Security group IDs that replace the one the provider would create for the load balancer."},
	{suffix: "ssl-cert", typ: tString, pattern: `arn:.+`,
		description: "Classic ELB: the ARN of an ACM or IAM certificate; the listeners of ssl-ports then terminate TLS."},
	{suffix: "ssl-negotiation-policy", typ: tString, def: "ELBSecurityPolicy-2016-08",
		description: "Classic ELB: the name of a predefined TLS negotiation policy for the secure listeners."},
	{suffix: "ssl-ports", typ: tList, def: "*",
		description: "Classic ELB: the Service ports (numbers or names; * for all) whose listeners use ssl-cert."},
	{suffix: "subnets", typ: tList,
		description: "Subnet IDs or Name tags to place the load balancer in, instead of the subnets the provider discovers."},
	{suffix: "target-group-attributes", typ: tKeyValue,
		description: "NLB: target group attributes as key=value items, e.g. preserve_client_ip.enabled=true."},
	{suffix: "target-node-labels", typ: tKeyValue,
		description: "Only Nodes with all of these labels (key=value items) become backends."},
	{suffix: "type", typ: tEnum, allowed: []string{"nlb", "nlb-ip", "external"},
		description: "nlb makes a Network Load Balancer; nlb-ip and external leave the Service to the AWS Load Balancer Controller. Without it, a classic ELB."},
}

// awsConfigKey is one cloud-config key of the [Global] section.
type awsConfigKey struct {
	key, def, description string
	typ                   pb.SchemaValueType
	deprecated            bool
	replacement           string
}

var awsConfigKeys = []awsConfigKey{
	{key: "Zone", typ: tString, description: "The availability zone the provider assumes when the instance metadata service is not asked."},
	{key: "Region", typ: tString, description: "The AWS region."},
	{key: "VPC", typ: tString, description: "The VPC of the cluster, for a provider that does not run on an instance of it (requires KubernetesClusterID)."},
	{key: "SubnetID", typ: tString, description: "The subnet to use when the provider does not run on an instance of the VPC."},
	{key: "RouteTableID", typ: tString, description: "The route table for pod routes, instead of discovering it by cluster tag."},
	{key: "RoleARN", typ: tString, description: "An IAM role the provider assumes for its AWS calls."},
	{key: "SourceARN", typ: tString, description: "The source ARN passed when assuming RoleARN (confused-deputy protection)."},
	{key: "KubernetesClusterTag", typ: tString, deprecated: true, replacement: "KubernetesClusterID",
		description: "The legacy form of the cluster ID that tags the cluster's resources."},
	{key: "KubernetesClusterID", typ: tString, description: "The cluster ID that tags the cluster's AWS resources."},
	{key: "DisableSecurityGroupIngress", typ: tBool, def: "false", description: "Do not add an ingress rule per load balancer to the nodes' security group."},
	{key: "ElbSecurityGroup", typ: tString, description: "One security group every classic ELB uses, instead of one per ELB."},
	{key: "NodeIPFamilies", typ: tList, description: "Which address families (ipv4, ipv6) Node addresses carry, in order."},
}

// awsSchema builds the GetProviderSchema answer from the tables.
func awsSchema() *pb.GetProviderSchemaResponse {
	s := &pb.GetProviderSchemaResponse{}
	for _, a := range awsAnnotations {
		s.Annotations = append(s.Annotations, &pb.SchemaAnnotation{
			Key:             awsAnnotationPrefix + a.suffix,
			ObjectKind:      pb.SchemaObjectKind_SCHEMA_OBJECT_KIND_SERVICE,
			Type:            a.typ,
			AllowedValues:   a.allowed,
			CaseInsensitive: a.anyCase,
			Pattern:         a.pattern,
			DefaultValue:    a.def,
			Description:     a.description,
		})
	}
	for _, c := range awsConfigKeys {
		s.CloudConfigKeys = append(s.CloudConfigKeys, &pb.SchemaConfigKey{
			Section:      "Global",
			Key:          c.key,
			Type:         c.typ,
			DefaultValue: c.def,
			Deprecated:   c.deprecated,
			Replacement:  c.replacement,
			Description:  c.description,
		})
	}
	return s
}
