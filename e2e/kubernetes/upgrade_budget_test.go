package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// budgetWatch checks that a rollout goes node by node, as
// maxUnavailable 1 says, from every change of the ipamd pods in the order
// the API server made them (a watch, not polls: a pod ready for less than
// a poll's interval would be missed, and the DaemonSet controller acts on
// exactly such a moment).
//
// What maxUnavailable bounds is the ready ipamds a rollout takes down,
// not the nodes without a ready ipamd: the controller replaces an old pod
// that is not available at once, outside the budget (its
// rolling_update.go: "out of date and not available, allowing
// replacement"), and ipamd is not ready while it has no free address (a
// pool node between its last address and its next block), which a
// rollout that adds pods meets. So the rule checked is: when the
// controller deletes a ready old ipamd, the new ipamd of every node it
// took before has been ready. A new ipamd that was ready once and then
// not (its block full) does not break it: the controller saw it ready.
type budgetWatch struct {
	old    map[k8stypes.UID]bool
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	lastReady map[k8stypes.UID]bool // old pod -> ready at its last change
	judged    map[k8stypes.UID]bool // old pods whose deletion was judged
	newReady  map[string]bool       // node -> a new ipamd was ready there
	taken     []string              // nodes whose ready old ipamd was deleted, in order
	notReady  []string              // old ipamds deleted while not ready, in words
	problems  []string
	err       error // the watch could not follow every change
}

const ipamdSelector = "app.kubernetes.io/name=sandboxipam"

// watchBudget starts following the ipamd pods; old are the pods before
// the rollout.
func (c *cluster) watchBudget(ctx context.Context, old []k8stypes.UID) (*budgetWatch, error) {
	var list corev1.PodList
	if err := c.api.get(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+url.QueryEscape(ipamdSelector), &list); err != nil {
		return nil, err
	}
	w := &budgetWatch{old: map[k8stypes.UID]bool{}, done: make(chan struct{}), lastReady: map[k8stypes.UID]bool{},
		judged: map[k8stypes.UID]bool{}, newReady: map[string]bool{}}
	for _, uid := range old {
		w.old[uid] = true
	}
	for i := range list.Items {
		w.observe("ADDED", &list.Items[i])
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		w.follow(ctx, c.api, list.ResourceVersion)
	}()
	return w, nil
}

// follow reads the watch from rv until ctx ends. A watch the API server
// closes is opened again where it ended; one that cannot be (its
// resourceVersion too old, or an error) is recorded in err, for the
// rollout's changes can no longer all be seen.
func (w *budgetWatch) follow(ctx context.Context, api *apiClient, rv string) {
	for ctx.Err() == nil {
		path := "/api/v1/namespaces/kube-system/pods?watch=1&allowWatchBookmarks=true&labelSelector=" + url.QueryEscape(ipamdSelector) +
			"&resourceVersion=" + url.QueryEscape(rv)
		body, err := api.stream(ctx, path)
		if err != nil {
			w.fail(ctx, err)
			return
		}
		rv, err = w.readEvents(body, rv)
		body.Close()
		if err != nil {
			w.fail(ctx, err)
			return
		}
	}
}

// readEvents observes every event of one watch response and returns the
// resourceVersion reached.
func (w *budgetWatch) readEvents(body io.Reader, rv string) (string, error) {
	dec := json.NewDecoder(body)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return rv, nil // the API server closed the watch (or ctx ended): open it again
		}
		var p corev1.Pod
		if err := json.Unmarshal(ev.Object, &p); err != nil {
			return rv, fmt.Errorf("watch event %s: %w", ev.Type, err)
		}
		switch ev.Type {
		case "ERROR":
			return rv, fmt.Errorf("the watch ended with an error: %s", ev.Object)
		case "BOOKMARK":
		default:
			w.observe(ev.Type, &p)
		}
		rv = p.ResourceVersion
	}
}

func (w *budgetWatch) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// observe is one change of one ipamd pod.
func (w *budgetWatch) observe(kind string, p *corev1.Pod) {
	node := p.Spec.NodeName
	if node == "" {
		return
	}
	ready := podReady(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.old[p.UID]:
		if ready && p.DeletionTimestamp == nil {
			w.newReady[node] = true
		}
	case w.judged[p.UID]:
	case p.DeletionTimestamp != nil || kind == "DELETED":
		// The controller's delete: the object carries the status it
		// had then (a DELETED without a change before it, the last).
		w.judged[p.UID] = true
		if p.DeletionTimestamp == nil {
			ready = w.lastReady[p.UID]
		}
		if !ready {
			w.notReady = append(w.notReady, node)
			return
		}
		for _, n := range w.taken {
			if !w.newReady[n] {
				w.problems = append(w.problems, fmt.Sprintf("%s's ready ipamd %s was deleted while %s's new ipamd had never been ready", node, p.Name, n))
			}
		}
		w.taken = append(w.taken, node)
	default:
		w.lastReady[p.UID] = ready
	}
}

// stop ends the watch and reports what it found: the nodes taken ready,
// in order, the ones replaced while not ready, and the rule's breaches.
func (w *budgetWatch) stop() (taken, notReady, problems []string, err error) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.taken), slices.Clone(w.notReady), slices.Clone(w.problems), w.err
}

// stream GETs path and returns the body to read as it comes (a watch).
func (c *apiClient) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp.Body, nil
}
