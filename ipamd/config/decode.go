package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decodeYAML decodes the file data (named file in errors) over cfg. It
// first walks the YAML tree against Config's yaml tags, so that every
// mistake is reported with its line, the field's full YAML path, the value
// written and what the field takes, as the environment variables' errors
// are: `ipamd.yaml line 4: runtime.adaptr is not a field; did you mean
// runtime.adapter?`. yaml.v3's own errors name only the Go type
// ("field adaptr not found in type config.Runtime"). Only a tree that
// passes is decoded, strictly (unknown keys refused), so a misspelt field
// is never silently left at its default. An empty file means defaults.
func decodeYAML(file string, data []byte, cfg *Config) error {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
	}
	if len(root.Content) == 0 {
		return nil // comments only
	}
	var c yamlChecker
	c.value(root.Content[0], reflect.TypeFor[Config](), "")
	if len(c.errs) > 0 {
		errs := make([]error, len(c.errs))
		for i, e := range c.errs {
			errs[i] = fmt.Errorf("%s line %d: %s", file, e.line, e.msg)
		}
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		// The walk above should have caught it; never let it pass.
		return fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
	}
	return nil
}

// yamlChecker collects every mistake in a YAML tree, each with its line.
type yamlChecker struct {
	errs []yamlMistake
}

type yamlMistake struct {
	line int
	msg  string
}

func (c *yamlChecker) addf(n *yaml.Node, format string, args ...any) {
	c.errs = append(c.errs, yamlMistake{n.Line, fmt.Sprintf(format, args...)})
}

var durationType = reflect.TypeFor[time.Duration]()

// value checks the node n, found at path, against the Go type t.
func (c *yamlChecker) value(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		return // the field keeps its default, as yaml.v3 decodes it
	}
	switch {
	case t.Kind() == reflect.Struct && t != durationType:
		c.mapping(n, t, path)
	case t.Kind() == reflect.Map:
		c.mapOf(n, t, path)
	case t.Kind() == reflect.Slice:
		c.list(n, t, path)
	default:
		c.leaf(n, t, path)
	}
}

// mapping checks a struct's keys: each must name a field, once.
func (c *yamlChecker) mapping(n *yaml.Node, t reflect.Type, path string) {
	fields := yamlFields(t)
	if n.Kind != yaml.MappingNode {
		c.addf(n, "%s: %s is not a mapping of fields (%s takes %s)", display(path), describe(n), display(path), strings.Join(fieldNames(fields), ", "))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.ShortTag() == "!!merge" {
			c.merge(val, t, path)
			continue
		}
		p := join(path, key.Value)
		if first, dup := seen[key.Value]; dup {
			c.addf(key, "%s is set twice (first on line %d)", p, first)
			continue
		}
		seen[key.Value] = key.Line
		ft, ok := fields[key.Value]
		if !ok {
			c.unknown(key, path, fields)
			continue
		}
		c.value(val, ft, p)
	}
}

// merge checks the mappings a "<<" key merges into the struct at path.
func (c *yamlChecker) merge(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode {
		for _, m := range n.Content {
			c.merge(m, t, path)
		}
		return
	}
	c.mapping(n, t, path)
}

// unknown reports a key that names no field, with the nearest field.
func (c *yamlChecker) unknown(key *yaml.Node, path string, fields map[string]reflect.Type) {
	p := join(path, key.Value)
	if near := nearest(key.Value, fieldNames(fields)); near != "" {
		c.addf(key, "%s is not a field; did you mean %s?", p, join(path, near))
		return
	}
	c.addf(key, "%s is not a field (%s takes %s)", p, display(path), strings.Join(fieldNames(fields), ", "))
}

// mapOf checks a map field (ipSource.static.nodes): each value at
// path.<key>.
func (c *yamlChecker) mapOf(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.addf(n, "%s: %s is not %s", path, describe(n), typeWant(t))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			c.addf(key, "%s: %s is not a name", path, describe(key))
			continue
		}
		c.value(val, t.Elem(), path+"."+key.Value)
	}
}

// list checks a list field: each element at path[i].
func (c *yamlChecker) list(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.SequenceNode {
		c.addf(n, "%s: %s is not %s", path, describe(n), typeWant(t))
		return
	}
	for i, e := range n.Content {
		c.value(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
	}
}

// leaf checks a scalar by decoding it as yaml.v3 will. An integer field
// takes only an integer: yaml.v3 would truncate 1.5 to 1.
func (c *yamlChecker) leaf(n *yaml.Node, t reflect.Type, path string) {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil && t.Kind() == reflect.Int && n.ShortTag() != "!!int" {
		err = errors.New("not an integer")
	}
	if err != nil {
		c.addf(n, "%s: %s is not %s", path, describe(n), typeWant(t))
	}
}

// typeWant says, for an error, what a field of type t takes.
func typeWant(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration (like 30s or 5m)"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeWant(t.Elem()), "a ") + "s"
	case t.Kind() == reflect.Map:
		return "a mapping of names to " + strings.TrimPrefix(typeWant(t.Elem()), "a ")
	}
	return t.String()
}

// describe shows the node as the operator wrote it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// yamlFields maps the YAML keys of struct t to their fields' types, with
// the fields of ",inline" structs as the struct's own.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
			continue
		case strings.Contains(opts, "inline"):
			for k, v := range yamlFields(sf.Type) {
				out[k] = v
			}
			continue
		case name == "":
			name = strings.ToLower(sf.Name) // yaml.v3's default key
		}
		out[name] = sf.Type
	}
	return out
}

// fieldNames lists the keys of fields, sorted.
func fieldNames(fields map[string]reflect.Type) []string {
	return slices.Sorted(maps.Keys(fields))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// display names a path in a message; the top level is "the file".
func display(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}
