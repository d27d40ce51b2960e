package bridge

import "runtime/debug"

// ModuleVersion is the version of the module at path that the running
// binary was built with (from its build information), or "" when the
// binary has none: for Options.VendorVersion, so that GetPluginInfo names
// the provider's real version, e.g.
// "k8s.io/cloud-provider-aws " + bridge.ModuleVersion("k8s.io/cloud-provider-aws").
// A replaced module reports its replacement's version.
func ModuleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return moduleVersion(info, path)
}

func moduleVersion(info *debug.BuildInfo, path string) string {
	if info.Main.Path == path {
		return info.Main.Version
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil && m.Replace.Version != "" {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}
