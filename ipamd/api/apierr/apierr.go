// Package apierr is the one table of the errors that cross ipamd's CNI
// socket: each error the store or the server returns, the wire code ipamd
// answers with, and the CNI error code and message the plugin prints. It
// is modelled on runtime/plugin/internal/shared/errors.go.
//
// ipamd's side (package server) turns an error into a *wire.Error with
// ToWire; the plugin's side (package cni) turns the wire code into a CNI
// error with CNI. Both read the same rows, so a new sentinel is one row.
// The package depends on the standard library and package wire only: the
// plugin links it without growing its start-up, and the datastore takes
// its sentinels from here (datastore.ErrPoolExhausted is ErrPoolExhausted).
//
// See docs/architecture.md for where this sits in an ADD.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// The store's errors that reach the socket (package datastore re-exports
// them under the same names).
var (
	// ErrPoolExhausted: no address is free and past its cooldown.
	ErrPoolExhausted = errors.New("address pool exhausted")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("datastore closed")
	// ErrPoolNotReady: the pool has no address yet because its source
	// waits for something (the node source: the Node's podCIDRs); the
	// error names it. A condition that clears: try again later.
	ErrPoolNotReady = errors.New("the pool has no addresses yet")
	// ErrUnproven: there is no trusted checkpoint and the runtime has not yet
	// proven which addresses are free, so none is handed out.
	ErrUnproven = errors.New("datastore unproven: there is no trusted checkpoint and the runtime and the node have not yet accounted for every pod's address")
	// ErrInvalidKey: a key lacks its network, sandbox ID or interface name.
	ErrInvalidKey = errors.New("invalid assignment key")
	// ErrFenced: the pool source has not renewed its Lease (the evidence
	// that this ipamd lives) for so long that the reclaimer may soon take
	// its blocks, so no new address of them is handed out until it has
	// renewed and read them again; the error names the cause. A
	// condition that clears: try again later.
	ErrFenced = errors.New("ipamd is fenced: no new address of its claimed blocks")
)

// The server's own errors.
var (
	// ErrInvalidRequest: a request field is missing or malformed; Invalid
	// builds one whose message names the field.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNotHeld: CHECK of an attachment ipamd holds no address for.
	ErrNotHeld = errors.New("no address held")
	// ErrWiringRefused: an ADD from the plugin running as IPAM only on a
	// node configured as the plugin wiring every pod (podLinks.podWiring).
	ErrWiringRefused = errors.New("ADD refused")
)

// CNI error codes the plugin prints: 11 is the spec's "try again later";
// the spec leaves 100 and up to plugins.
const (
	CNITryAgainLater uint = 11
	// CNIRejected: ipamd refused the request for a reason of its own.
	CNIRejected uint = 100
	// CNIPoolExhausted: ipamd has no free address.
	CNIPoolExhausted uint = 101
	// CNINotHeld: ipamd holds no address for the attachment.
	CNINotHeld uint = 102
)

// row is one error's way across the socket. Rows that share a wire code
// share its CNI code and message (TestRowsOfOneCodeAgree): the plugin sees
// only the code.
type row struct {
	err  error     // what the store or server returns (errors.Is)
	code wire.Code // what ipamd answers
	cni  uint      // what the plugin prints
	msg  string    // the CNI message; %s is the method
}

// rows are matched in order: an error wrapping two sentinels takes the
// first. A condition that clears while the runtime retries (an unproven
// pool, a pool whose source waits, a closing store, a full or read-only
// state disk) is Unavailable, which the plugin answers with "try again
// later".
var rows = [...]row{
	{ErrPoolExhausted, wire.CodeResourceExhausted, CNIPoolExhausted, "ipamd has no free address for %s"},
	{ErrUnproven, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{ErrPoolNotReady, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{ErrFenced, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{ErrClosed, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{syscall.ENOSPC, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{syscall.EDQUOT, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{syscall.EROFS, wire.CodeUnavailable, CNITryAgainLater, "ipamd could not serve %s now"},
	{ErrInvalidRequest, wire.CodeInvalidArgument, CNIRejected, "ipamd rejected %s as invalid"},
	{ErrInvalidKey, wire.CodeInvalidArgument, CNIRejected, "ipamd rejected %s as invalid"},
	{ErrNotHeld, wire.CodeNotFound, CNINotHeld, "ipamd holds no address for this attachment (%s)"},
	{ErrWiringRefused, wire.CodeFailedPrecondition, CNIRejected, "ipamd refused %s: the plugin's wiring disagrees with podLinks.podWiring"},
	{context.DeadlineExceeded, wire.CodeDeadlineExceeded, CNITryAgainLater, "ipamd could not serve %s now"},
	{context.Canceled, wire.CodeCanceled, CNIRejected, "ipamd abandoned %s: the call was canceled"},
}

// ToWire is ipamd's side: the wire error for err, its message kept, the
// code of the first row it matches, CodeInternal when it matches none. A
// *wire.Error passes through unchanged; nil stays nil.
func ToWire(err error) *wire.Error {
	if err == nil {
		return nil
	}
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr
	}
	for i := range rows {
		if errors.Is(err, rows[i].err) {
			return &wire.Error{Code: rows[i].code, Message: err.Error()}
		}
	}
	return &wire.Error{Code: wire.CodeInternal, Message: err.Error()}
}

// Code is the wire code ipamd answers err with: CodeOK for nil.
func Code(err error) wire.Code {
	if err == nil {
		return wire.CodeOK
	}
	return ToWire(err).Code
}

// CNI is the plugin's side: the CNI error code and message for a wire
// code ipamd answered method m with. A code no row names (Internal,
// Unimplemented, Unknown) is a rejection that quotes the code.
func CNI(m wire.Method, code wire.Code) (uint, string) {
	for i := range rows {
		if rows[i].code == code {
			return rows[i].cni, fmt.Sprintf(rows[i].msg, m)
		}
	}
	return CNIRejected, fmt.Sprintf("ipamd rejected %s (code %d)", m, code)
}

// Invalid is an ErrInvalidRequest whose message is exactly the formatted
// text, which names the field (attachment.ifname "eth0/x" contains '/').
func Invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalidRequest }
