package config

import "strings"

// AdapterAuto makes ipamd probe the known runtime sockets.
const AdapterAuto = "auto"

// AdapterSpec is one row of the name-to-binary table.
type AdapterSpec struct {
	Name   string // the runtime.adapter value
	Binary string // file name in runtime.pluginDir
}

// Adapters is the name-to-binary table of the adapters that ship with
// ipamd. cri-dockerd speaks dockershim's CRI, so the dockershim adapter
// serves both.
func Adapters() []AdapterSpec {
	return []AdapterSpec{
		{Name: "docker", Binary: "docker"},
		{Name: "dockershim", Binary: "dockershim"},
		{Name: "containerd", Binary: "containerd"},
		{Name: "crio", Binary: "crio"},
	}
}

// AdapterNames lists the table's names in order.
func AdapterNames() []string {
	var names []string
	for _, a := range Adapters() {
		names = append(names, a.Name)
	}
	return names
}

// LookupAdapter finds a name in the table.
func LookupAdapter(name string) (AdapterSpec, bool) {
	for _, a := range Adapters() {
		if a.Name == name {
			return a, true
		}
	}
	return AdapterSpec{}, false
}

// AdapterIsPath reports whether runtime.adapter names a third-party
// adapter binary by its path rather than a row of the table.
func (r Runtime) AdapterIsPath() bool { return isPath(r.Adapter) }

func isPath(s string) bool { return strings.Contains(s, "/") }
