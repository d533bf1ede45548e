package kubernetes

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// ReclaimerName prefixes every object of components/reclaimer.
const ReclaimerName = "sandboxipam-reclaimer"

// Reclaimer is what components/reclaimer adds: the reclaimer's
// Deployment, its ServiceAccount and its RBAC.
type Reclaimer struct {
	Deployment         *appsv1.Deployment
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Roles              []rbacv1.Role
	RoleBindings       []rbacv1.RoleBinding
}

// isReclaimers says whether a rendered object belongs to the reclaimer.
func isReclaimers(name string) bool { return strings.HasPrefix(name, ReclaimerName) }

// addReclaimer decodes one of the reclaimer's objects strictly; it has
// one object of each kind but Role and RoleBinding.
func (r *Rendered) addReclaimer(kind string, data []byte) error {
	if r.Reclaimer == nil {
		r.Reclaimer = &Reclaimer{}
	}
	rc := r.Reclaimer
	switch kind {
	case "Deployment":
		return decodeOne(data, &rc.Deployment, "reclaimer "+kind)
	case "ServiceAccount":
		return decodeOne(data, &rc.ServiceAccount, "reclaimer "+kind)
	case "ClusterRole":
		return decodeOne(data, &rc.ClusterRole, "reclaimer "+kind)
	case "ClusterRoleBinding":
		return decodeOne(data, &rc.ClusterRoleBinding, "reclaimer "+kind)
	case "Role":
		return appendDecoded(data, &rc.Roles)
	case "RoleBinding":
		return appendDecoded(data, &rc.RoleBindings)
	}
	return fmt.Errorf("unexpected kind %q for the reclaimer", kind)
}
