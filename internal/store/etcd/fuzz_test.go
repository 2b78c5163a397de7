package etcd

import (
	"errors"
	"testing"

	"github.com/allot-dev/allot/internal/store"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// FuzzTxn sends fuzzed txns through a store on a real member: bad input
// must come back as store.ErrInvalid without a write, good input must read
// back as written at the revision Txn returned, under the prefix only.
func FuzzTxn(f *testing.F) {
	f.Add("/jobs/a", []byte(`{"id":"a"}`), int64(0), true)
	f.Add("", []byte(nil), int64(0), false)
	f.Add("/\xff\xfe", []byte("x"), int64(3), true)
	f.Add("/k\x00z", []byte(nil), int64(-7), true)
	f.Add("k", []byte("no leading slash"), int64(0), true)
	c := etcdtest.Start(f, 1)
	s, err := Open(f.Context(), Config{Endpoints: c.Endpoints(), Prefix: "/fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, key string, value []byte, rev int64, put bool) {
		before, err := s.Rev(t.Context())
		if err != nil {
			t.Fatal(err)
		}
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
		case put && (err != nil || kv.Key != key || string(kv.Value) != string(value) || kv.ModRev != got):
			t.Fatalf("after put at %d: %+v %v", got, kv, err)
		}
		resp, err := s.Client().Get(t.Context(), s.EtcdKey(key))
		if err != nil || (len(resp.Kvs) == 1) != put {
			t.Fatalf("etcd key %q: %v %v", s.EtcdKey(key), resp, err)
		}
	})
}
