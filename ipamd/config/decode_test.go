package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A mistake in the file names its line, the field's full YAML path, the
// value written and what the field takes; a misspelt key, the nearest
// field. Every mistake in the file is reported at once.
func TestYAMLMistakesNameThePath(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // the lines after "invalid config: "
	}{
		{"typo", "runtime:\n  adaptr: docker\n",
			[]string{"line 2: runtime.adaptr is not a field; did you mean runtime.adapter?"}},
		{"typo in an inline struct", "advanced:\n  adapter:\n    minBackof: 1s\n",
			[]string{"line 3: advanced.adapter.minBackof is not a field; did you mean advanced.adapter.minBackoff?"}},
		{"case", "ipSource:\n  aws:\n    warmIpTarget: 3\n",
			[]string{"line 3: ipSource.aws.warmIpTarget is not a field; did you mean ipSource.aws.warmIPTarget?"}},
		{"nothing near", "runtime:\n  image: x\n",
			[]string{"line 2: runtime.image is not a field (runtime takes adapter, args, autoMTLS, endpoint, pluginDir, sha256)"}},
		{"duration", "reconcile:\n  grace: thirty\n",
			[]string{`line 2: reconcile.grace: "thirty" is not a duration (like 30s or 5m)`}},
		{"duration without unit", "cooldown: 30\n",
			[]string{`line 1: cooldown: "30" is not a duration (like 30s or 5m)`}},
		{"fraction for an integer", "ipSource:\n  pool:\n    lowWatermark: 1.5\n",
			[]string{`line 3: ipSource.pool.lowWatermark: "1.5" is not a whole number`}},
		{"bool", "runtime:\n  autoMTLS: maybe\n",
			[]string{`line 2: runtime.autoMTLS: "maybe" is not true or false`}},
		{"scalar for a list", "runtime:\n  args: --debug\n",
			[]string{`line 2: runtime.args: "--debug" is not a list of strings`}},
		{"list element", "ipSource:\n  static:\n    cidrs:\n      - 198.18.0.0/24\n      - {cidr: 198.19.0.0/24}\n",
			[]string{`line 5: ipSource.static.cidrs[1]: a mapping is not a string`}},
		{"map value", "ipSource:\n  static:\n    nodes:\n      node-1: 198.18.1.0/24\n",
			[]string{`line 4: ipSource.static.nodes.node-1: "198.18.1.0/24" is not a list of strings`}},
		{"scalar for a block", "runtime: docker\n",
			[]string{`line 1: runtime: "docker" is not a mapping of fields (runtime takes adapter, args, autoMTLS, endpoint, pluginDir, sha256)`}},
		{"twice", "runtime:\n  adapter: docker\n  adapter: crio\n",
			[]string{"line 3: runtime.adapter is set twice (first on line 2)"}},
		{"merged keys are checked where they land", "reconcile: &r\n  interval: 2m\nadvanced:\n  reconcile:\n    <<: *r\n",
			[]string{"line 2: advanced.reconcile.interval is not a field (advanced.reconcile takes linkGrace, listTimeout)"}},
		{"every mistake", "cooldown: soon\nruntime:\n  adaptr: docker\n  autoMTLS: yes please\n",
			[]string{
				`line 1: cooldown: "soon" is not a duration (like 30s or 5m)`,
				"line 3: runtime.adaptr is not a field; did you mean runtime.adapter?",
				`line 4: runtime.autoMTLS: "yes please" is not true or false`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, nil)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = path + " " + w
			}
			if !errors.Is(err, ErrInvalid) || err.Error() != "invalid config: "+strings.Join(want, "\n") {
				t.Fatalf("Load =\n%v\nwant ErrInvalid:\ninvalid config: %s", err, strings.Join(want, "\n"))
			}
		})
	}
}

// Anchors, aliases and merge keys decode as yaml.v3 decodes them.
func TestYAMLAnchorsAndMergeKeysLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	data := "ipSource:\n  type: static\n  static:\n    cidrs: &pods [198.18.4.0/24]\n" +
		"x: &tuning\n  listTimeout: 4s\n"
	// x is not a field: an anchor holder must be refused like any typo.
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "line 5: x is not a field (the file takes advanced,") {
		t.Fatalf("Load with an unknown top-level key = %v", err)
	}
	data = "ipSource:\n  type: static\n  static:\n    cidrs: &pods [198.18.4.0/24]\n" +
		"advanced:\n  reconcile: &tuning\n    listTimeout: 4s\n" +
		"reconcile:\n  grace: 1m\n  <<: {interval: 3m}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Advanced.Reconcile.ListTimeout != 4*time.Second || cfg.Reconcile.Interval != 3*time.Minute || cfg.Reconcile.Grace != time.Minute {
		t.Errorf("listTimeout %s interval %s grace %s, want 4s 3m 1m", cfg.Advanced.Reconcile.ListTimeout, cfg.Reconcile.Interval, cfg.Reconcile.Grace)
	}
}

func TestNearestField(t *testing.T) {
	fields := []string{"adapter", "endpoint", "pluginDir", "sha256", "args", "autoMTLS"}
	for name, want := range map[string]string{
		"adaptr": "adapter", "Adapter": "adapter", "endpont": "endpoint", "plugindir": "pluginDir",
		"automtls": "autoMTLS", "arg": "args", "image": "", "sha": "", "x": "",
	} {
		if got := nearest(name, fields); got != want {
			t.Errorf("nearest(%q) = %q, want %q", name, got, want)
		}
	}
}
