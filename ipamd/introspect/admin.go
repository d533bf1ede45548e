package introspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// Errors of an operator's release, which callers branch on.
var (
	// ErrNotHeld: ipamd holds no address for the attachment (404).
	ErrNotHeld = errors.New("no address is held for this attachment")
	// ErrStillInUse: the runtime or the node shows the attachment's
	// sandbox or address in use, and the release was not forced (409).
	ErrStillInUse = errors.New("the runtime or the node shows it in use")
	// ErrBadRequest: the request could not be decoded or names no
	// attachment (400).
	ErrBadRequest = errors.New("bad request")
)

// maxRequestBody bounds the body of a call that changes state.
const maxRequestBody = 64 << 10

// maxField bounds each field of a release request: a network name, a
// sandbox ID (64 hex characters for every runtime here) or an interface
// name is far shorter.
const maxField = 256

// DecodeRelease decodes POST /v1/release's body strictly: one JSON object,
// no unknown field, nothing after it, every field present, printable and
// at most maxField bytes. Errors wrap ErrBadRequest and name the field.
func DecodeRelease(body io.Reader) (schema.ReleaseRequest, error) {
	var req schema.ReleaseRequest
	data, err := io.ReadAll(io.LimitReader(body, maxRequestBody+1))
	if err != nil {
		return req, fmt.Errorf("%w: read release request: %w", ErrBadRequest, err)
	}
	if len(data) > maxRequestBody {
		return req, fmt.Errorf("%w: release request is larger than %d bytes", ErrBadRequest, maxRequestBody)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return schema.ReleaseRequest{}, fmt.Errorf("%w: decode release request: %w", ErrBadRequest, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return schema.ReleaseRequest{}, fmt.Errorf("%w: release request: data after the JSON object", ErrBadRequest)
	}
	for _, f := range []struct{ name, value string }{{"network", req.Network}, {"sandboxID", req.SandboxID}, {"ifName", req.IfName}} {
		if err := checkField(f.name, f.value); err != nil {
			return schema.ReleaseRequest{}, err
		}
	}
	return req, nil
}

func checkField(name, value string) error {
	switch {
	case value == "":
		return fmt.Errorf("%w: release request: %s must not be empty", ErrBadRequest, name)
	case len(value) > maxField:
		return fmt.Errorf("%w: release request: %s must be at most %d bytes, got %d", ErrBadRequest, name, maxField, len(value))
	case strings.IndexFunc(value, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) >= 0:
		return fmt.Errorf("%w: release request: %s must be printable UTF-8, got %q", ErrBadRequest, name, value)
	}
	return nil
}

// ParseReconcile decodes POST /v1/reconcile's query: dryRun, true or
// false, is the only parameter, given at most once. Errors wrap
// ErrBadRequest and name the parameter.
func ParseReconcile(rawQuery string) (dryRun bool, err error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return false, fmt.Errorf("%w: reconcile query: %w", ErrBadRequest, err)
	}
	for k, vs := range q {
		if k != "dryRun" {
			return false, fmt.Errorf("%w: reconcile takes only dryRun, got %q", ErrBadRequest, k)
		}
		if len(vs) > 1 {
			return false, fmt.Errorf("%w: dryRun given %d times", ErrBadRequest, len(vs))
		}
	}
	v := q.Get("dryRun")
	if v == "" {
		return false, nil
	}
	if dryRun, err = strconv.ParseBool(v); err != nil {
		return false, fmt.Errorf("%w: dryRun must be true or false, got %s", ErrBadRequest, strconv.Quote(v))
	}
	return dryRun, nil
}

// refuseChange answers the TCP listener's calls it does not serve: a read
// of an unknown path is 404; anything else, and the paths of the calls
// that change state whatever the method, 403 naming the admin socket.
func (h *handlers) refuseChange(w http.ResponseWriter, r *http.Request) {
	changes := r.URL.Path == schema.PathRelease || r.URL.Path == schema.PathReconcile
	if !changes && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no such path %q", r.URL.Path))
		return
	}
	where := ""
	if h.AdminSocket != "" {
		where = " " + h.AdminSocket
	}
	h.noteRefused(r)
	writeError(w, http.StatusForbidden, fmt.Errorf(
		"%s %s: this listener serves reads only; calls that change state are served on the admin socket%s (introspection.adminSocket), to root and ipamd's uid only: run ipamctl as root on the node",
		r.Method, r.URL.Path, where))
}

func (h *handlers) reconcile(w http.ResponseWriter, r *http.Request) {
	dryRun, err := ParseReconcile(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if h.Reconcile == nil {
		writeError(w, http.StatusServiceUnavailable, ErrNoAdapter)
		return
	}
	res, err := h.Reconcile(r.Context(), dryRun)
	if errors.Is(err, ErrNoAdapter) {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	view := ReconcileView(res, h.Now())
	if err != nil {
		h.Logger.Warn("reconcile requested on the admin socket failed", slog.Bool("dry_run", dryRun), slog.Any("error", err))
		if view.Error == "" {
			view.Error = err.Error()
		}
		writeJSON(w, http.StatusBadGateway, view)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// release frees one attachment's address on an operator's word, once the
// evidence allows it (see Deps.Release).
func (h *handlers) release(w http.ResponseWriter, r *http.Request) {
	req, err := DecodeRelease(http.MaxBytesReader(w, r.Body, maxRequestBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if h.Release == nil {
		writeError(w, http.StatusServiceUnavailable, errors.New("release is not served here"))
		return
	}
	out, err := h.Release(r.Context(), req)
	switch {
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, err)
	case errors.Is(err, ErrNotHeld):
		writeError(w, http.StatusNotFound, err)
	case errors.Is(err, ErrStillInUse):
		writeError(w, http.StatusConflict, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, out)
	}
}
