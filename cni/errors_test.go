package cni_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/ipamd/api/apierr"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// addAsIPAM runs the real plugin's ADD as an "ipam" section (it touches no
// network namespace) against socket, with the given netns path.
func addAsIPAM(t *testing.T, socket, seed, netns string) cnitest.Outcome {
	t.Helper()
	id := cnitest.SandboxID(seed)
	return cnitest.Run(t, cnitest.Call{Command: "ADD", SandboxID: id, IfName: "eth0", Netns: netns,
		Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(socket)})
}

func mustPrint(t *testing.T, o cnitest.Outcome, code uint, msg, details string) {
	t.Helper()
	if o.Err == nil {
		t.Fatalf("ADD succeeded, want CNI error %d %q; stdout: %s", code, msg, o.Stdout)
	}
	if o.Err.Code != code || o.Err.Msg != msg || o.Err.Details != details {
		t.Errorf("the plugin printed code %d msg %q details %q\nwant code %d msg %q details %q",
			o.Err.Code, o.Err.Msg, o.Err.Details, code, msg, details)
	}
}

// Every row of apierr's table, end to end: the store's error, answered
// through apierr.ToWire on the real socket, read by the real plugin
// binary, printed as its CNI error. The expectations are written out
// here, not read from the table, so a changed row fails.
func TestEveryStoreErrorReachesThePluginAsItsCNIError(t *testing.T) {
	const later = "ipamd could not serve Add now"
	cases := []struct {
		err  error
		code uint
		msg  string
	}{
		{datastore.ErrPoolExhausted, 101, "ipamd has no free address for Add"},
		{datastore.ErrUnproven, 11, later},
		{datastore.ErrPoolNotReady, 11, later},
		{datastore.ErrClosed, 11, later},
		{fmt.Errorf("commit: %w", syscall.ENOSPC), 11, later},
		{fmt.Errorf("commit: %w", syscall.EDQUOT), 11, later},
		{fmt.Errorf("commit: %w", syscall.EROFS), 11, later},
		{apierr.Invalid(`netns "x" must be an absolute path`), 100, "ipamd rejected Add as invalid"},
		{datastore.ErrInvalidKey, 100, "ipamd rejected Add as invalid"},
		{apierr.ErrNotHeld, 102, "ipamd holds no address for this attachment (Add)"},
		{apierr.ErrWiringRefused, 100, "ipamd refused Add: the plugin's wiring disagrees with podLinks.podWiring"},
		{context.DeadlineExceeded, 11, later},
		{context.Canceled, 100, "ipamd abandoned Add: the call was canceled"},
		{errors.New("a bug"), 100, "ipamd rejected Add (code 13)"},
		// The first row matched wins: exhaustion is not a retry.
		{fmt.Errorf("%w: %w", datastore.ErrPoolExhausted, context.DeadlineExceeded), 101, "ipamd has no free address for Add"},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			ipamd := cnitest.StartFailingIPAMD(t, tc.err)
			o := addAsIPAM(t, ipamd.Socket, "row", "/run/netns/none")
			mustPrint(t, o, tc.code, tc.msg, "assign: "+tc.err.Error())
		})
	}
}

// The same table reached through ipamd's real server and store, for the
// errors a test can make them return (ErrNotHeld: TestCheckFailsWhenIPAMDNoLongerHoldsAddress in
// plugin_test.go, CHECK after ipamd released).
func TestRealServerErrorsReachThePlugin(t *testing.T) {
	t.Run("exhausted", func(t *testing.T) {
		ipamd := cnitest.StartWireIPAMD(t, 1)
		cnitest.MustSucceed(t, addAsIPAM(t, ipamd.Socket, "first", "/run/netns/first"), "first ADD")
		mustPrint(t, addAsIPAM(t, ipamd.Socket, "second", "/run/netns/second"), 101,
			"ipamd has no free address for Add", "assign to sandbox "+cnitest.SandboxID("second")+
				": address pool exhausted: no free ipv4 address: 1 addresses, 1 assigned, 0 cooling, 0 quarantined")
	})
	t.Run("closed", func(t *testing.T) {
		ipamd := cnitest.StartWireIPAMD(t, 1)
		if err := ipamd.Store.Close(); err != nil {
			t.Fatal(err)
		}
		mustPrint(t, addAsIPAM(t, ipamd.Socket, "closed", "/run/netns/closed"), 11,
			"ipamd could not serve Add now", "assign: datastore closed")
	})
	t.Run("invalid", func(t *testing.T) {
		ipamd := cnitest.StartWireIPAMD(t, 1)
		o := addAsIPAM(t, ipamd.Socket, "invalid", "relative/netns")
		mustPrint(t, o, 100, "ipamd rejected Add as invalid", `netns "relative/netns" must be an absolute path`)
		if st := ipamd.Store.Stats(); st.Assigned != 0 {
			t.Errorf("Stats %+v after a rejected ADD, want nothing assigned", st)
		}
	})
}
