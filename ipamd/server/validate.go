package server

import (
	"fmt"
	"path/filepath"
	"unicode"
	"unicode/utf8"

	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/config/validname"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// Limits on request fields. A sandbox ID is 64 hex digits in every runtime
// we know; 256 leaves room for others while bounding what a confused client
// can make ipamd store and checkpoint.
const (
	maxIDLen       = 256
	maxNetworkLen  = 256
	maxPodFieldLen = 256
)

// invalid is an apierr.ErrInvalidRequest whose message names the field.
func invalid(format string, args ...any) error { return apierr.Invalid(format, args...) }

// attachmentKey validates an attachment and turns it into a datastore key.
func attachmentKey(field string, a *ipamdv1.Attachment) (datastore.Key, error) {
	if a == nil {
		return datastore.Key{}, invalid("%s is missing", field)
	}
	if err := checkText(field+".network", a.GetNetwork(), maxNetworkLen); err != nil {
		return datastore.Key{}, err
	}
	if err := checkText(field+".sandbox_id", a.GetSandboxId(), maxIDLen); err != nil {
		return datastore.Key{}, err
	}
	if err := validname.IfName(a.GetIfname()); err != nil {
		return datastore.Key{}, invalid("%s.ifname %q %v", field, a.GetIfname(), err)
	}
	return datastore.Key{Network: a.GetNetwork(), SandboxID: a.GetSandboxId(), IfName: a.GetIfname()}, nil
}

// checkText requires a non-empty, printable string of at most max bytes.
func checkText(field, s string, max int) error {
	if s == "" {
		return invalid("%s must not be empty", field)
	}
	return checkOptionalText(field, s, max)
}

func checkOptionalText(field, s string, max int) error {
	if len(s) > max {
		return invalid("%s is %d bytes, longer than %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s %q is not valid UTF-8", field, s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return invalid("%s %q contains the unprintable character %U", field, s, r)
		}
	}
	return nil
}

// validateAdd checks an AddRequest and returns its key and pod.
func validateAdd(req *ipamdv1.AddRequest) (datastore.Key, datastore.Pod, error) {
	key, err := attachmentKey("attachment", req.GetAttachment())
	if err != nil {
		return key, datastore.Pod{}, err
	}
	if ns := req.GetNetns(); ns != "" {
		if err := checkOptionalText("netns", ns, 4096); err != nil {
			return key, datastore.Pod{}, err
		}
		if !filepath.IsAbs(ns) {
			return key, datastore.Pod{}, invalid("netns %q must be an absolute path", ns)
		}
	}
	if w := req.GetWiring(); w < ipamdv1.Wiring_WIRING_UNKNOWN || w > ipamdv1.Wiring_WIRING_IPAM_ONLY {
		return key, datastore.Pod{}, invalid("wiring %d is not one of 0 (unknown), 1 (main plugin), 2 (IPAM only)", int32(w))
	}
	p := req.GetPod()
	pod := datastore.Pod{Name: p.GetName(), Namespace: p.GetNamespace(), UID: p.GetUid()}
	for _, f := range []struct{ field, value string }{
		{"pod.name", pod.Name}, {"pod.namespace", pod.Namespace}, {"pod.uid", pod.UID},
	} {
		if err := checkOptionalText(f.field, f.value, maxPodFieldLen); err != nil {
			return key, pod, err
		}
	}
	return key, pod, nil
}

// validateGC checks a GCRequest and returns the keys to keep.
func validateGC(req *ipamdv1.GCRequest) ([]datastore.Key, error) {
	if err := checkText("network", req.GetNetwork(), maxNetworkLen); err != nil {
		return nil, err
	}
	keep := make([]datastore.Key, 0, len(req.GetValid()))
	for i, a := range req.GetValid() {
		if a.GetNetwork() == "" {
			// CNI GC lists attachments of the network being collected;
			// a client may leave their network implied.
			a = &ipamdv1.Attachment{Network: req.GetNetwork(), SandboxId: a.GetSandboxId(), Ifname: a.GetIfname()}
		}
		key, err := attachmentKey(fmt.Sprintf("valid[%d]", i), a)
		if err != nil {
			return nil, err
		}
		keep = append(keep, key)
	}
	return keep, nil
}
