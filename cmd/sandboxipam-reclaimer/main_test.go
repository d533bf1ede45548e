package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestFlagsMapOntoConfig(t *testing.T) {
	f, err := parse([]string{"--grace=10m", "--interval=1m", "--identity=r-0", "--leader-election-namespace=sbx", "--ipamd-lease-namespace=ipam", "--alive-timeout=2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.cfg.Grace != 10*time.Minute || f.cfg.Interval != time.Minute || f.identity != "r-0" || f.cfg.LeaderElection.Namespace != "sbx" || f.cfg.IpamdLeaseNamespace != "ipam" || f.cfg.AliveTimeout != 2*time.Second ||
		f.cfg.LeaderElection.Name != "sandboxipam-reclaimer" || f.metricsAddr != DefaultMetricsAddress || f.decisionsAddr != DefaultDecisionsAddress {
		t.Fatalf("flags %+v", f)
	}
	for args, want := range map[string]string{
		"--grace=10s":       "grace must be at least 1m0s",
		"--log-format=xml":  "--log-format must be json or text",
		"--interval=0s":     "interval must be positive",
		"--alive-timeout=0": "aliveTimeout must be positive",
		"--identity=a more": "unexpected arguments",
	} {
		if _, err := parse(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", args, err, want)
		}
	}
}
