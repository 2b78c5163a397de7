package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store/etcd/etcdtest"
)

// bench e2e --store etcd://… runs the control plane on the cluster with
// leader election on (its Plans commit in a term), writes only under a
// prefix of its own, brings every job that fits to Running, preloads its
// history there, and leaves no key behind (its prefix and election keys
// are deleted).
func TestBenchE2EEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Every write of the run, from the first.
	events := cli.Watch(t.Context(), "\x00", clientv3.WithFromKey())
	out, errOut, code := run(t, "bench", "e2e", "--nodes", "2", "--jobs", "20", "--clients", "3", "--history", "150",
		"--store", "etcd://"+strings.Join(c.HostPorts(), ","), "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchE2EResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Store != "etcd (1 endpoints, leader election on)" || r.Submitted != 20 || r.Errors != 0 || r.Running != 16 ||
		r.LatencyP99Ms < r.LatencyP50Ms || r.History != 150 || r.PreloadS <= 0 || r.Cycles == 0 {
		t.Fatalf("report %+v", r)
	}
	var termFence bool
	timeout := time.After(10 * time.Second)
	for fenceGone := false; !fenceGone; {
		select {
		case w := <-events:
			for _, ev := range w.Events {
				key := string(ev.Kv.Key)
				if !strings.HasPrefix(key, "/allot-bench-") {
					t.Fatalf("the bench wrote %s, outside a prefix of its own", key)
				}
				if !strings.HasSuffix(key, "/"+server.KeyFence) {
					continue
				}
				if ev.Type == clientv3.EventTypeDelete {
					fenceGone = true
					continue
				}
				var f server.FenceRecord
				if err := json.Unmarshal(ev.Kv.Value, &f); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				termFence = termFence || f.Term > 0
			}
		case <-timeout:
			t.Fatal("no deletion of the fence seen within 10s")
		}
	}
	if !termFence {
		t.Error("no Plan committed in a leader's term: the election is off")
	}
	got, err := cli.Get(t.Context(), "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 0 {
		t.Fatalf("%d keys left in etcd after the bench, the first %s", got.Count, got.Kvs[0].Key)
	}
}

// Wrong --store values are usage errors that name the flag, before
// anything starts.
func TestBenchE2EStoreUsage(t *testing.T) {
	for _, flag := range []string{"bolt:/tmp/x", "etcd://", "etcd://127.0.0.1:1/allot", "etcd://h:0", "x"} {
		_, errOut, code := run(t, "bench", "e2e", "--nodes", "1", "--jobs", "1", "--store", flag)
		if code != ExitUsage || !strings.Contains(errOut, "--store") {
			t.Errorf("--store %q: exit %d: %s", flag, code, errOut)
		}
	}
}

// FuzzBenchStore: any bench e2e --store value is accepted as endpoints
// without a prefix, or refused with an error naming the flag; never a
// panic.
func FuzzBenchStore(f *testing.F) {
	for _, s := range []string{"", "etcd://h:1", "etcd://h:1,h:2", "etcd://h:1/p", "etcd://", "bolt:/d", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		cfg, err := parseBenchStore(flag)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "--store") {
				t.Fatalf("%q: error %q does not name --store", flag, err)
			}
		case flag == "":
			if cfg != nil {
				t.Fatalf("empty flag gave %+v", cfg)
			}
		case cfg == nil || len(cfg.Endpoints) == 0 || strings.Contains(strings.TrimPrefix(flag, "etcd://"), "/"):
			t.Fatalf("%q accepted as %+v", flag, cfg)
		}
	})
}
