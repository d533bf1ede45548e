package checkpoint_test

import (
	"bytes"
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

// FuzzDecodeJournal: DecodeJournal never panics; what it rejects wraps
// ErrCorrupt; what it accepts covers the input exactly (valid records plus
// a torn tail), and its records encode and decode to the same journal.
func FuzzDecodeJournal(f *testing.F) {
	base := checkpoint.Sum([]byte("snapshot"))
	good, err := checkpoint.EncodeJournal(base, sampleRecords())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(good[:bytes.IndexByte(good, '\n')+1])
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := checkpoint.DecodeJournal(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if j.Size+j.Torn != int64(len(data)) || j.Torn < 0 {
			t.Fatalf("size %d + torn %d != %d bytes", j.Size, j.Torn, len(data))
		}
		again, err := checkpoint.EncodeJournal(j.Base, j.Records)
		if err != nil {
			t.Fatalf("accepted journal does not encode: %v", err)
		}
		back, err := checkpoint.DecodeJournal(again)
		if err != nil || back.Torn != 0 || len(back.Records) != len(j.Records) {
			t.Fatalf("accepted journal does not decode after re-encoding: %+v, %v", back, err)
		}
		twice, err := checkpoint.EncodeJournal(back.Base, back.Records)
		if err != nil || !bytes.Equal(twice, again) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}
