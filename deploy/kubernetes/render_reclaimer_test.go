package kubernetes

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/sandboxipam/sandboxipam/internal/image"
)

// The reclaimer component adds a two-replica Deployment of the
// reclaimer, in the project's image, least privileged, with its own
// ServiceAccount; the overlays without it render no reclaimer.
func TestReclaimerComponent(t *testing.T) {
	if r, err := Render("containerd"); err != nil || r.Reclaimer != nil {
		t.Fatalf("containerd without the component: reclaimer %+v, %v", r.Reclaimer, err)
	}
	r, err := RenderWith("containerd", "reclaimer")
	if err != nil {
		t.Fatal(err)
	}
	rc := r.Reclaimer
	if rc == nil || rc.Deployment == nil || rc.ServiceAccount == nil || rc.ClusterRole == nil || rc.ClusterRoleBinding == nil {
		t.Fatalf("reclaimer objects %+v", rc)
	}
	d := rc.Deployment
	spec := d.Spec.Template.Spec
	if d.Namespace != "kube-system" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || !spec.HostNetwork || spec.ServiceAccountName != rc.ServiceAccount.Name {
		t.Errorf("Deployment %s/%s replicas %v hostNetwork %v serviceAccount %q", d.Namespace, d.Name, d.Spec.Replicas, spec.HostNetwork, spec.ServiceAccountName)
	}
	if f := spec.AutomountServiceAccountToken; f == nil || !*f {
		t.Error("the reclaimer's pod mounts no token")
	}
	if f := rc.ServiceAccount.AutomountServiceAccountToken; f == nil || *f {
		t.Error("the reclaimer's ServiceAccount mounts its token into every pod")
	}
	c := container(t, spec.Containers, "reclaimer")
	if c.Image != image.DefaultRef || !slices.Equal(c.Command, []string{"/usr/bin/sandboxipam-reclaimer"}) {
		t.Errorf("reclaimer image %q command %q", c.Image, c.Command)
	}
	checkLeastPrivilege(t, c)
	if sc := c.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the reclaimer may run as root; it needs no privilege at all")
	}
	fields := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if fields["POD_NAME"] != "metadata.name" {
		t.Errorf("downward API env %v", fields)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 61680 || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("ports %+v liveness %+v", c.Ports, c.LivenessProbe)
	}
	if d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "sandboxipam-reclaimer" || d.Spec.Template.Labels["app.kubernetes.io/name"] != "sandboxipam-reclaimer" {
		t.Errorf("selector %v, template labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
}

// The reclaimer's RBAC is exactly the verbs it calls.
func TestReclaimerRBACIsWhatItCalls(t *testing.T) {
	r, err := RenderWith("containerd", "reclaimer")
	if err != nil {
		t.Fatal(err)
	}
	rc := r.Reclaimer
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	wantCluster := []rbacv1.PolicyRule{rule("", "nodes", "get", "list", "watch"), rule("", "pods", "list", "watch"),
		rule("sandboxipam.io", "ippools", "list", "watch"), rule("sandboxipam.io", "ipblocks", "list", "watch", "delete")}
	if !slices.EqualFunc(rc.ClusterRole.Rules, wantCluster, equalRule) {
		t.Errorf("ClusterRole rules %+v, want %+v", rc.ClusterRole.Rules, wantCluster)
	}
	leader := rule("coordination.k8s.io", "leases", "get", "update")
	leader.ResourceNames = []string{"sandboxipam-reclaimer"}
	wantRoles := map[string][]rbacv1.PolicyRule{
		"kube-node-lease/sandboxipam-reclaimer-node-leases": {rule("coordination.k8s.io", "leases", "get", "list", "watch")},
		"kube-system/sandboxipam-reclaimer-leader":          {rule("coordination.k8s.io", "leases", "create"), leader},
		"kube-system/sandboxipam-reclaimer-ipamd-leases":    {rule("coordination.k8s.io", "leases", "get", "list", "watch")},
		"default/sandboxipam-reclaimer-events":              {rule("", "events", "create")},
	}
	if len(rc.Roles) != len(wantRoles) || len(rc.RoleBindings) != len(wantRoles) {
		t.Fatalf("%d Roles and %d RoleBindings, want %d of each", len(rc.Roles), len(rc.RoleBindings), len(wantRoles))
	}
	for _, role := range rc.Roles {
		if want, ok := wantRoles[role.Namespace+"/"+role.Name]; !ok || !slices.EqualFunc(role.Rules, want, equalRule) {
			t.Errorf("Role %s/%s rules %+v, want %+v", role.Namespace, role.Name, role.Rules, want)
		}
	}
	bound := func(subjects []rbacv1.Subject) bool {
		return len(subjects) == 1 && subjects[0].Kind == "ServiceAccount" && subjects[0].Name == rc.ServiceAccount.Name &&
			subjects[0].Namespace == "kube-system" && rc.ServiceAccount.Namespace == "kube-system"
	}
	for _, b := range rc.RoleBindings {
		if _, ok := wantRoles[b.Namespace+"/"+b.RoleRef.Name]; !ok || b.RoleRef.Kind != "Role" || !bound(b.Subjects) {
			t.Errorf("RoleBinding %s/%s %+v", b.Namespace, b.Name, b)
		}
	}
	if b := rc.ClusterRoleBinding; b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != rc.ClusterRole.Name || !bound(b.Subjects) {
		t.Errorf("ClusterRoleBinding %+v", b)
	}
	// ipamd's own account gains nothing from the component.
	if rules := r.ClusterRole.Rules; len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"nodes"}) {
		t.Errorf("ipamd's ClusterRole with the reclaimer: %+v", rules)
	}
}

func equalRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && len(a.NonResourceURLs) == 0 && len(b.NonResourceURLs) == 0
}
