// Package kubeenv starts a throw-away Kubernetes control plane for tests:
// etcd and kube-apiserver (StartAPIServer), and beside them
// kube-controller-manager and kube-scheduler, from the binaries that
// tools/kubernetes/build.sh caches (Binaries, CacheDir).
//
// Everything a component writes stays under Options.Dir: its data, its
// certificates (made with crypto/x509, no openssl), a token file and a
// kubeconfig whose one token is of system:masters, with the API server
// authorising everything (AlwaysAllow). That is enough for tests and far
// from a production cluster.
//
// The components run in a network namespace the caller names
// (Options.NetNS, entered with nsenter) or, without one, in the caller's
// own, on free loopback ports so that tests running side by side never
// meet. NetNSDialer dials from inside such a namespace, for clients of an
// API server that listens on the namespace's loopback. Each component runs
// in a process group of its own and gets SIGKILL should the process that
// started it die; APIServer.Stop ends them all.
//
// This package links no client-go: internal/clusterfixture builds
// client-go's config and clients for a server (RESTConfig, EnvFor), and
// is what a test reaches for to get an API server (Start); a client in
// the caller's own network namespace may also use a.Kubeconfig.
package kubeenv
