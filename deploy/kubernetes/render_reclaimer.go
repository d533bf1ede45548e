package kubernetes

import (
	"errors"
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

// addReclaimer decodes one of the reclaimer's objects strictly.
func (r *Rendered) addReclaimer(kind string, data []byte) error {
	if r.Reclaimer == nil {
		r.Reclaimer = &Reclaimer{}
	}
	rc := r.Reclaimer
	var target any
	switch kind {
	case "Deployment":
		if rc.Deployment != nil {
			return errors.New("second reclaimer Deployment")
		}
		rc.Deployment = &appsv1.Deployment{}
		target = rc.Deployment
	case "ServiceAccount":
		rc.ServiceAccount = &corev1.ServiceAccount{}
		target = rc.ServiceAccount
	case "ClusterRole":
		rc.ClusterRole = &rbacv1.ClusterRole{}
		target = rc.ClusterRole
	case "ClusterRoleBinding":
		rc.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{}
		target = rc.ClusterRoleBinding
	case "Role":
		var role rbacv1.Role
		if err := DecodeStrict(data, &role); err != nil {
			return err
		}
		rc.Roles = append(rc.Roles, role)
		return nil
	case "RoleBinding":
		var b rbacv1.RoleBinding
		if err := DecodeStrict(data, &b); err != nil {
			return err
		}
		rc.RoleBindings = append(rc.RoleBindings, b)
		return nil
	default:
		return fmt.Errorf("unexpected kind %q for the reclaimer", kind)
	}
	return DecodeStrict(data, target)
}
