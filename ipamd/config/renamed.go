package config

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// renamed maps a key an older ipamd took, by YAML path, to what replaced
// it, so a config written for that version fails with the way forward
// rather than with "field not found", in the file and in the environment.
var renamed = map[string]string{
	"node.ipamOnly": "node.ipamOnly was replaced by podLinks.podWiring: " +
		"write podWiring: ipamOnly for ipamOnly: true, or leave it out (auto) for false",
	"reconcile.listTimeout": movedTo("advanced.reconcile.listTimeout"),
	"node.linkGrace":        movedTo("advanced.reconcile.linkGrace"),

	"runtime.startTimeout":   movedTo("advanced.adapter.startTimeout"),
	"runtime.minBackoff":     movedTo("advanced.adapter.minBackoff"),
	"runtime.maxBackoff":     movedTo("advanced.adapter.maxBackoff"),
	"runtime.healthInterval": movedTo("advanced.adapter.healthInterval"),

	"ipSource.aws.poolCheckInterval":        movedTo("advanced.aws.poolCheckInterval"),
	"ipSource.aws.shrinkInterval":           movedTo("advanced.aws.shrinkInterval"),
	"ipSource.aws.resyncInterval":           movedTo("advanced.aws.resyncInterval"),
	"ipSource.aws.leakedENICleanupInterval": movedTo("advanced.aws.leakedENICleanupInterval"),
	"ipSource.aws.maxAttempts":              movedTo("advanced.aws.maxAttempts"),
	"ipSource.aws.maxBackoff":               movedTo("advanced.aws.maxBackoff"),
}

// renamedBlocks maps a block an older ipamd took to its new name; the keys
// inside it kept theirs. node held the pod links on this host, a word that
// also named the podCIDR source; ipSource.node was that source's block.
var renamedBlocks = map[string]string{
	"node":          "podLinks",
	"ipSource.node": "ipSource.podCIDR",
}

// renamedValues maps, by field, a value an older ipamd took to its new
// spelling: the podCIDR source was ipSource.type node.
var renamedValues = map[string]map[string]string{
	"ipSource.type": {"node": SourcePodCIDR},
}

func movedTo(path string) string {
	return fmt.Sprintf("moved to %s (env %s)", path, EnvName(path))
}

// checkRenamed fails, naming every old key data sets and where it went.
// It runs before the strict decode, whose error would only say the key is
// unknown.
func checkRenamed(data []byte) error {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil || len(root.Content) == 0 {
		return nil // empty, or malformed: the strict decode reports it
	}
	var found []string
	for old, hint := range renamed {
		if hasPath(root.Content[0], strings.Split(old, ".")) {
			found = append(found, old+": "+hint)
		}
	}
	for old, now := range renamedBlocks {
		found = append(found, renamedBlockKeys(root.Content[0], old, now)...)
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(found, "; "))
}

// renamedBlockKeys names, for the block old if the file has it, each key
// in it and its new place under now; a key renamed on its own is left to
// its own hint.
func renamedBlockKeys(root *yaml.Node, old, now string) []string {
	block := lookup(root, strings.Split(old, "."))
	if block == nil {
		return nil
	}
	var found []string
	if block.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(block.Content); i += 2 {
			key := block.Content[i].Value
			if _, own := renamed[old+"."+key]; !own {
				found = append(found, old+"."+key+": "+movedTo(now+"."+key))
			}
		}
	}
	if len(found) == 0 && len(block.Content) == 0 {
		found = append(found, old+": renamed "+now)
	}
	return found
}

func hasPath(n *yaml.Node, path []string) bool { return lookup(n, path) != nil }

// lookup is the value at path in the mapping n, or nil.
func lookup(n *yaml.Node, path []string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != path[0] {
			continue
		}
		if len(path) == 1 {
			return n.Content[i+1]
		}
		return lookup(n.Content[i+1], path[1:])
	}
	return nil
}

// renamedValue is the hint for a value of the field at path that an older
// ipamd took and that is now spelt otherwise, or "".
func renamedValue(path, value string) string {
	now, ok := renamedValues[path][value]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s %q was renamed %q", path, value, now)
}

// renamedEnvHint is the hint for an IPAMD_ variable that names an old key,
// or "". byEnv finds the field a renamed block's key became.
func renamedEnvHint(name string, byEnv map[string]Field) string {
	for old, hint := range renamed {
		if EnvName(old) == name {
			return fmt.Sprintf(" (%s %s)", old, hint)
		}
	}
	for old, now := range renamedBlocks {
		rest, ok := strings.CutPrefix(name, EnvName(old)+"_")
		if !ok {
			continue
		}
		f, ok := byEnv[EnvName(now)+"_"+rest]
		if !ok {
			return fmt.Sprintf(" (%s was renamed %s)", old, now)
		}
		return fmt.Sprintf(" (%s.%s %s)", old, strings.TrimPrefix(f.Path, now+"."), movedTo(f.Path))
	}
	return ""
}
