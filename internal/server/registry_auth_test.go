package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/seal"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/store"
)

// A registry credential is sealed in the store with the server's key: the
// store holds neither the secret nor its base64, the API's list shows
// none of it, a server with the same key hands it to an agent, one with
// another key does not (and says why in its log), and a sealed record
// moved under another tenant's name does not open. A record from before
// sealing (in the clear) is still handed out.
func TestRegistryCredentialSealedAtRest(t *testing.T) {
	ctx := context.Background()
	fleet, ten := servertest.Lab(t)
	st := servertest.Store(t, "")
	key, _, err := seal.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	serverWith := func(k *seal.Key) *Server {
		srv, err := New(ctx, Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0), Nodes: Agents{Timeout: time.Second}, SecretKey: k})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := serverWith(key)
	const secret = "s3cret-pull-token"
	team := Principal{Tenant: "team"}
	if _, err := srv.SetRegistryCredential(ctx, team, "", "registry.example", "bot", secret); err != nil {
		t.Fatal(err)
	}
	kv, err := st.Get(ctx, registryAuthKey("team", "registry.example"))
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("bot:" + secret))
	for _, clear := range []string{secret, "bot:", b64, base64.StdEncoding.EncodeToString([]byte(b64))} {
		if strings.Contains(string(kv.Value), clear) {
			t.Errorf("the store holds %q in the clear: %s", clear, kv.Value)
		}
	}
	list, err := srv.RegistryCredentials(ctx, team, "")
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if b, _ := json.Marshal(list); strings.Contains(string(b), secret) || strings.Contains(string(b), b64) {
		t.Errorf("the list holds the secret: %s", b)
	}

	handed := func(srv *Server, tenant string) *RegistryAuth {
		a := Assignments{Run: []Assignment{{Tenant: tenant, Container: &model.Container{Image: "registry.example/team/train:1"}}}}
		srv.withRegistryAuth(ctx, &a)
		return a.Run[0].RegistryAuth
	}
	if got := handed(srv, "team"); got == nil || got.Auth != b64 || got.Registry != "registry.example" {
		t.Errorf("handed %+v, want the credential", got)
	}
	if got := handed(serverWith(key), "team"); got == nil || got.Auth != b64 {
		t.Errorf("another server with the same key handed %+v, want the credential", got)
	}
	other, _, _ := seal.RandomKey()
	if got := handed(serverWith(other), "team"); got != nil {
		t.Errorf("a server with another key handed %+v", got)
	}
	// The sealed record under another tenant's name.
	if _, err := st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(registryAuthKey("rival", "registry.example"), kv.Value)}}); err != nil {
		t.Fatal(err)
	}
	if got := handed(srv, "rival"); got != nil {
		t.Errorf("a record moved under another tenant opened: %+v", got)
	}
	// A record written before credentials were sealed.
	legacy, _ := json.Marshal(map[string]any{"registry": "registry.example", "auth": b64, "set_at": t0, "set_by": "team"})
	if _, err := st.Txn(ctx, store.Txn{Then: []store.Op{store.PutOp(registryAuthKey("old", "registry.example"), legacy)}}); err != nil {
		t.Fatal(err)
	}
	if got := handed(srv, "old"); got == nil || got.Auth != b64 {
		t.Errorf("a record in the clear from before sealing: handed %+v", got)
	}
}
