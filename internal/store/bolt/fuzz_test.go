package bolt

import (
	"errors"
	"testing"

	"github.com/allot-dev/allot/internal/store"
)

// FuzzTxn sends fuzzed txns through a real store: bad input must come back
// as store.ErrInvalid (never a panic, never a write), good input must read
// back as written.
func FuzzTxn(f *testing.F) {
	f.Add("/jobs/a", []byte(`{"id":"a"}`), int64(0), true)
	f.Add("", []byte(nil), int64(0), false)
	f.Add("/\xff\xfe", []byte("x"), int64(3), true)
	f.Add("/k", []byte(nil), int64(-7), true)
	s := openTemp(f, nil)
	f.Fuzz(func(t *testing.T, key string, value []byte, rev int64, put bool) {
		before, _ := s.Rev(t.Context())
		op := store.DeleteOp(key)
		if put {
			op = store.PutOp(key, value)
		}
		txn := store.Txn{Then: []store.Op{op}}
		if rev != 0 {
			txn.If = []store.Cond{store.ModRevIs(key, rev)}
		}
		got, err := s.Txn(t.Context(), txn)
		if txn.Validate() != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("invalid txn: err %v, want ErrInvalid", err)
			}
			if after, _ := s.Rev(t.Context()); after != before {
				t.Fatalf("invalid txn moved revision %d -> %d", before, after)
			}
			return
		}
		if errors.Is(err, store.ErrConflict) {
			return
		}
		if err != nil {
			t.Fatalf("txn: %v", err)
		}
		kv, err := s.Get(t.Context(), key)
		switch {
		case !put && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("after delete: %+v %v", kv, err)
		case put && (err != nil || string(kv.Value) != string(value) || kv.ModRev != got):
			t.Fatalf("after put at %d: %+v %v", got, kv, err)
		}
	})
}
