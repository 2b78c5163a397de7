package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/store"
)

// Txn implements store.Store with one etcd Txn: the conditions are
// ModRevision compares, the operations (sorted by key) the success branch,
// and the failure branch reads every condition key so that a conflict can
// name the one that failed, as of the revision the compares saw.
func (s *Store) Txn(ctx context.Context, txn store.Txn) (int64, error) {
	return s.txn(ctx, txn, nil)
}

// fence is an etcd key that must still exist with the given create
// revision for a Txn to commit: a leader's election key.
type fence struct {
	key string // the raw etcd key
	rev int64
}

// txn runs Txn, also conditioned on f when f is not nil.
func (s *Store) txn(ctx context.Context, txn store.Txn, f *fence) (int64, error) {
	if err := txn.Validate(); err != nil {
		return 0, err
	}
	if err := s.begin(); err != nil {
		return 0, err
	}
	defer s.ops.Done()

	cmps := make([]clientv3.Cmp, len(txn.If))
	reads := make([]clientv3.Op, len(txn.If))
	for i, c := range txn.If {
		k := s.root + c.Key
		cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", c.ModRev)
		reads[i] = clientv3.OpGet(k, clientv3.WithKeysOnly())
	}
	ops := slices.Clone(txn.Then)
	slices.SortFunc(ops, func(a, b store.Op) int { return strings.Compare(a.Key, b.Key) })
	writes := make([]clientv3.Op, len(ops))
	for i, op := range ops {
		if op.Type == store.Put {
			writes[i] = clientv3.OpPut(s.root+op.Key, string(op.Value))
		} else {
			writes[i] = clientv3.OpDelete(s.root + op.Key)
		}
	}
	if f != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(f.key), "=", f.rev))
		reads = append(reads, clientv3.OpGet(f.key, clientv3.WithKeysOnly()))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(writes...).Else(reads...).Commit()
	if err != nil {
		return 0, s.fail(fmt.Sprintf("txn of %d conditions and %d operations", len(txn.If), len(txn.Then)), err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if f != nil {
		var got int64
		if r := resp.Responses[len(txn.If)].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			got = r.Kvs[0].CreateRevision
		}
		if got != f.rev {
			return 0, fmt.Errorf("%w: the term that began at revision %d has ended", store.ErrFenced, f.rev)
		}
	}
	for i, c := range txn.If {
		var got int64
		if r := resp.Responses[i].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			got = r.Kvs[0].ModRevision
		}
		if got != c.ModRev {
			return 0, &store.ConflictError{Key: c.Key, Want: c.ModRev, Got: got}
		}
	}
	// Unreachable while etcd evaluates compares and the failure branch at
	// one revision; still an error, never a silent success.
	return 0, fmt.Errorf("store/etcd: txn failed at revision %d but every condition reads as held", resp.Header.Revision)
}
