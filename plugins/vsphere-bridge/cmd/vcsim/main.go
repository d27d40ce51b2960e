// vcsim: the vSphere stand-in the repository's tests run ccm-provider-vsphere
// against. It is govmomi's vCenter simulator (simulator.VPX) in process,
// listening on 127.0.0.1 with TLS, its VMs given the guest hostname and IP
// that the vSphere provider's node discovery reads (VMware Tools would
// report them on a real VM). Test-only; never part of a provider.
//
// stdout: one JSON line, {"server","port","user","password","datacenter",
// "vms":[{"name","uuid","ip"}]}, once it serves. stdin: one command per
// line, "poweroff NAME", "poweron NAME" or "destroy NAME" (NAME a guest
// hostname), each answered "ok" or "error: ..." on stdout. It exits when
// stdin closes.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

type vmInfo struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
	IP   string `json:"ip"`
	ref  types.ManagedObjectReference
}

func main() {
	prefix := flag.String("hostname-prefix", "vcsim-node-", "guest hostname of VM i is <prefix><i> (a valid Node name)")
	flag.Parse()
	if err := run(*prefix); err != nil {
		fmt.Fprintln(os.Stderr, "vcsim:", err)
		os.Exit(1)
	}
}

func run(prefix string) error {
	model := simulator.VPX()
	if err := model.Create(); err != nil {
		return fmt.Errorf("creating the simulator model: %w", err)
	}
	defer model.Remove()
	var vms []*vmInfo
	for i, e := range model.Map().All("VirtualMachine") {
		vm := e.(*simulator.VirtualMachine)
		info := &vmInfo{Name: fmt.Sprintf("%s%d", prefix, i), UUID: vm.Config.Uuid, IP: fmt.Sprintf("10.0.0.%d", 10+i), ref: vm.Reference()}
		// Before the server starts: nothing else touches the model yet.
		vm.Guest.HostName = info.Name
		vm.Guest.Net = []types.GuestNicInfo{{Network: "VM Network", IpAddress: []string{info.IP}, Connected: true}}
		vms = append(vms, info)
	}
	model.Service.TLS = new(tls.Config)
	server := model.Service.NewServer()
	defer server.Close()
	password, _ := server.URL.User.Password()
	hello, _ := json.Marshal(map[string]any{
		"server": server.URL.Hostname(), "port": server.URL.Port(), "user": server.URL.User.Username(), "password": password,
		"datacenter": "DC0", "vms": vms,
	})
	fmt.Println(string(hello))

	ctx := context.Background()
	client, err := govmomi.NewClient(ctx, server.URL, true)
	if err != nil {
		return fmt.Errorf("connecting to the simulator: %w", err)
	}
	byName := map[string]*vmInfo{}
	for _, vm := range vms {
		byName[vm.Name] = vm
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, name, _ := strings.Cut(strings.TrimSpace(in.Text()), " ")
		vm, ok := byName[name]
		if !ok {
			fmt.Printf("error: no VM with guest hostname %q\n", name)
			continue
		}
		if err := apply(ctx, object.NewVirtualMachine(client.Client, vm.ref), verb); err != nil {
			fmt.Printf("error: %s %s: %v\n", verb, name, err)
			continue
		}
		fmt.Println("ok")
	}
	return nil
}

// apply runs one command through the vSphere API, as an operator would.
func apply(ctx context.Context, vm *object.VirtualMachine, verb string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var task *object.Task
	var err error
	switch verb {
	case "poweroff":
		task, err = vm.PowerOff(ctx)
	case "poweron":
		task, err = vm.PowerOn(ctx)
	case "destroy":
		if state, serr := vm.PowerState(ctx); serr == nil && state == types.VirtualMachinePowerStatePoweredOn {
			if t, perr := vm.PowerOff(ctx); perr == nil {
				_ = t.Wait(ctx)
			}
		}
		task, err = vm.Destroy(ctx)
	default:
		return fmt.Errorf("unknown command (poweroff, poweron or destroy)")
	}
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}
