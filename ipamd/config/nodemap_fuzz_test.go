package config

import (
	"reflect"
	"testing"
)

// FuzzParseNodeMap: IPAMD_IPSOURCE_STATIC_NODES never panics the parser,
// and what it accepts formats back (config-reference's form) to the same
// map.
func FuzzParseNodeMap(f *testing.F) {
	f.Add("node-1=198.18.1.0/24 fd00:1::/64,node-2=198.18.2.0/24")
	f.Add("a=,b=198.18.2.0/24")
	f.Add("=198.18.1.0/24")
	f.Add(",,")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseNodeMap(s)
		if err != nil {
			return
		}
		again, err := parseNodeMap(format(reflect.ValueOf(m)))
		if err != nil {
			t.Fatalf("formatted map %q does not parse: %v", format(reflect.ValueOf(m)), err)
		}
		for k, v := range m {
			if len(v) == 0 {
				m[k] = nil
			}
		}
		for k, v := range again {
			if len(v) == 0 {
				again[k] = nil
			}
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip of %q: %v != %v", s, m, again)
		}
	})
}
