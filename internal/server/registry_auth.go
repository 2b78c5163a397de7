package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/store"
)

// Registry credentials: a tenant's user name and password (or token) for
// one image registry, which its jobs' images are pulled with. The server
// stores them under /registry-auth/TENANT/REGISTRY, sealed with its
// Config.SecretKey (AES-256-GCM, bound to that key of the store: package
// seal), a key the store never holds, and hands one only to the agent of
// a node that runs an instance of the tenant whose image lies in that
// registry (Assignment.RegistryAuth); no API call returns it, and nothing
// logs it. A record written before credentials were sealed (its auth in
// the clear) is still read, and sealed when the tenant sets it again.

const prefixRegistryAuth = "/registry-auth/"

// ActionRegistryAuthSet and ActionRegistryAuthDelete are the audit
// actions of a tenant's registry credentials.
const (
	ActionRegistryAuthSet    = "registry-auth.set"
	ActionRegistryAuthDelete = "registry-auth.delete"
)

// Bounds of a credential.
const (
	maxRegistryUser     = 256
	maxRegistryPassword = 8192
)

type registryAuthRecord struct {
	Registry string `json:"registry"`
	// Sealed is the base64 of USER:PASSWORD (as a registry's auth file
	// writes it), sealed with the server's key for this record's key.
	Sealed []byte `json:"sealed,omitempty"`
	// Auth is the same in the clear, in a record written before
	// credentials were sealed; never written now.
	Auth  string    `json:"auth,omitempty"`
	SetAt time.Time `json:"set_at"`
	SetBy string    `json:"set_by"`
}

// RegistryCredential is a tenant's credential as the API shows it: which
// registry, when and by whom it was set; never the secret.
type RegistryCredential struct {
	Tenant   string
	Registry string
	SetAt    time.Time
	SetBy    string
}

// RegistryAuth is the credential an agent pulls an image with.
type RegistryAuth struct {
	Registry string
	Auth     string // base64 of USER:PASSWORD
}

func registryAuthKey(tenant, registry string) string {
	return prefixRegistryAuth + tenant + "/" + registry
}

// credentialTenant is the tenant whose credentials p asks for: its own,
// or for the administrator the one it names.
func credentialTenant(p Principal, tenant string) (string, error) {
	switch {
	case p.Admin && tenant == "":
		return "", refuse(CodeInvalidSpec, "tenant", "the administrator names the tenant of the credential")
	case p.Admin:
		return tenant, nil
	case p.Tenant == "":
		return "", refuse(CodeForbidden, "", "only a tenant or the administrator keeps registry credentials")
	case tenant != "" && tenant != p.Tenant:
		return "", refuse(CodeForbidden, "tenant", "a token of tenant %q may not keep credentials of tenant %q", p.Tenant, tenant)
	}
	return p.Tenant, nil
}

// SetRegistryCredential stores (or replaces) tenant's credential for
// registry.
func (s *Server) SetRegistryCredential(ctx context.Context, p Principal, tenant, registry, user, password string) (RegistryCredential, error) {
	tenant, err := credentialTenant(p, tenant)
	if err != nil {
		return RegistryCredential{}, err
	}
	_, known := s.world().tenancy.Tenant(tenant)
	switch {
	case !known:
		return RegistryCredential{}, refuse(CodeInvalidSpec, "tenant", "unknown tenant %q", tenant)
	case !model.ValidRegistry(registry):
		return RegistryCredential{}, refuse(CodeInvalidSpec, "registry", "%q is not a registry host (a host name with an optional :PORT, e.g. ghcr.io)", registry)
	case user == "" || len(user) > maxRegistryUser || strings.ContainsAny(user, ":\x00\n\r"):
		return RegistryCredential{}, refuse(CodeInvalidSpec, "username", "must be 1 to %d bytes without ':' or line breaks", maxRegistryUser)
	case password == "" || len(password) > maxRegistryPassword || strings.ContainsAny(password, "\x00\n\r"):
		return RegistryCredential{}, refuse(CodeInvalidSpec, "password", "must be 1 to %d bytes without line breaks", maxRegistryPassword)
	}
	key := registryAuthKey(tenant, registry)
	sealed, err := s.cfg.SecretKey.Seal([]byte(base64.StdEncoding.EncodeToString([]byte(user+":"+password))), []byte(key))
	if err != nil {
		return RegistryCredential{}, fmt.Errorf("seal registry credential: %w", err)
	}
	rec := registryAuthRecord{Registry: registry, Sealed: sealed, SetAt: s.clock.Now().UTC(), SetBy: p.Name()}
	v, _ := json.Marshal(rec)
	if _, err := s.st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(key, v)}}); err != nil {
		return RegistryCredential{}, fmt.Errorf("store registry credential: %w", err)
	}
	s.audit(ctx, p, ActionRegistryAuthSet, "registry-auth/"+tenant+"/"+registry, "user "+user)
	s.log.Info("registry credential set", "tenant", tenant, "registry", registry, "by", p.Name())
	return RegistryCredential{Tenant: tenant, Registry: registry, SetAt: rec.SetAt, SetBy: rec.SetBy}, nil
}

// RegistryCredentials lists tenant's credentials, without their secrets.
func (s *Server) RegistryCredentials(ctx context.Context, p Principal, tenant string) ([]RegistryCredential, error) {
	tenant, err := credentialTenant(p, tenant)
	if err != nil {
		return nil, err
	}
	kvs, _, err := s.st.List(ctx, prefixRegistryAuth+tenant+"/")
	if err != nil {
		return nil, err
	}
	out := []RegistryCredential{}
	for _, kv := range kvs {
		var rec registryAuthRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			continue
		}
		out = append(out, RegistryCredential{Tenant: tenant, Registry: rec.Registry, SetAt: rec.SetAt, SetBy: rec.SetBy})
	}
	return out, nil
}

// DeleteRegistryCredential removes tenant's credential for registry.
func (s *Server) DeleteRegistryCredential(ctx context.Context, p Principal, tenant, registry string) error {
	tenant, err := credentialTenant(p, tenant)
	if err != nil {
		return err
	}
	key := registryAuthKey(tenant, registry)
	if _, err := s.st.Get(ctx, key); errors.Is(err, store.ErrNotFound) {
		return refuse(CodeNotFound, "registry", "tenant %s has no credential for %q", tenant, registry)
	} else if err != nil {
		return err
	}
	if _, err := s.st.Txn(ctx, store.Txn{Then: []store.Op{store.DeleteOp(key)}}); err != nil {
		return fmt.Errorf("delete registry credential: %w", err)
	}
	s.audit(ctx, p, ActionRegistryAuthDelete, "registry-auth/"+tenant+"/"+registry, "")
	return nil
}

// withRegistryAuth gives each instance of a that runs an image from a
// registry its tenant's credential for that registry, if it has one.
func (s *Server) withRegistryAuth(ctx context.Context, a *Assignments) {
	for i := range a.Run {
		x := &a.Run[i]
		if x.Container == nil {
			continue
		}
		ref, err := model.ParseImage(x.Container.Image)
		if err != nil || ref.Local() {
			continue
		}
		host := ref.RegistryHost()
		key := registryAuthKey(x.Tenant, host)
		kv, err := s.st.Get(ctx, key)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				s.log.Warn("registry credential not read", "tenant", x.Tenant, "registry", host, "err", err)
			}
			continue
		}
		var rec registryAuthRecord
		if json.Unmarshal(kv.Value, &rec) != nil {
			continue
		}
		auth := rec.Auth
		if len(rec.Sealed) > 0 {
			plain, err := s.cfg.SecretKey.Open(rec.Sealed, []byte(key))
			if err != nil {
				// The pull goes on without it, and fails as a private
				// image's pull does without credentials.
				s.log.Warn("registry credential does not open with this server's key (servers sharing a store need the same --secret-key-file)",
					"tenant", x.Tenant, "registry", host, "err", err)
				continue
			}
			auth = string(plain)
		}
		if auth != "" {
			x.RegistryAuth = &RegistryAuth{Registry: host, Auth: auth}
		}
	}
}
