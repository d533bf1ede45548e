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
	"node.ipamOnly": "node.ipamOnly was replaced by node.podWiring: " +
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
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(found, "; "))
}

func hasPath(n *yaml.Node, path []string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != path[0] {
			continue
		}
		return len(path) == 1 || hasPath(n.Content[i+1], path[1:])
	}
	return false
}

// renamedEnvHint is the hint for an IPAMD_ variable that names an old key,
// or "".
func renamedEnvHint(name string) string {
	for old, hint := range renamed {
		if EnvName(old) == name {
			return fmt.Sprintf(" (%s %s)", old, hint)
		}
	}
	return ""
}
