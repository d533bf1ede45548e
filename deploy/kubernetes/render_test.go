package kubernetes

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// overlayRuntime is what each overlay must give ipamd: its adapter, the
// runtime socket, and the IP source.
var overlayRuntime = map[string]struct{ adapter, socket, source string }{
	"containerd":      {"containerd", "/run/containerd/containerd.sock", "podCIDR"},
	"crio":            {"crio", "/run/crio/crio.sock", "podCIDR"},
	"cri-dockerd":     {"dockershim", "/run/cri-dockerd.sock", "podCIDR"},
	"aws":             {"containerd", "/run/containerd/containerd.sock", "aws"},
	"static-one-node": {"containerd", "/run/containerd/containerd.sock", "static"},
}

// testNodeName stands for the Node name the downward API gives NODE_NAME.
const testNodeName = "node-1"

func TestEveryOverlayIsTested(t *testing.T) {
	names, err := Overlays()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for name := range overlayRuntime {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("overlays %q, the test knows %q", names, want)
	}
}

func TestOverlaysRenderStrictly(t *testing.T) {
	for name, rt := range overlayRuntime {
		t.Run(name, func(t *testing.T) {
			r, err := Render(name)
			if err != nil {
				t.Fatal(err)
			}
			checkDaemonSet(t, r)
			ipamd := container(t, r.DaemonSet.Spec.Template.Spec.Containers, "ipamd")
			if got := env(ipamd, "IPAMD_RUNTIME_ADAPTER"); got != rt.adapter {
				t.Errorf("IPAMD_RUNTIME_ADAPTER %q, want %q", got, rt.adapter)
			}
			if got := env(ipamd, "IPAMD_RUNTIME_ENDPOINT"); got != rt.socket {
				t.Errorf("IPAMD_RUNTIME_ENDPOINT %q, want %q", got, rt.socket)
			}
			checkHostPaths(t, r.DaemonSet, rt.socket)
			checkNetNSMount(t, r.DaemonSet)
			cfg := loadConfig(t, r, ipamd)
			if cfg.IPSource.Type != rt.source || cfg.Runtime.Adapter != rt.adapter || cfg.Runtime.Endpoint != rt.socket {
				t.Errorf("ipamd would run with source %q adapter %q endpoint %q", cfg.IPSource.Type, cfg.Runtime.Adapter, cfg.Runtime.Endpoint)
			}
			if cfg.CNI.ConfListPath != "/host/etc/cni/net.d/10-sandboxipam.conflist" {
				t.Errorf("cni.confListPath %q", cfg.CNI.ConfListPath)
			}
			stop := ipamd.Lifecycle.PreStop.Exec.Command
			if !slices.Contains(stop, "--path="+cfg.CNI.ConfListPath) {
				t.Errorf("preStop %q does not remove the conflist ipamd writes (%s)", stop, cfg.CNI.ConfListPath)
			}
			if cfg.Introspection.Address != "127.0.0.1:61679" {
				t.Errorf("introspection on %q, the probes dial 127.0.0.1:61679", cfg.Introspection.Address)
			}
			if cfg.IPSource.NodeName != testNodeName || cfg.Routes.Nodes {
				t.Errorf("ipSource.nodeName %q (want the downward API's spec.nodeName), routes.nodes %v (want off without the component)", cfg.IPSource.NodeName, cfg.Routes.Nodes)
			}
			if cfg.IPSource.Type == "static" {
				if cidrs, _, _ := cfg.IPSource.StaticPool(); !slices.Equal(cidrs, []string{"198.18.0.0/24"}) {
					t.Errorf("static-one-node pool %q", cidrs)
				}
			}
		})
	}
}

// The routes component turns routes.nodes on and adds CAP_NET_ADMIN, and
// only it: every overlay without it adds no capability (checkDaemonSet).
func TestRoutesComponent(t *testing.T) {
	comps, err := Components()
	if err != nil || !slices.Equal(comps, []string{"pool", "reclaimer", "routes"}) {
		t.Fatalf("components %q, %v; the test knows [pool reclaimer routes]", comps, err)
	}
	for _, overlay := range []string{"containerd", "crio", "cri-dockerd"} {
		r, err := RenderWith(overlay, "routes")
		if err != nil {
			t.Fatal(err)
		}
		ipamd := container(t, r.DaemonSet.Spec.Template.Spec.Containers, "ipamd")
		cfg := loadConfig(t, r, ipamd)
		if !cfg.Routes.Nodes || cfg.IPSource.Type != "podCIDR" || cfg.Runtime.Adapter != overlayRuntime[overlay].adapter {
			t.Errorf("%s+routes: routes.nodes %v source %q adapter %q", overlay, cfg.Routes.Nodes, cfg.IPSource.Type, cfg.Runtime.Adapter)
		}
		sc := ipamd.SecurityContext
		if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s+routes: capabilities add %v drop %v, want add NET_ADMIN only, drop ALL", overlay, sc.Capabilities.Add, sc.Capabilities.Drop)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s+routes: the component loosened the security context: %+v", overlay, sc)
		}
		install := container(t, r.DaemonSet.Spec.Template.Spec.InitContainers, "install-cni")
		checkLeastPrivilege(t, install)
	}
}

// The pool component brings the two CRDs of crds/pool.yaml (which
// internal/clusterfixture installs on a real API server), switches ipamd to ipSource.type pool (IPPool "default"), and adds
// to the RBAC exactly the pool source's verbs; the rest of the overlay is
// untouched (no capability, the same probes and mounts).
func TestPoolComponent(t *testing.T) {
	for _, overlay := range []string{"containerd", "crio", "cri-dockerd"} {
		r, err := RenderWith(overlay, "pool")
		if err != nil {
			t.Fatal(err)
		}
		checkDaemonSet(t, r)
		checkHostPaths(t, r.DaemonSet, overlayRuntime[overlay].socket)
		ipamd := container(t, r.DaemonSet.Spec.Template.Spec.Containers, "ipamd")
		checkLeastPrivilege(t, ipamd)
		cfg := loadConfig(t, r, ipamd)
		if cfg.IPSource.Type != "pool" || cfg.IPSource.Pool.Pool != "default" || cfg.IPSource.NodeName != testNodeName || cfg.Routes.Nodes {
			t.Errorf("%s+pool: source %q pool %q node %q routes %v", overlay, cfg.IPSource.Type, cfg.IPSource.Pool.Pool, cfg.IPSource.NodeName, cfg.Routes.Nodes)
		}
		var names []string
		for name := range r.CRDs {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"ipblocks.sandboxipam.io", "ippools.sandboxipam.io"}) {
			t.Errorf("%s+pool: CRDs %q", overlay, names)
		}
		want := []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"sandboxipam.io"}, Resources: []string{"ipblocks"}, Verbs: []string{"create", "delete", "get", "list", "update", "watch"}},
			{APIGroups: []string{"sandboxipam.io"}, Resources: []string{"ippools"}, Verbs: []string{"get", "list", "watch"}},
		}
		if !reflect.DeepEqual(r.ClusterRole.Rules, want) {
			t.Errorf("%s+pool: ClusterRole rules %+v, want %+v", overlay, r.ClusterRole.Rules, want)
		}
		checkPoolPolicies(t, overlay, r)
		checkPoolLeaseRBAC(t, r)
		if fields := downwardEnv(ipamd); fields["POD_NAMESPACE"] != "metadata.namespace" {
			t.Errorf("%s+pool: downward API env %v, want POD_NAMESPACE from metadata.namespace (ipamd's Lease)", overlay, fields)
		}
	}
	// Without the component: no CRD.
	if r, err := Render("containerd"); err != nil || len(r.CRDs) != 0 {
		t.Errorf("containerd alone renders CRDs %v, %v", r.CRDs, err)
	}
}

// The RBAC lets ipamd's ServiceAccount get, list and watch Nodes and
// nothing more, bound to that account in kube-system.
func TestRBACIsNodesReadOnly(t *testing.T) {
	names, err := Overlays()
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range names {
		r, err := Render(overlay)
		if err != nil {
			t.Fatal(err)
		}
		rules := r.ClusterRole.Rules
		if len(rules) != 1 || !slices.Equal(rules[0].APIGroups, []string{""}) || !slices.Equal(rules[0].Resources, []string{"nodes"}) ||
			!slices.Equal(rules[0].Verbs, []string{"get", "list", "watch"}) || len(rules[0].ResourceNames) != 0 || len(rules[0].NonResourceURLs) != 0 {
			t.Errorf("%s: ClusterRole rules %+v, want nodes get/list/watch only", overlay, rules)
		}
		b := r.ClusterRoleBinding
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != r.ClusterRole.Name || len(b.Subjects) != 1 ||
			b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != r.ServiceAccount.Name || b.Subjects[0].Namespace != "kube-system" {
			t.Errorf("%s: binding %+v does not bind %s to ServiceAccount kube-system/%s", overlay, b, r.ClusterRole.Name, r.ServiceAccount.Name)
		}
		ipamd := container(t, r.DaemonSet.Spec.Template.Spec.Containers, "ipamd")
		var nodeName *corev1.EnvVar
		for i := range ipamd.Env {
			if ipamd.Env[i].Name == "NODE_NAME" {
				nodeName = &ipamd.Env[i]
			}
		}
		if nodeName == nil || nodeName.ValueFrom == nil || nodeName.ValueFrom.FieldRef == nil || nodeName.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
			t.Errorf("%s: NODE_NAME %+v, want it from the downward API's spec.nodeName", overlay, nodeName)
		}
	}
}

func checkDaemonSet(t *testing.T, r Rendered) {
	t.Helper()
	ds := r.DaemonSet
	spec := ds.Spec.Template.Spec
	if ds.Namespace != "kube-system" || r.ConfigMap.Namespace != "kube-system" || r.ServiceAccount.Namespace != "kube-system" {
		t.Errorf("namespaces %q %q %q, want kube-system", ds.Namespace, r.ConfigMap.Namespace, r.ServiceAccount.Namespace)
	}
	if !spec.HostNetwork || spec.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v priorityClassName %q", spec.HostNetwork, spec.PriorityClassName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v, want one that tolerates every taint", spec.Tolerations)
	}
	if spec.ServiceAccountName != r.ServiceAccount.Name {
		t.Errorf("serviceAccountName %q, the ServiceAccount is %q", spec.ServiceAccountName, r.ServiceAccount.Name)
	}
	if f := spec.AutomountServiceAccountToken; f == nil || !*f {
		t.Error("the pod mounts no ServiceAccount token; the node source reads the Node with it")
	}
	if f := r.ServiceAccount.AutomountServiceAccountToken; f == nil || *f {
		t.Error("the ServiceAccount mounts its token into every pod using it; only ipamd's pod spec asks for it")
	}
	if len(ds.Spec.Selector.MatchLabels) != 1 || ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "sandboxipam" {
		t.Errorf("selector %v", ds.Spec.Selector.MatchLabels)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the template labels %v", k, v, ds.Spec.Template.Labels)
		}
	}
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("%d init containers and %d containers, want 1 and 1", len(spec.InitContainers), len(spec.Containers))
	}
	install := container(t, spec.InitContainers, "install-cni")
	if !slices.Equal(install.Command, []string{"/usr/bin/sandboxipam-install", "install-binary", "--dst-dir=/host/opt/cni/bin", "--shared=" + image.PortMapPath, image.CNIPluginPath}) {
		t.Errorf("install-cni command %q", install.Command)
	}
	ipamd := container(t, spec.Containers, "ipamd")
	for _, c := range []corev1.Container{install, ipamd} {
		if c.Image != image.DefaultRef {
			t.Errorf("%s: image %q, make image builds %q", c.Name, c.Image, image.DefaultRef)
		}
		checkLeastPrivilege(t, c)
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v, want CPU and memory requests and a memory limit", c.Name, c.Resources)
		}
	}
	probes := map[string]*corev1.Probe{"startup": ipamd.StartupProbe, "liveness": ipamd.LivenessProbe, "readiness": ipamd.ReadinessProbe}
	wantPath := map[string]string{"startup": "/healthz", "liveness": "/healthz", "readiness": "/readyz"}
	for kind, p := range probes {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing or not HTTP", kind)
			continue
		}
		if p.HTTPGet.Host != "127.0.0.1" || p.HTTPGet.Port.IntValue() != 61679 || p.HTTPGet.Path != wantPath[kind] {
			t.Errorf("%s probe %s:%s%s, want 127.0.0.1:61679%s", kind, p.HTTPGet.Host, p.HTTPGet.Port.String(), p.HTTPGet.Path, wantPath[kind])
		}
	}
	if ipamd.Lifecycle == nil || ipamd.Lifecycle.PreStop == nil || ipamd.Lifecycle.PreStop.Exec == nil {
		t.Fatal("ipamd has no exec preStop hook")
	}
	if got := ipamd.Lifecycle.PreStop.Exec.Command; len(got) < 2 || got[0] != "/usr/bin/sandboxipam-install" || got[1] != "remove-conflist" {
		t.Errorf("preStop %q", got)
	}
	var cmVolume string
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			cmVolume = v.ConfigMap.Name
		}
	}
	if cmVolume != r.ConfigMap.Name || !strings.HasPrefix(cmVolume, "sandboxipam-config-") {
		t.Errorf("config volume names %q, the ConfigMap is %q", cmVolume, r.ConfigMap.Name)
	}
}

func checkLeastPrivilege(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Errorf("%s: no securityContext.capabilities", c.Name)
		return
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: capabilities drop %v add %v, want drop ALL and add nothing", c.Name, sc.Capabilities.Drop, sc.Capabilities.Add)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation not false", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: root filesystem writable", c.Name)
	}
}

// checkHostPaths: the runtime socket, ipamd's state directories and the
// CNI directories are the only host paths, and none is mounted twice.
func checkHostPaths(t *testing.T, ds *appsv1.DaemonSet, socket string) {
	t.Helper()
	want := map[string]string{
		"runtime-socket": socket,
		"run":            "/run/sandboxipam",
		"state":          "/var/lib/sandboxipam",
		"cni-bin":        "/opt/cni/bin",
		"cni-conf":       "/etc/cni/net.d",
		"netns":          "/var/run/netns",
	}
	got := map[string]string{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			got[v.Name] = v.HostPath.Path
		}
	}
	if len(got) != len(want) {
		t.Errorf("hostPath volumes %v, want %v", got, want)
	}
	for name, p := range want {
		if got[name] != p {
			t.Errorf("hostPath %s = %q, want %q", name, got[name], p)
		}
	}
}

// checkNetNSMount: ipamd sees the runtimes' pod network namespaces
// read-only, at the path CNI records (the host's), with the propagation
// that shows it namespaces made after it started (issue 39 item 4).
func checkNetNSMount(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	ipamd := container(t, ds.Spec.Template.Spec.Containers, "ipamd")
	var found []corev1.VolumeMount
	for _, m := range ipamd.VolumeMounts {
		if m.Name == "netns" {
			found = append(found, m)
		}
	}
	want := corev1.MountPropagationHostToContainer
	if len(found) != 1 || found[0].MountPath != "/var/run/netns" || !found[0].ReadOnly ||
		found[0].MountPropagation == nil || *found[0].MountPropagation != want || found[0].SubPath != "" {
		t.Errorf("ipamd's netns mounts = %+v, want one of /var/run/netns, read-only, %s", found, want)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "netns" && (v.HostPath == nil || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
			t.Errorf("volume netns = %+v, want hostPath /var/run/netns, DirectoryOrCreate", v.VolumeSource)
		}
	}
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// loadConfig loads the ConfigMap's ipamd.yaml with the container's
// environment through ipamd's own loader, which rejects unknown keys and
// invalid values: the manifests cannot hand ipamd a config it refuses.
func loadConfig(t *testing.T, r Rendered, c corev1.Container) config.Config {
	t.Helper()
	data, ok := r.ConfigMap.Data["ipamd.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no ipamd.yaml", r.ConfigMap.Name)
	}
	path := filepath.Join(t.TempDir(), "ipamd.yaml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var environ []string
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			value = testNodeName
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			value = r.DaemonSet.Namespace
		}
		environ = append(environ, e.Name+"="+value)
	}
	cfg, err := config.Load(path, environ)
	if err != nil {
		t.Fatalf("ipamd refuses the rendered config: %v", err)
	}
	return cfg
}

// TestDecodeStrictRejects proves the decoder the render uses fails on the
// mistakes an API server would otherwise drop silently.
func TestDecodeStrictRejects(t *testing.T) {
	cases := map[string]string{
		"unknown field":   `{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{"template":{"spec":{"hostNetwrok":true}}}}`,
		"wrong case":      `{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{"template":{"spec":{"HostNetwork":true}}}}`,
		"duplicate field": `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"a","name":"b"}}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			var ds appsv1.DaemonSet
			if err := DecodeStrict([]byte(doc), &ds); !errors.Is(err, ErrStrictDecode) {
				t.Fatalf("err = %v, want ErrStrictDecode", err)
			}
		})
	}
	var ds appsv1.DaemonSet
	if err := DecodeStrict([]byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{"template":{"spec":{"hostNetwork":true}}}}`), &ds); err != nil || !ds.Spec.Template.Spec.HostNetwork {
		t.Fatalf("a correct document: %v", err)
	}
}

// checkPoolPolicies: components/pool brings the six admission policies
// (a node's token writes only its node's IPBlocks, its own Lease and its
// own Events; a claim is a block of its pool; an IPPool keeps its
// blocks), each bound with Deny, cluster-scoped, matching ipamd's
// ServiceAccount as rendered, except sandboxipam-pool-blocks, which judges
// every user's IPPool writes. Their effect is tested on a real API server
// (TestNodeTokenActsForItsNodeOnly, TestPoolEditsKeepTheirBlocks and
// TestNodeTokenWritesOnlyItsOwnEvents in ipamd/ipsource/pool).
func checkPoolPolicies(t *testing.T, overlay string, r Rendered) {
	t.Helper()
	sa := "system:serviceaccount:" + r.ServiceAccount.Namespace + ":" + r.ServiceAccount.Name
	var names []string
	for _, p := range r.Policies {
		names = append(names, p.Name)
		if p.Name == "sandboxipam-pool-blocks" {
			if p.Namespace != "" || len(p.Spec.MatchConditions) != 0 {
				t.Errorf("%s+pool: policy %s namespace %q match conditions %+v, want cluster-scoped, matching every user", overlay, p.Name, p.Namespace, p.Spec.MatchConditions)
			}
			continue
		}
		if p.Namespace != "" || len(p.Spec.MatchConditions) != 1 || !strings.Contains(p.Spec.MatchConditions[0].Expression, "'"+sa+"'") {
			t.Errorf("%s+pool: policy %s namespace %q match conditions %+v, want cluster-scoped, matching %s", overlay, p.Name, p.Namespace, p.Spec.MatchConditions, sa)
		}
	}
	for _, b := range r.PolicyBindings {
		if b.Spec.PolicyName != b.Name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
			t.Errorf("%s+pool: binding %s %+v, want Deny of the policy of its name", overlay, b.Name, b.Spec)
		}
	}
	want := []string{"sandboxipam-block-geometry", "sandboxipam-node-block-events", "sandboxipam-node-blocks", "sandboxipam-node-events", "sandboxipam-node-lease", "sandboxipam-pool-blocks"}
	if slices.Sort(names); !slices.Equal(names, want) || len(r.PolicyBindings) != len(want) {
		t.Errorf("%s+pool: policies %v and %d bindings, want the six", overlay, names, len(r.PolicyBindings))
	}
}

// downwardEnv maps each env var from the downward API to its field path.
func downwardEnv(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			out[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	return out
}

// checkPoolLeaseRBAC: the pool component grants ipamd exactly the verbs
// of its own Lease (package ipsource/pool/lease) in its namespace, and
// of its Events in default, both bound to its ServiceAccount.
func checkPoolLeaseRBAC(t *testing.T, r Rendered) {
	t.Helper()
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	want := map[string][]rbacv1.PolicyRule{
		"kube-system/sandboxipam-ipamd-lease": {rule("coordination.k8s.io", "leases", "create", "get", "update")},
		"default/sandboxipam-ipamd-events":    {rule("events.k8s.io", "events", "create", "patch")},
	}
	if len(r.Roles) != len(want) || len(r.RoleBindings) != len(want) {
		t.Fatalf("%d Roles and %d RoleBindings, want %d of each", len(r.Roles), len(r.RoleBindings), len(want))
	}
	for _, role := range r.Roles {
		if w, ok := want[role.Namespace+"/"+role.Name]; !ok || !reflect.DeepEqual(role.Rules, w) {
			t.Errorf("Role %s/%s rules %+v, want %+v", role.Namespace, role.Name, role.Rules, w)
		}
	}
	for _, b := range r.RoleBindings {
		_, ok := want[b.Namespace+"/"+b.RoleRef.Name]
		if !ok || b.RoleRef.Kind != "Role" || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" ||
			b.Subjects[0].Name != r.ServiceAccount.Name || b.Subjects[0].Namespace != r.ServiceAccount.Namespace {
			t.Errorf("RoleBinding %s/%s %+v", b.Namespace, b.Name, b)
		}
	}
}
