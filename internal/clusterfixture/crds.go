package clusterfixture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// CRDFile is the pool's CRDs' path from the module root: the very file
// operators apply.
const CRDFile = "deploy/kubernetes/crds/pool.yaml"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallPoolCRDs is InstallCRDs on e's API server; it fails t on error.
func (e *Env) InstallPoolCRDs(t testing.TB) {
	t.Helper()
	if err := InstallCRDs(context.Background(), e.Dynamic, testsupport.Root(t)); err != nil {
		t.Fatal(err)
	}
}

// InstallCRDs creates every CRD of root/CRDFile, refusing unknown fields
// as the API server's strict validation does, and waits (at most
// testsupport.WaitDeadline) until each is Established and its resource
// answers a list.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface, root string) error {
	ctx, cancel := context.WithTimeout(ctx, testsupport.WaitDeadline)
	defer cancel()
	data, err := os.ReadFile(filepath.Join(root, CRDFile))
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var names []string
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%s: %w", CRDFile, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if _, err := dyn.Resource(crdResource).Create(ctx, &u, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			return fmt.Errorf("the API server refuses CRD %s of %s: %w", u.GetName(), CRDFile, err)
		}
		names = append(names, u.GetName())
	}
	for _, name := range names {
		if err := testsupport.Poll(ctx, "CRD "+name+" Established", func(ctx context.Context) error {
			return established(ctx, dyn, name)
		}); err != nil {
			return err
		}
	}
	// Established means the discovery document has the resource; a list
	// proves the storage serves it.
	for _, r := range []schema.GroupVersionResource{v1alpha1.IPPoolResource, v1alpha1.IPBlockResource} {
		if err := testsupport.Poll(ctx, "the API server to serve "+r.Resource, func(ctx context.Context) error {
			_, err := dyn.Resource(r).List(ctx, metav1.ListOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// established is nil once CRD name has condition Established True.
func established(ctx context.Context, dyn dynamic.Interface, name string) error {
	u, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return nil
		}
	}
	return fmt.Errorf("conditions %v", conds)
}
