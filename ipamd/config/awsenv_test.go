package config

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/aws/awsconf"
)

// awsParts are the aws package's two config types and where ipamd's
// config puts them.
var awsParts = []struct {
	typ    reflect.Type
	name   string // the Go type's name in the aws package
	prefix string // its YAML path in ipamd's config
}{
	{reflect.TypeFor[awsconf.Config](), "Config", "ipSource.aws."},
	{reflect.TypeFor[awsconf.Tuning](), "Tuning", "advanced.aws."},
}

// awsFieldEnv is, per field of the aws package's config types, by its
// YAML path in ipamd's config, the variable its env tag documents.
func awsFieldEnv(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, part := range awsParts {
		for i := range part.typ.NumField() {
			sf := part.typ.Field(i)
			out[part.prefix+sf.Tag.Get("yaml")] = sf.Tag.Get("env")
		}
	}
	return out
}

// The aws package documents one variable per field; it must be exactly the
// one the loader derives, and every field must be in Reference.
func TestAWSEnvTagsAreTheDerivedVariables(t *testing.T) {
	ref := map[string]Field{}
	for _, f := range Reference() {
		ref[f.Path] = f
	}
	tags := awsFieldEnv(t)
	if len(tags) != 16 {
		t.Fatalf("awsconf.Config and awsconf.Tuning have %d fields, this test knows 16: %v", len(tags), tags)
	}
	for path, env := range tags {
		if want := EnvName(path); env != want {
			t.Errorf("aws field %s: env tag %q, but the loader derives %q", path, env, want)
		}
		if f, ok := ref[path]; !ok || f.Env != env {
			t.Errorf("Reference has %s as %+v, want variable %s", path, f, env)
		}
	}
}

// The field comments in the aws package name the same variables as the
// tags (and the aliases where there are some), and nothing else.
func TestAWSDocCommentsNameTheDerivedVariables(t *testing.T) {
	src := filepath.Join("..", "ipsource", "aws", "awsconf", "awsconf.go")
	file, err := parser.ParseFile(token.NewFileSet(), src, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	aliases := map[string]string{"warmIPTarget": "WARM_IP_TARGET", "minimumIPTarget": "MINIMUM_IP_TARGET", "warmENITarget": "WARM_ENI_TARGET",
		"enablePrefixDelegation": "ENABLE_PREFIX_DELEGATION", "warmPrefixTarget": "WARM_PREFIX_TARGET", "enableIPv6": "ENABLE_IPv6"}
	prefixes := map[string]string{}
	for _, part := range awsParts {
		prefixes[part.name] = part.prefix
	}
	tags := awsFieldEnv(t)
	checked := 0
	ast.Inspect(file, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || prefixes[ts.Name.Name] == "" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			tag := reflect.StructTag(strings.Trim(fld.Tag.Value, "`"))
			yamlName := tag.Get("yaml")
			doc := strings.Join(strings.Fields(fld.Doc.Text()), " ")
			want := "Env " + tags[prefixes[ts.Name.Name]+yamlName]
			if a := aliases[yamlName]; a != "" {
				want += " (or " + a + ")"
			}
			if !strings.Contains(doc, want+".") {
				t.Errorf("comment of aws.%s.%s = %q, want it to say %q", ts.Name.Name, fld.Names[0].Name, doc, want+".")
			}
			if strings.Count(doc, "IPAMD_") != 1 {
				t.Errorf("comment of aws.%s.%s names %d IPAMD_ variables, want 1: %q", ts.Name.Name, fld.Names[0].Name, strings.Count(doc, "IPAMD_"), doc)
			}
			checked++
		}
		return false
	})
	if checked != len(tags) {
		t.Fatalf("checked %d field comments, awsconf.Config and awsconf.Tuning have %d fields", checked, len(tags))
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "IPAMD_AWS_") {
		t.Errorf("%s still names an IPAMD_AWS_ variable, which the loader rejects", src)
	}
}

// Every field of the aws source is set by the variable the aws package
// documents for it, exactly, over the file's values.
func TestAWSEnvOverridesByDocumentedNames(t *testing.T) {
	values := map[string]string{
		"warmIPTarget":             "7",
		"minimumIPTarget":          "12",
		"warmENITarget":            "3",
		"enablePrefixDelegation":   "true",
		"warmPrefixTarget":         "2",
		"enableIPv6":               "true",
		"maxENIs":                  "2",
		"poolCheckInterval":        "250ms",
		"shrinkInterval":           "0s",
		"resyncInterval":           "90s",
		"leakedENICleanupInterval": "2h",
		"maxAttempts":              "4",
		"maxBackoff":               "3s",
		"region":                   "ap-south-2",
		"ec2Endpoint":              "http://127.0.0.1:9001",
		"imdsEndpoint":             "http://127.0.0.1:9002",
	}
	env := []string{"IPAMD_IPSOURCE_TYPE=aws"}
	for path, name := range awsFieldEnv(t) {
		v, ok := values[path[strings.LastIndex(path, ".")+1:]]
		if !ok {
			t.Fatalf("no test value for %s", path)
		}
		env = append(env, name+"="+v)
	}
	cfg, err := Load(filepath.Join("testdata", "full.yaml"), env) // full.yaml sets every aws field otherwise
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := awsconf.Config{WarmIPTarget: 7, MinimumIPTarget: 12, WarmENITarget: 3, EnablePrefixDelegation: true, WarmPrefixTarget: 2, EnableIPv6: true, MaxENIs: 2,
		Region: "ap-south-2", EC2Endpoint: "http://127.0.0.1:9001", IMDSEndpoint: "http://127.0.0.1:9002"}
	if got := cfg.IPSource.AWS; got != want {
		t.Errorf("aws config from env =\n%+v\nwant\n%+v", got, want)
	}
	wantTuning := awsconf.Tuning{PoolCheckInterval: 250 * time.Millisecond, ShrinkInterval: 0, ResyncInterval: 90 * time.Second,
		LeakedENICleanupInterval: 2 * time.Hour, MaxAttempts: 4, MaxBackoff: 3 * time.Second}
	if got := cfg.Advanced.AWS; got != wantTuning {
		t.Errorf("aws tuning from env =\n%+v\nwant\n%+v", got, wantTuning)
	}
	if cfg.IPSource.Type != SourceAWS {
		t.Errorf("ipSource.type = %q, want aws", cfg.IPSource.Type)
	}
}

func TestAWSTargetAliases(t *testing.T) {
	full := filepath.Join("testdata", "full.yaml") // warmIPTarget 5, minimumIPTarget 10, warmENITarget 2
	targets := func(c Config) [3]int {
		return [3]int{c.IPSource.AWS.WarmIPTarget, c.IPSource.AWS.MinimumIPTarget, c.IPSource.AWS.WarmENITarget}
	}
	for _, tc := range []struct {
		name string
		env  []string
		want [3]int
	}{
		{"none", nil, [3]int{5, 10, 2}},
		{"aliases override the file", []string{"WARM_IP_TARGET=1", "MINIMUM_IP_TARGET=20", "WARM_ENI_TARGET=3"}, [3]int{1, 20, 3}},
		{"IPAMD_ wins over its alias", []string{"WARM_IP_TARGET=1", "IPAMD_IPSOURCE_AWS_WARMIPTARGET=9",
			"MINIMUM_IP_TARGET=20", "WARM_ENI_TARGET=4", "IPAMD_IPSOURCE_AWS_WARMENITARGET=6"}, [3]int{9, 20, 6}},
		{"IPAMD_ wins whatever the order", []string{"IPAMD_IPSOURCE_AWS_MINIMUMIPTARGET=11", "MINIMUM_IP_TARGET=30"}, [3]int{5, 11, 2}},
		{"an empty alias is unset, as in the VPC CNI", []string{"WARM_IP_TARGET=", "MINIMUM_IP_TARGET=", "WARM_ENI_TARGET="}, [3]int{5, 10, 2}},
		{"a shadowed alias is not parsed", []string{"WARM_ENI_TARGET=lots", "IPAMD_IPSOURCE_AWS_WARMENITARGET=1"}, [3]int{5, 10, 1}},
		{"other VPC CNI variables are ignored", []string{"MAX_ENI=1", "AWS_VPC_K8S_CNI_LOGLEVEL=DEBUG"}, [3]int{5, 10, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(full, tc.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := targets(cfg); got != tc.want {
				t.Errorf("warmIP, minimumIP, warmENI = %v, want %v", got, tc.want)
			}
		})
	}

	// The prefix-delegation and IPv6 aliases.
	cfg, err := Load(full, []string{"ENABLE_PREFIX_DELEGATION=true", "WARM_PREFIX_TARGET=3", "ENABLE_IPv6=false"})
	if err != nil || !cfg.IPSource.AWS.EnablePrefixDelegation || cfg.IPSource.AWS.WarmPrefixTarget != 3 || cfg.IPSource.AWS.EnableIPv6 {
		t.Errorf("prefix delegation aliases: %+v, %v", cfg.IPSource.AWS, err)
	}

	_, err = Load("", []string{"WARM_IP_TARGET=five"})
	want := `environment variable WARM_IP_TARGET (ipSource.aws.warmIPTarget, alias of IPAMD_IPSOURCE_AWS_WARMIPTARGET): want an integer, got "five"`
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("Load with a bad alias = %v\nwant ErrInvalid containing %q", err, want)
	}
	_, err = Load("", []string{"WARM_ENI_TARGET=-1", "IPAMD_IPSOURCE_TYPE=aws"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ipSource.aws.warmENITarget must be >= 0, got -1") {
		t.Errorf("Load with WARM_ENI_TARGET=-1 = %v, want the field's validation error", err)
	}

	var aliases []string
	for _, f := range Reference() {
		if f.Alias != "" {
			aliases = append(aliases, f.Alias+"="+f.Env)
		}
	}
	wantAliases := "NODE_NAME=IPAMD_IPSOURCE_NODENAME POD_NAMESPACE=IPAMD_IPSOURCE_POOL_LEASE_NAMESPACE WARM_IP_TARGET=IPAMD_IPSOURCE_AWS_WARMIPTARGET MINIMUM_IP_TARGET=IPAMD_IPSOURCE_AWS_MINIMUMIPTARGET WARM_ENI_TARGET=IPAMD_IPSOURCE_AWS_WARMENITARGET " +
		"ENABLE_PREFIX_DELEGATION=IPAMD_IPSOURCE_AWS_ENABLEPREFIXDELEGATION WARM_PREFIX_TARGET=IPAMD_IPSOURCE_AWS_WARMPREFIXTARGET ENABLE_IPv6=IPAMD_IPSOURCE_AWS_ENABLEIPV6"
	if strings.Join(aliases, " ") != wantAliases {
		t.Errorf("Reference aliases = %v, want %s", aliases, wantAliases)
	}
}
