package etcd

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/allot-dev/allot/internal/store"
)

// Scheme starts a store URL that names an etcd cluster.
const Scheme = "etcd://"

// maxEndpoints bounds the members one URL may name.
const maxEndpoints = 64

// ParseURL reads "etcd://HOST:PORT[,HOST:PORT…][/prefix]" into a Config:
// the endpoints, and the prefix (DefaultPrefix when the URL has no path).
// Errors are *store.InvalidError values naming the part that is wrong.
func ParseURL(raw string) (Config, error) {
	rest, ok := strings.CutPrefix(raw, Scheme)
	if !ok {
		return Config{}, &store.InvalidError{Field: "store", Msg: fmt.Sprintf("%q does not start with %s", raw, Scheme)}
	}
	if i := strings.IndexAny(rest, "?#@"); i >= 0 {
		return Config{}, &store.InvalidError{Field: "store", Msg: fmt.Sprintf("%q: %q is not allowed (no user, query or fragment)", raw, rest[i])}
	}
	hosts, path, hasPath := strings.Cut(rest, "/")
	if hosts == "" {
		return Config{}, &store.InvalidError{Field: "store.endpoints", Msg: "must name at least one HOST:PORT"}
	}
	var cfg Config
	for i, h := range strings.Split(hosts, ",") {
		field := fmt.Sprintf("store.endpoints[%d]", i)
		if i == maxEndpoints {
			return Config{}, &store.InvalidError{Field: "store.endpoints", Msg: fmt.Sprintf("names more than %d endpoints", maxEndpoints)}
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			return Config{}, &store.InvalidError{Field: field, Msg: fmt.Sprintf("%q is not HOST:PORT", h)}
		}
		if host == "" || strings.ContainsAny(host, " \t/\\,") {
			return Config{}, &store.InvalidError{Field: field, Msg: fmt.Sprintf("%q has no valid host", h)}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Config{}, &store.InvalidError{Field: field, Msg: fmt.Sprintf("port %q is not a number from 1 to 65535", port)}
		}
		cfg.Endpoints = append(cfg.Endpoints, "http://"+net.JoinHostPort(host, port))
	}
	if hasPath {
		p, err := NormalizePrefix("/" + path)
		if err != nil {
			return Config{}, &store.InvalidError{Field: "store.prefix", Msg: err.(*store.InvalidError).Msg}
		}
		cfg.Prefix = p
	} else {
		cfg.Prefix = DefaultPrefix
	}
	return cfg, nil
}
