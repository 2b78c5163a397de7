package etcd

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/allot-dev/allot/internal/store"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in        string
		endpoints []string
		prefix    string
		field     string // of the error; "" when the URL is good
	}{
		{"etcd://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}, DefaultPrefix, ""},
		{"etcd://a:1,b:2,c:3/prod", []string{"http://a:1", "http://b:2", "http://c:3"}, "/prod/", ""},
		{"etcd://[::1]:2379/x/y/", []string{"http://[::1]:2379"}, "/x/y/", ""},
		{"etcd://h:2379/", []string{"http://h:2379"}, "/", ""},
		{"bolt:/tmp", nil, "", "store"},
		{"etcd://", nil, "", "store.endpoints"},
		{"etcd:///p", nil, "", "store.endpoints"},
		{"etcd://h", nil, "", "store.endpoints[0]"},
		{"etcd://h:2379,", nil, "", "store.endpoints[1]"},
		{"etcd://h:0", nil, "", "store.endpoints[0]"},
		{"etcd://h:99999", nil, "", "store.endpoints[0]"},
		{"etcd://:2379", nil, "", "store.endpoints[0]"},
		{"etcd://u@h:2379", nil, "", "store"},
		{"etcd://h:2379/p?x=1", nil, "", "store"},
		{"etcd://h:2379/\xff", nil, "", "store.prefix"},
		{"etcd://h:2379/" + strings.Repeat("p", MaxPrefixLen), nil, "", "store.prefix"},
	} {
		cfg, err := ParseURL(tc.in)
		if tc.field != "" {
			var ie *store.InvalidError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%q: err %v, want an InvalidError on %s", tc.in, err, tc.field)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.endpoints, cfg.Endpoints); d != "" || cfg.Prefix != tc.prefix {
			t.Errorf("%q: prefix %q (want %q), endpoints (-want +got):\n%s", tc.in, cfg.Prefix, tc.prefix, d)
		}
	}
}

// FuzzParseURL: any input parses or fails with an InvalidError, never a
// panic; what parses names endpoints and a prefix that Open accepts.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379", "etcd://a:1,b:2/p", "etcd://[::1]:1/", "etcd://h", "etcd://,,/", "etcd://h:1/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseURL(raw)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%q: err %v, want ErrInvalid", raw, err)
			}
			return
		}
		if len(cfg.Endpoints) == 0 {
			t.Fatalf("%q: no endpoints", raw)
		}
		if p, err := NormalizePrefix(cfg.Prefix); err != nil || p != cfg.Prefix {
			t.Fatalf("%q: prefix %q not normal: %q %v", raw, cfg.Prefix, p, err)
		}
	})
}
