// vcsim-hook: the conformance kit's test hook (conformance/hooks.ts, a
// --test-hook-command) for the vSphere provider against cmd/vcsim. It makes
// and removes VMs through the vSphere API of the running simulator, as an
// operator would, so the kit's instance checks have a machine to look up.
// Test-only; never part of a provider.
//
//	vcsim-hook URL create-instance NAME   clone a VM, guest hostname NAME; print vsphere://<BIOS UUID>
//	vcsim-hook URL delete-instance NAME   power off and destroy it (exit 0 when absent)
//	vcsim-hook URL throttle ...           exit 3: vcsim cannot throttle its API
//
// URL is the simulator's SDK URL with its user and password
// (https://user:password@127.0.0.1:port/sdk).
package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// unsupported is the hook protocol's "verb not supported" exit status.
const unsupported = 3

// template is a VM of simulator.VPX() whose hardware (a NIC on "VM Network")
// the clones copy; the NIC is what gives a clone the guest IP the provider's
// node discovery requires.
const template = "DC0_H0_VM0"

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: vcsim-hook URL create-instance|delete-instance NAME")
		os.Exit(2)
	}
	url, verb, args := os.Args[1], os.Args[2], os.Args[3:]
	if verb != "create-instance" && verb != "delete-instance" {
		os.Exit(unsupported)
	}
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "vcsim-hook: %s takes one NAME\n", verb)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := run(ctx, url, verb, args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "vcsim-hook: %s %s: %v\n", verb, args[0], err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rawURL, verb, name string) error {
	u, err := soap.ParseURL(rawURL)
	if err != nil {
		return err
	}
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		return fmt.Errorf("connecting to the simulator: %w", err)
	}
	defer func() { _ = c.Logout(context.Background()) }()
	finder := find.NewFinder(c.Client)
	dc, err := finder.DefaultDatacenter(ctx)
	if err != nil {
		return err
	}
	finder.SetDatacenter(dc)
	// By guest DNS name, as the provider finds a Node's VM (FindVMByName).
	ref, err := object.NewSearchIndex(c.Client).FindByDnsName(ctx, dc, name, true)
	if err != nil {
		return err
	}
	var vm *object.VirtualMachine
	if ref != nil {
		vm = ref.(*object.VirtualMachine)
	}
	if verb == "delete-instance" {
		if vm == nil {
			return nil
		}
		return destroy(ctx, vm)
	}
	if vm == nil {
		if vm, err = create(ctx, finder, dc, name); err != nil {
			return err
		}
	}
	if err := powerOn(ctx, vm); err != nil {
		return err
	}
	var props mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.uuid"}, &props); err != nil {
		return err
	}
	if props.Config == nil || props.Config.Uuid == "" {
		return errors.New("the new VM has no BIOS UUID")
	}
	// What the provider reports as the providerID (vsphere://<config.uuid>).
	fmt.Printf("vsphere://%s\n", props.Config.Uuid)
	return nil
}

// create clones the template and gives it the guest hostname
// and IP that VMware Tools would report; vcsim takes them from the
// "SET.guest.*" extraConfig keys.
func create(ctx context.Context, finder *find.Finder, dc *object.Datacenter, name string) (*object.VirtualMachine, error) {
	src, err := finder.VirtualMachine(ctx, template)
	if err != nil {
		return nil, err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return nil, err
	}
	// vcsim ignores the clone spec's PowerOn: run() powers the clone on.
	task, err := src.Clone(ctx, folders.VmFolder, name, types.VirtualMachineCloneSpec{})
	if err != nil {
		return nil, err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", template, err)
	}
	vm := object.NewVirtualMachine(src.Client(), info.Result.(types.ManagedObjectReference))
	task, err = vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: "SET.guest.hostName", Value: name},
		&types.OptionValue{Key: "SET.guest.ipAddress", Value: guestIP(name)},
	}})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		_ = destroy(ctx, vm)
		return nil, fmt.Errorf("setting the guest hostname: %w", err)
	}
	return vm, nil
}

// guestIP is a per-name address in 10.0.1.0/24, apart from cmd/vcsim's
// 10.0.0.x, so the provider's fallback lookup by IP cannot meet another VM.
func guestIP(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("10.0.1.%d", 10+h.Sum32()%240)
}

// powerOn makes the instance the kit asked for a running one.
func powerOn(ctx context.Context, vm *object.VirtualMachine) error {
	state, err := vm.PowerState(ctx)
	if err != nil || state == types.VirtualMachinePowerStatePoweredOn {
		return err
	}
	task, err := vm.PowerOn(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("powering on: %w", err)
	}
	return nil
}

func destroy(ctx context.Context, vm *object.VirtualMachine) error {
	if state, err := vm.PowerState(ctx); err == nil && state == types.VirtualMachinePowerStatePoweredOn {
		task, err := vm.PowerOff(ctx)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return fmt.Errorf("powering off: %w", err)
		}
	}
	task, err := vm.Destroy(ctx)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}
