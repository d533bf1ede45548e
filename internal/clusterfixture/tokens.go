package clusterfixture

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// BoundToken makes a token of ServiceAccount namespace/account bound to a
// new pod named pod on node, as the kubelet gets for the pods it runs: the
// API server then puts the node's name and UID into the token's user
// (authentication.kubernetes.io/node-name, node-uid), which is what
// admission policies tie a node's writes to. The ServiceAccount and the
// Node must exist. It returns a config of e's with that token.
func (e *Env) BoundToken(t testing.TB, namespace, account, pod, node string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: account, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "localhost/pause:test"}}},
	}
	got, err := e.Client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", namespace, pod, err)
	}
	tok, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: got.Name, UID: got.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s bound to Pod %s: %v", namespace, account, pod, err)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg
}

// Token makes a token of ServiceAccount namespace/account bound to
// nothing (no node in its user) and returns a config of e's with it.
func (e *Env) Token(t testing.TB, namespace, account string) *rest.Config {
	t.Helper()
	tok, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", namespace, account, err)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg
}
