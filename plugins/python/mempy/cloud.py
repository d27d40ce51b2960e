"""The in-memory cloud: instances, load balancers, routes and volumes behind one
lock. Instances come from the cloud config (Configure) or the test hooks."""
import ipaddress
import json
import threading

from ccm.provider.v1 import common_pb2
from ccm_provider_sdk import already_exists, instance_not_found, quota_exceeded
from ccm_provider_sdk import invalid_argument as invalid

PROVIDER_NAME = "mempy"
ZONE_KEY = "topology.kubernetes.io/zone"
REGION_KEY = "topology.kubernetes.io/region"
LB_POOL = ipaddress.ip_network("198.51.100.0/24")  # TEST-NET-2: this cloud carries no traffic
ADDRESS_TYPES = {
    "Hostname": common_pb2.NODE_ADDRESS_TYPE_HOSTNAME,
    "InternalIP": common_pb2.NODE_ADDRESS_TYPE_INTERNAL_IP,
    "ExternalIP": common_pb2.NODE_ADDRESS_TYPE_EXTERNAL_IP,
    "InternalDNS": common_pb2.NODE_ADDRESS_TYPE_INTERNAL_DNS,
    "ExternalDNS": common_pb2.NODE_ADDRESS_TYPE_EXTERNAL_DNS,
}


class Instance:
    def __init__(self, iid, name, zone, region):
        self.id = iid
        self.name = name
        self.type = "mem.small"
        self.zone = zone
        self.region = region
        self.addresses = []  # [(type, address)]
        self.labels = {}
        self.shutdown = False

    @property
    def provider_id(self):
        return f"{PROVIDER_NAME}://{self.id}"


class Cloud:
    def __init__(self):
        self.lock = threading.Lock()
        self.zone = "mem-a"
        self.region = "mem"
        self.next_id = 0
        self.instances = {}  # node name -> Instance
        self.lbs = {}  # (cluster, uid) -> dict(name, ip, ports, nodes)
        self.routes = {}  # (cluster, destination) -> dict(name, target, addresses, dest)
        self.volumes = {}  # name -> dict(id, name, bytes, zone, params, attached:set)
        self.throttle = None  # retry delay in ms while throttled

    # ---- configuration ----

    def configure(self, raw):
        """Applies a JSON cloud config; instances are created or replaced by name."""
        try:
            cfg = json.loads(raw.decode("utf-8")) if raw else {}
            if not isinstance(cfg, dict):
                raise ValueError("not an object")
        except ValueError as e:
            raise invalid(f"cloud config is not a JSON object: {e}")
        with self.lock:
            self.zone = cfg.get("zone") or self.zone
            self.region = cfg.get("region") or self.region
            for ic in cfg.get("instances") or []:
                name = ic.get("name")
                if not name:
                    raise invalid("cloud config: an instance has no name")
                addresses = []
                for a in ic.get("addresses") or []:
                    if a.get("type") not in ADDRESS_TYPES:
                        raise invalid(f"cloud config: instance {name}: unknown address type {a.get('type')!r}")
                    addresses.append((ADDRESS_TYPES[a["type"]], a.get("address", "")))
                inst = self.upsert_instance(name, "", ic.get("zone", ""))
                inst.addresses = addresses + [(common_pb2.NODE_ADDRESS_TYPE_HOSTNAME, name)]
                inst.type = ic.get("type") or inst.type
                inst.region = ic.get("region") or inst.region
                inst.labels = dict(ic.get("labels") or {})
                inst.shutdown = bool(ic.get("shutdown"))
        return []

    # ---- instances ----

    def upsert_instance(self, name, internal_ip, zone):
        """The instance named `name`, created (running) if absent. Caller holds the lock."""
        if name in self.instances:
            return self.instances[name]
        self.next_id += 1
        n = self.next_id
        inst = Instance(f"i-{n:08x}", name, zone or self.zone, self.region)
        ip = internal_ip or f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
        inst.addresses = [(common_pb2.NODE_ADDRESS_TYPE_INTERNAL_IP, ip), (common_pb2.NODE_ADDRESS_TYPE_HOSTNAME, name)]
        self.instances[name] = inst
        return inst

    def by_provider_id(self, pid):
        # Another provider's providerID is not ours to judge: "not found" would
        # tell the host the instance is gone (docs/protocol.md).
        if not pid.startswith(f"{PROVIDER_NAME}://"):
            raise invalid(f"providerID {pid!r} is not a {PROVIDER_NAME}:// providerID")
        return next((i for i in self.instances.values() if i.provider_id == pid), None)

    def find_instance(self, node):
        """By providerID when the node has one, else by name. Caller holds the lock."""
        if node.provider_id:
            return self.by_provider_id(node.provider_id)
        return self.instances.get(node.name)

    @staticmethod
    def describe(node):
        return f"with providerID {node.provider_id}" if node.provider_id else f"named {node.name}"

    def instance_or_raise(self, node):
        inst = self.find_instance(node)
        if inst is None:
            raise instance_not_found(f"no instance {self.describe(node)}")
        return inst

    # ---- load balancers ----

    def alloc_ip(self):
        """A free pool address. Caller holds the lock."""
        used = {lb["ip"] for lb in self.lbs.values()}
        for ip in LB_POOL.hosts():
            if str(ip) not in used:
                return str(ip)
        raise quota_exceeded(f"load balancer pool {LB_POOL} is exhausted")

    # ---- routes ----

    @staticmethod
    def parse_cidr(text):
        try:
            return ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise invalid(f"destination_cidr {text!r} is not a CIDR")

    def create_route(self, cluster, hint, route):
        """Idempotent; another target for the same destination is ALREADY_EXISTS. Caller holds the lock.
        Returns (stored route, created)."""
        if not route.target_node:
            raise invalid("route.target_node is required")
        dest = self.parse_cidr(route.destination_cidr)
        key = (cluster, str(dest))
        existing = self.routes.get(key)
        if existing:
            if existing["target"] == route.target_node:
                return existing, False
            raise already_exists(f"route {existing['name']} already sends {dest} to node {existing['target']}")
        name = hint or f"{route.target_node}-{str(dest).replace('.', '-').replace(':', '-').replace('/', '-')}"
        stored = {"name": name, "target": route.target_node, "addresses": list(route.target_node_addresses), "dest": dest}
        self.routes[key] = stored
        return stored, True
