package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

func TestHelpListsEveryFieldWithVariableAndDefault(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, f := range config.Reference() {
		if !strings.Contains(stderr.String(), f.Env) || !strings.Contains(stderr.String(), f.Path) {
			t.Errorf("--help lacks %s (%s)", f.Path, f.Env)
		}
	}
	stdout.Reset()
	if code := run([]string{"config-reference"}, &stdout, &stderr); code != 0 {
		t.Fatalf("config-reference exit %d", code)
	}
	var socketLine []string
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "socket" {
			socketLine = f[:3]
		}
	}
	if strings.Join(socketLine, " ") != "socket IPAMD_SOCKET /run/sandboxipam/ipamd.sock" {
		t.Errorf("config-reference socket line = %q\n%s", socketLine, stdout.String())
	}
}

func TestBadConfigExitsNamingTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipamd.yaml")
	if err := os.WriteFile(path, []byte("runtime:\n  adapter: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config", path}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	// The names come from the adapter table, so a fifth adapter edits no test.
	want := "runtime.adapter must be one of " + strings.Join(config.AdapterNames(), ", ") + `, auto or a path, got "x"`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
	}
}

// config-reference lists every aws source field under the variable the aws
// package documents for it, with its default, and the VPC CNI aliases.
func TestConfigReferenceListsAWSVariables(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"config-reference"}, &stdout, &stderr); code != 0 {
		t.Fatalf("config-reference exit %d: %s", code, stderr.String())
	}
	rows := map[string]string{} // first column -> the rest, single-spaced
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			rows[f[0]] = strings.Join(f[1:], " ")
		}
	}
	defaults := map[string]string{
		"warmIPTarget": "0", "minimumIPTarget": "0", "warmENITarget": "1", "maxENIs": "0",
		"enablePrefixDelegation": "false", "warmPrefixTarget": "1", "enableIPv6": "false",
		"poolCheckInterval": "1s", "shrinkInterval": "30s", "resyncInterval": "1m0s", "leakedENICleanupInterval": "30m0s",
		"maxAttempts": "10", "maxBackoff": "20s", "region": `""`, "ec2Endpoint": `""`, "imdsEndpoint": `""`,
	}
	fields := 0
	for prefix, rt := range map[string]reflect.Type{"ipSource.aws.": reflect.TypeFor[awsconf.Config](), "advanced.aws.": reflect.TypeFor[awsconf.Tuning]()} {
		for i := range rt.NumField() {
			sf := rt.Field(i)
			path := prefix + sf.Tag.Get("yaml")
			want := sf.Tag.Get("env") + " " + defaults[sf.Tag.Get("yaml")] + " "
			if got := rows[path]; !strings.HasPrefix(got, want) {
				t.Errorf("config-reference row %s = %q, want it to start with %q", path, got, want)
			}
			fields++
		}
	}
	if fields != len(defaults) {
		t.Fatalf("awsconf.Config and awsconf.Tuning have %d fields, this test knows %d", fields, len(defaults))
	}
	for alias, want := range map[string]string{
		"WARM_IP_TARGET":           "IPAMD_IPSOURCE_AWS_WARMIPTARGET ipSource.aws.warmIPTarget",
		"MINIMUM_IP_TARGET":        "IPAMD_IPSOURCE_AWS_MINIMUMIPTARGET ipSource.aws.minimumIPTarget",
		"WARM_ENI_TARGET":          "IPAMD_IPSOURCE_AWS_WARMENITARGET ipSource.aws.warmENITarget",
		"ENABLE_PREFIX_DELEGATION": "IPAMD_IPSOURCE_AWS_ENABLEPREFIXDELEGATION ipSource.aws.enablePrefixDelegation",
		"WARM_PREFIX_TARGET":       "IPAMD_IPSOURCE_AWS_WARMPREFIXTARGET ipSource.aws.warmPrefixTarget",
		"ENABLE_IPv6":              "IPAMD_IPSOURCE_AWS_ENABLEIPV6 ipSource.aws.enableIPv6",
	} {
		if got := rows[alias]; got != want {
			t.Errorf("config-reference alias row %s = %q, want %q", alias, got, want)
		}
	}
	if !strings.Contains(stdout.String(), "when both are set, the IPAMD_ variable wins") {
		t.Errorf("config-reference does not state the precedence:\n%s", stdout.String())
	}
	if strings.Contains(stdout.String(), "IPAMD_AWS_") {
		t.Errorf("config-reference names an IPAMD_AWS_ variable:\n%s", stdout.String())
	}
}
