package checkpoint_test

import (
	"errors"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/checkpoint"
)

// FuzzDecodeCheckpoint: Decode never panics; what it rejects wraps
// ErrCorrupt; what it accepts encodes and decodes to the same state.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, err := checkpoint.Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("sandboxipam-checkpoint v1 sha256= len=0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := checkpoint.Decode(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := checkpoint.Encode(file)
		if err != nil {
			t.Fatalf("accepted file does not encode: %v", err)
		}
		if _, err := checkpoint.Decode(again); err != nil {
			t.Fatalf("accepted file does not decode after re-encoding: %v", err)
		}
	})
}
