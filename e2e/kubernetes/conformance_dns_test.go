package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// clusterDNSIP and clusterDNSIPv6 are the kube-dns Service's addresses in
// the service CIDRs, the tenth of each as kubeadm picks it; every cluster
// node's kubelet names the IPv4 one (the primary family) as clusterDNS.
const clusterDNSIP, clusterDNSIPv6 = "198.19.200.10", "fd00:19:200::a"

// corednsManifests are CoreDNS's objects as kubeadm installs them (v1.37:
// cmd/kubeadm/app/phases/addons/dns/manifests.go), with our image and
// Service addresses: the Service is dual-stack, so CoreDNS is reached on
// either family, as on a dual-stack cluster whose operator asked for it
// (its kubernetes plugin answers AAAA for every Service with an IPv6
// ClusterIP on its own). The Corefile drops kubeadm's "forward . /etc/resolv.conf"
// and "loop": nothing upstream is reachable (no traffic leaves the
// machine), CoreDNS runs with dnsPolicy Default and kubelet's empty
// resolvConf, and forward refuses to start without a nameserver; loop only
// detects a forwarding loop.
var corednsManifests = []apiObject{
	{"/api/v1/namespaces/kube-system/serviceaccounts", `
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}`},
	{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]`},
	{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]`},
	{"/api/v1/namespaces/kube-system/configmaps", `
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health {
           lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
           ttl 30
        }
        prometheus :9153
        cache 30 {
           disable success cluster.local
           disable denial cluster.local
        }
        reload
        loadbalance
    }`},
	{"/apis/apps/v1/namespaces/kube-system/deployments", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      priorityClassName: system-cluster-critical
      serviceAccountName: coredns
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector: {matchExpressions: [{key: k8s-app, operator: In, values: [kube-dns]}]}
              topologyKey: kubernetes.io/hostname
      tolerations:
      - {key: CriticalAddonsOnly, operator: Exists}
      - {key: node-role.kubernetes.io/control-plane, effect: NoSchedule}
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: coredns
        image: ` + corednsRef + `
        imagePullPolicy: IfNotPresent
        resources:
          limits: {memory: 170Mi}
          requests: {cpu: 100m, memory: 70Mi}
        args: ["-conf", "/etc/coredns/Corefile"]
        volumeMounts: [{name: config-volume, mountPath: /etc/coredns, readOnly: true}]
        ports:
        - {containerPort: 53, name: dns, protocol: UDP}
        - {containerPort: 53, name: dns-tcp, protocol: TCP}
        - {containerPort: 9153, name: metrics, protocol: TCP}
        livenessProbe:
          httpGet: {path: /health, port: 8080, scheme: HTTP}
          initialDelaySeconds: 60
          timeoutSeconds: 5
          successThreshold: 1
          failureThreshold: 5
        readinessProbe:
          httpGet: {path: /ready, port: 8181, scheme: HTTP}
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
          readOnlyRootFilesystem: true
      dnsPolicy: Default
      volumes:
      - name: config-volume
        configMap: {name: coredns, items: [{key: Corefile, path: Corefile}]}`},
	{"/api/v1/namespaces/kube-system/services", `
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/cluster-service: "true", kubernetes.io/name: CoreDNS}
  annotations: {prometheus.io/port: "9153", prometheus.io/scrape: "true"}
spec:
  selector: {k8s-app: kube-dns}
  ipFamilyPolicy: RequireDualStack
  clusterIP: ` + clusterDNSIP + `
  clusterIPs: [` + clusterDNSIP + `, "` + clusterDNSIPv6 + `"]
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
  - {name: metrics, port: 9153, protocol: TCP, targetPort: 9153}`},
}

// installCoreDNS creates CoreDNS's objects and waits until both replicas
// are available and CoreDNS answers through the kube-dns Service on both
// families: the kubernetes Service's name (IPv4 alone) on its IPv4
// address, and kube-dns's own AAAA record on its IPv6 one.
func (c *cluster) installCoreDNS(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, o := range corednsManifests {
		body, err := yaml.YAMLToJSON([]byte(strings.TrimSpace(o.obj.(string))))
		if err != nil {
			t.Fatalf("CoreDNS manifest for %s: %v", o.path, err)
		}
		if err := c.api.create(ctx, o.path, json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	testsupport.WaitFor(t, 5*time.Minute, "CoreDNS's two replicas are available", func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := c.api.get(ctx, "/apis/apps/v1/namespaces/kube-system/deployments/coredns", &d); err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
	// From a node's network namespace, through kube-proxy's rules for the
	// Service, with busybox's nslookup (the agnhost image's).
	n, busybox := c.nodes[0], conformanceBinary(t, "busybox")
	name := "kubernetes.default.svc.cluster.local"
	testsupport.WaitFor(t, 2*time.Minute, "CoreDNS answers for "+name, func(ctx context.Context) error {
		out, err := runCtx(ctx, "nsenter", "--net="+n.netns, "--", busybox, "nslookup", name, clusterDNSIP)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "Address: "+kubernetesServiceIP) {
			return fmt.Errorf("nslookup %s: %s", name, out)
		}
		return nil
	})
	// Through kube-proxy's ip6tables rules to a pod's IPv6 address.
	dnsName := "kube-dns.kube-system.svc.cluster.local"
	testsupport.WaitFor(t, 2*time.Minute, "CoreDNS answers AAAA for "+dnsName+" on "+clusterDNSIPv6, func(ctx context.Context) error {
		out, err := runCtx(ctx, "nsenter", "--net="+n.netns, "--", busybox, "nslookup", "-type=AAAA", dnsName, clusterDNSIPv6)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "Address: "+clusterDNSIPv6) {
			return fmt.Errorf("nslookup -type=AAAA %s %s: %s", dnsName, clusterDNSIPv6, out)
		}
		return nil
	})
	c.logf(t, "CoreDNS available behind %s and %s: %s is %s, %s is %s", clusterDNSIP, clusterDNSIPv6, name, kubernetesServiceIP, dnsName, clusterDNSIPv6)
}
