// The in-memory cloud: instances, load balancers, routes and volumes behind
// one mutex. Its state lives as long as the process; instances come from the
// cloud config (Configure) or from the test hooks.
package main

import (
	"encoding/json"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"net/netip"
	"sync"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

const providerName = "memgo"

type instance struct {
	ID        string
	Name      string
	Type      string
	Zone      string
	Region    string
	Addresses []*pb.NodeAddress
	Labels    map[string]string
	Shutdown  bool
}

func (i *instance) providerID() string { return providerName + "://" + i.ID }

type loadBalancer struct {
	Name      string
	UID       string
	Namespace string
	Service   string
	Cluster   string
	// ClusterUID is RequestMeta.cluster_uid of the last ensure (the tag ListLoadBalancers reports).
	ClusterUID string
	IP         netip.Addr
	Ports      []*pb.ServicePort
	Nodes      []string
}

type route struct {
	Cluster string
	Name    string
	Target  string
	Addrs   []*pb.NodeAddress
	Dest    netip.Prefix
}

type volume struct {
	ID       string
	Name     string
	Bytes    int64
	Zone     string
	Params   map[string]string
	Attached map[string]bool // providerIDs
}

type cloud struct {
	mu        sync.Mutex
	zone      string
	region    string
	nextID    int
	instances map[string]*instance     // by node name
	lbs       map[string]*loadBalancer // by cluster/uid
	routes    map[string]*route        // by cluster/destination
	volumes   map[string]*volume       // by name
	nextLBIP  netip.Addr
}

func newCloud() *cloud {
	return &cloud{
		zone: "mem-a", region: "mem",
		instances: map[string]*instance{}, lbs: map[string]*loadBalancer{},
		routes: map[string]*route{}, volumes: map[string]*volume{},
		nextLBIP: netip.MustParseAddr("203.0.113.1"),
	}
}

// config is the --cloud-config format (JSON; every key optional).
type config struct {
	Zone      string `json:"zone"`
	Region    string `json:"region"`
	Instances []struct {
		Name      string                           `json:"name"`
		Type      string                           `json:"type"`
		Zone      string                           `json:"zone"`
		Region    string                           `json:"region"`
		Addresses []struct{ Type, Address string } `json:"addresses"`
		Labels    map[string]string                `json:"labels"`
		Shutdown  bool                             `json:"shutdown"`
	} `json:"instances"`
}

var addressTypes = map[string]pb.NodeAddressType{
	"Hostname": pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME, "InternalIP": pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP,
	"ExternalIP": pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_IP, "InternalDNS": pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_DNS,
	"ExternalDNS": pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_DNS,
}

// configure applies a cloud config: zone/region defaults, and instances
// created or replaced by name (ids of existing instances are kept).
func (c *cloud) configure(raw []byte) ([]string, error) {
	var cfg config
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, ccmsdk.InvalidArgument("cloud config is not valid JSON: " + err.Error())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.Zone != "" {
		c.zone = cfg.Zone
	}
	if cfg.Region != "" {
		c.region = cfg.Region
	}
	for _, ic := range cfg.Instances {
		if ic.Name == "" {
			return nil, ccmsdk.InvalidArgument("cloud config: an instance has no name")
		}
		addrs := []*pb.NodeAddress{}
		for _, a := range ic.Addresses {
			t, ok := addressTypes[a.Type]
			if !ok {
				return nil, ccmsdk.InvalidArgument(fmt.Sprintf("cloud config: instance %s: unknown address type %q", ic.Name, a.Type))
			}
			addrs = append(addrs, &pb.NodeAddress{Type: t, Address: a.Address})
		}
		inst := c.upsertInstance(ic.Name, "", ic.Zone)
		inst.Addresses = append(addrs, &pb.NodeAddress{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME, Address: ic.Name})
		if ic.Type != "" {
			inst.Type = ic.Type
		}
		if ic.Region != "" {
			inst.Region = ic.Region
		}
		inst.Labels = ic.Labels
		inst.Shutdown = ic.Shutdown
	}
	return nil, nil
}

// upsertInstance returns the instance named `name`, creating it (running) if absent. Caller holds mu.
func (c *cloud) upsertInstance(name, internalIP, zone string) *instance {
	if inst, ok := c.instances[name]; ok {
		return inst
	}
	c.nextID++
	if zone == "" {
		zone = c.zone
	}
	inst := &instance{ID: fmt.Sprintf("i-%08x", c.nextID), Name: name, Type: "mem.small", Zone: zone, Region: c.region, Labels: map[string]string{}}
	if internalIP == "" {
		internalIP = fmt.Sprintf("10.%d.%d.%d", (c.nextID>>16)&255, (c.nextID>>8)&255, c.nextID&255)
	}
	inst.Addresses = []*pb.NodeAddress{
		{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP, Address: internalIP},
		{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME, Address: name},
	}
	c.instances[name] = inst
	return inst
}

// findInstance looks a node up by providerID when it has one, else by name. Caller holds mu.
func (c *cloud) findInstance(node *pb.NodeRef) *instance {
	if node == nil {
		return nil
	}
	if node.ProviderId != "" {
		return c.byProviderID(node.ProviderId)
	}
	return c.instances[node.Name]
}

func (c *cloud) byProviderID(pid string) *instance {
	for _, inst := range c.instances {
		if inst.providerID() == pid {
			return inst
		}
	}
	return nil
}

func clusterOf(meta *pb.RequestMeta) string {
	if meta != nil && meta.ClusterName != "" {
		return meta.ClusterName
	}
	return "kubernetes"
}
