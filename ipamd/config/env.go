package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts every variable that overrides a config field.
const EnvPrefix = "IPAMD_"

// Field is one leaf of the config: its YAML path, environment variable and
// description. Reference lists them all.
type Field struct {
	Path string // YAML path, e.g. "runtime.endpoint"
	Env  string // e.g. "IPAMD_RUNTIME_ENDPOINT"
	// Alias is a second variable that sets the field when Env is not set,
	// e.g. the AWS VPC CNI's WARM_IP_TARGET; empty for most fields.
	Alias string
	Desc  string
	// Default is the field's value in DefaultConfig, formatted as the
	// environment variable would carry it.
	Default string
	value   reflect.Value
}

// Fields lists the leaves of cfg in declaration order, each with the
// reflect.Value of its storage in cfg.
func fields(cfg *Config) []Field {
	var out []Field
	walk(reflect.ValueOf(cfg).Elem(), "", &out)
	return out
}

func walk(v reflect.Value, prefix string, out *[]Field) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if opts == "inline" {
			walk(v.Field(i), prefix, out) // a component's struct embedded as it is
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		fv := v.Field(i)
		if sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[time.Duration]() {
			walk(fv, path, out)
			continue
		}
		*out = append(*out, Field{
			Path:    path,
			Env:     EnvName(path),
			Alias:   sf.Tag.Get("envAlias"),
			Desc:    sf.Tag.Get("desc"),
			Default: format(fv),
			value:   fv,
		})
	}
}

// EnvName derives a field's variable from its YAML path.
func EnvName(path string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// Reference lists every config field with its environment variable and
// default, in declaration order.
func Reference() []Field {
	cfg := DefaultConfig()
	fs := fields(&cfg)
	for i := range fs {
		fs[i].value = reflect.Value{}
	}
	return fs
}

// ApplyEnv sets the fields named by IPAMD_* variables in environ. A value
// that does not parse is an error naming the variable, and so is an
// IPAMD_* variable that names no field (most likely a typo).
//
// A field with an Alias (the AWS VPC CNI's WARM_IP_TARGET,
// MINIMUM_IP_TARGET and WARM_ENI_TARGET) is also set by that variable,
// but only when its IPAMD_ variable is absent: the IPAMD_ variable wins,
// and an alias shadowed by it is not even parsed. An empty alias counts as
// unset, as in the VPC CNI. Either one overrides the file.
func ApplyEnv(cfg *Config, environ []string) error {
	byEnv := make(map[string]Field)
	byAlias := make(map[string]Field)
	for _, f := range fields(cfg) {
		byEnv[f.Env] = f
		if f.Alias != "" {
			byAlias[f.Alias] = f
		}
	}
	var names []string
	values := make(map[string]string)
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, alias := byAlias[name]; !alias && !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		names = append(names, name)
		values[name] = value
	}
	sort.Strings(names) // deterministic: the first bad variable is reported
	for _, name := range names {
		if f, ok := byAlias[name]; ok {
			if _, shadowed := values[f.Env]; shadowed || values[name] == "" {
				continue
			}
			if err := parseInto(f.value, values[name]); err != nil {
				return fmt.Errorf("%w: environment variable %s (%s, alias of %s): %v", ErrInvalid, name, f.Path, f.Env, err)
			}
			continue
		}
		f, ok := byEnv[name]
		if !ok {
			return fmt.Errorf("%w: environment variable %s names no config field%s (see ipamd config-reference)", ErrInvalid, name, renamedEnvHint(name, byEnv))
		}
		if err := parseInto(f.value, values[name]); err != nil {
			return fmt.Errorf("%w: environment variable %s (%s): %v", ErrInvalid, name, f.Path, err)
		}
	}
	return nil
}

func parseInto(v reflect.Value, s string) error {
	switch {
	case v.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration such as 30s, got %q", s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		v.SetInt(int64(n))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf(splitList(s)))
	case v.Type() == reflect.TypeFor[map[string][]string]():
		m, err := parseNodeMap(s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(m))
	default:
		return fmt.Errorf("unsupported field type %s", v.Type())
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parseNodeMap reads "node-1=198.18.1.0/24 fd00:1::/64,node-2=198.18.2.0/24":
// entries separated by commas, a name, "=", and CIDRs separated by spaces.
func parseNodeMap(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, entry := range splitList(s) {
		name, cidrs, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("want NODE=CIDR [CIDR...] entries separated by commas, got %q", entry)
		}
		out[name] = strings.Fields(cidrs)
	}
	return out, nil
}

func format(v reflect.Value) string {
	switch {
	case v.Type() == reflect.TypeFor[map[string][]string]():
		m := v.Interface().(map[string][]string)
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = name + "=" + strings.Join(m[name], " ")
		}
		return strings.Join(parts, ",")
	case v.Type() == reflect.TypeFor[time.Duration]():
		return time.Duration(v.Int()).String()
	case v.Kind() == reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(v.Interface())
	}
}
