// Command flag-list prints every flag of the upstream cloud-controller-manager
// command (k8s.io/cloud-provider's app.NewCloudControllerManagerCommand, as
// tools/upstream-ccm builds it), hidden and deprecated ones included, which
// --help leaves out. `npm run upstream:flags` runs it to regenerate
// test/fixtures/upstream-ccm-flags.txt.
//
// One line per flag, in name order:
//
//	--name [type] [# hidden] [# deprecated: message]
//
// The type is as --help shows it; booleans have none. Nothing is started: the command is
// built, its flags are listed, and the process exits.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
)

func main() {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot build cloud-controller-manager options: %v\n", err)
		os.Exit(1)
	}
	cmd := app.NewCloudControllerManagerCommand(opts, nil, app.DefaultInitFuncConstructors, names.CCMControllerAliases(), cliflag.NamedFlagSets{}, wait.NeverStop)
	var lines []string
	// VisitAll walks in name order: the flag sets are merged from a map, so registration order is not stable.
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return // cobra's own, not an option
		}
		line := "--" + f.Name
		// The type as --help shows it (strings, not stringSlice; none for booleans).
		if t, _ := pflag.UnquoteUsage(f); t != "" {
			if f.NoOptDefVal != "" {
				t += "[=" + f.NoOptDefVal + "]"
			}
			line += " " + t
		}
		if f.Hidden {
			line += " # hidden"
		}
		if f.Deprecated != "" {
			line += " # deprecated: " + strings.ReplaceAll(f.Deprecated, "\n", " ")
		}
		lines = append(lines, line)
	})
	fmt.Println(strings.Join(lines, "\n"))
}
