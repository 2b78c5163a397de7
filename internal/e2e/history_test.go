package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/history"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// readHistory reads back from etcd everything the servers under prefix
// committed and the terms their election recorded (etcd keeps the whole
// history: the test clusters never compact), and checks it with the
// acknowledged submits.
func readHistory(t *testing.T, c *etcdtest.Cluster, prefix string, acked []string) history.Report {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := strings.TrimSuffix(prefix, "/") + "/"
	electRoot := strings.TrimSuffix(prefix, "/") + ".leader/"
	head, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	last := head.Header.Revision
	var h history.History
	h.Acked = acked
	terms := map[string]*history.Term{}
	// One watch over both ranges, from the first revision: every change in
	// revision order.
	end := clientv3.GetPrefixRangeEnd(strings.TrimSuffix(prefix, "/"))
	wc := cli.Watch(ctx, strings.TrimSuffix(prefix, "/"), clientv3.WithRange(end), clientv3.WithRev(1))
	for rev := int64(0); rev < last; {
		resp, ok := <-wc
		if !ok || resp.Err() != nil {
			t.Fatalf("read history: %v (at revision %d of %d)", resp.Err(), rev, last)
		}
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			rev = ev.Kv.ModRevision // of a delete too: the revision that deleted it
			switch {
			case strings.HasPrefix(key, electRoot):
				if ev.Type == clientv3.EventTypeDelete {
					if tm := terms[key]; tm != nil && tm.End == 0 {
						tm.End = ev.Kv.ModRevision
					}
				} else if ev.Kv.CreateRevision == ev.Kv.ModRevision {
					terms[key] = &history.Term{URL: string(ev.Kv.Value), Begin: ev.Kv.CreateRevision}
				}
			case strings.HasPrefix(key, root):
				ch := history.Change{Rev: ev.Kv.ModRevision, Key: strings.TrimPrefix(key, root)}
				if ev.Type != clientv3.EventTypeDelete {
					switch {
					case ch.Key == server.KeyFence:
						var f server.FenceRecord
						if err := json.Unmarshal(ev.Kv.Value, &f); err != nil {
							t.Fatalf("fence at %d: %v", ch.Rev, err)
						}
						ch.Fence = &history.Fence{By: f.By, Term: f.Term}
					case strings.HasPrefix(ch.Key, "/jobs/"):
						if ch.Job, err = server.DecodeJobRecord(ev.Kv.Value); err != nil {
							t.Fatalf("%s at %d: %v", ch.Key, ch.Rev, err)
						}
					}
				}
				h.Changes = append(h.Changes, ch)
			}
		}
		if len(resp.Events) == 0 && resp.Header.Revision >= last {
			break
		}
	}
	for _, tm := range terms {
		h.Terms = append(h.Terms, *tm)
	}
	return history.Check(h)
}
