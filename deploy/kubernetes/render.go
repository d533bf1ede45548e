package kubernetes

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

//go:embed base overlays components crds
var manifests embed.FS

// ErrStrictDecode: a rendered object has a field its k8s.io/api type does
// not know, or names a field twice.
var ErrStrictDecode = errors.New("manifest does not decode strictly")

// Overlays are the overlays under overlays/, one per directory: one per
// runtime, aws, and static-one-node.
func Overlays() ([]string, error) { return dirs("overlays") }

// Components are the kustomize Components under components/ (routes),
// added to an overlay with RenderWith.
func Components() ([]string, error) { return dirs("components") }

func dirs(root string) ([]string, error) {
	entries, err := fs.ReadDir(manifests, root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Rendered is what an overlay renders to: exactly the objects sandboxipam
// installs. Render fails on any other kind, so an added object is noticed
// by the test that inspects these.
type Rendered struct {
	DaemonSet          *appsv1.DaemonSet
	ConfigMap          *corev1.ConfigMap
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Roles and RoleBindings are ipamd's namespaced grants (components/pool
	// brings its own Lease's and its Events').
	Roles        []rbacv1.Role
	RoleBindings []rbacv1.RoleBinding
	// Reclaimer is what components/reclaimer adds; nil without it.
	Reclaimer *Reclaimer
	// Policies and PolicyBindings are the admission policies
	// components/pool adds: each IPBlock write by ipamd's ServiceAccount
	// is for the node its token is bound to, and a claim is a block of a
	// pool.
	Policies       []admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// CRDs are the CustomResourceDefinitions (components/pool brings the
	// cluster pool's), by name, as JSON.
	CRDs map[string][]byte
}

// Render runs kustomize on overlays/<overlay> and decodes each object
// strictly into its k8s.io/api type.
func Render(overlay string) (Rendered, error) { return RenderWith(overlay) }

// RenderWith renders overlays/<overlay> with components/<name> of each
// components added, as a kustomization of the operator's own would:
//
//	resources: [<overlay>]
//	components: [<component>...]
func RenderWith(overlay string, components ...string) (Rendered, error) {
	fsys, err := inMemory()
	if err != nil {
		return Rendered{}, err
	}
	dir := path.Join("/overlays", overlay)
	if len(components) > 0 {
		dir = "/rendered"
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../overlays/" + overlay + "\ncomponents:\n"
		for _, c := range components {
			k += "  - ../components/" + c + "\n"
		}
		if err := fsys.WriteFile("/rendered/kustomization.yaml", []byte(k)); err != nil {
			return Rendered{}, fmt.Errorf("render overlay %s: %w", overlay, err)
		}
	}
	kz := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := kz.Run(fsys, dir)
	if err != nil {
		return Rendered{}, fmt.Errorf("render overlay %s: %w", overlay, err)
	}
	var r Rendered
	for _, res := range resources.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return Rendered{}, fmt.Errorf("render overlay %s: %s: %w", overlay, res.CurId(), err)
		}
		add := r.add
		if isReclaimers(res.GetName()) {
			add = r.addReclaimer
		}
		if err := add(res.GetKind(), data); err != nil {
			return Rendered{}, fmt.Errorf("render overlay %s: %s %s: %w", overlay, res.GetKind(), res.GetName(), err)
		}
	}
	if r.DaemonSet == nil || r.ConfigMap == nil || r.ServiceAccount == nil || r.ClusterRole == nil || r.ClusterRoleBinding == nil {
		return Rendered{}, fmt.Errorf("render overlay %s: want a DaemonSet, a ConfigMap, a ServiceAccount, a ClusterRole and a ClusterRoleBinding, got %+v", overlay, r)
	}
	return r, nil
}

func (r *Rendered) add(kind string, data []byte) error {
	switch kind {
	case "CustomResourceDefinition":
		return r.addCRD(data)
	case "DaemonSet":
		return decodeOne(data, &r.DaemonSet, kind)
	case "ConfigMap":
		return decodeOne(data, &r.ConfigMap, kind)
	case "ServiceAccount":
		return decodeOne(data, &r.ServiceAccount, kind)
	case "ClusterRole":
		return decodeOne(data, &r.ClusterRole, kind)
	case "ClusterRoleBinding":
		return decodeOne(data, &r.ClusterRoleBinding, kind)
	case "ValidatingAdmissionPolicy":
		return appendDecoded(data, &r.Policies)
	case "ValidatingAdmissionPolicyBinding":
		return appendDecoded(data, &r.PolicyBindings)
	case "Role":
		return appendDecoded(data, &r.Roles)
	case "RoleBinding":
		return appendDecoded(data, &r.RoleBindings)
	}
	return fmt.Errorf("unexpected kind %q", kind)
}

// decodeOne decodes data strictly into a new object at *slot; a second
// object for the same slot is an error naming what.
func decodeOne[T any](data []byte, slot **T, what string) error {
	if *slot != nil {
		return errors.New("second " + what)
	}
	*slot = new(T)
	return DecodeStrict(data, *slot)
}

// appendDecoded decodes data strictly and appends the object to *list.
func appendDecoded[T any](data []byte, list *[]T) error {
	var v T
	if err := DecodeStrict(data, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// DecodeStrict decodes JSON into a k8s.io/api object as the API server's
// strict field validation does: field names match case-sensitively, and an
// unknown or duplicate field is an ErrStrictDecode.
func DecodeStrict(data []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(data, into)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%w: %w", ErrStrictDecode, errors.Join(strict...))
	}
	return nil
}

// inMemory copies the embedded manifests into kustomize's in-memory file
// system, rooted at /, so rendering never depends on the working directory.
func inMemory() (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := manifests.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile("/"+p, data)
	})
	if err != nil {
		return nil, fmt.Errorf("load manifests: %w", err)
	}
	return mem, nil
}

// addCRD keeps a CRD as rendered; the API server, not a Go type of ours,
// is its strict validator (internal/clusterfixture installs it in the tests).
func (r *Rendered) addCRD(data []byte) error {
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &meta); err != nil || meta.Metadata.Name == "" {
		return fmt.Errorf("CustomResourceDefinition without a name: %v", err)
	}
	if r.CRDs == nil {
		r.CRDs = map[string][]byte{}
	}
	if _, dup := r.CRDs[meta.Metadata.Name]; dup {
		return fmt.Errorf("second CustomResourceDefinition %s", meta.Metadata.Name)
	}
	r.CRDs[meta.Metadata.Name] = data
	return nil
}
