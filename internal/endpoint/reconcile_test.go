package endpoint

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// TestReconcileThroughHost drives the Book on nothing but a fakeHost: a
// create submits min_replicas replicas, load scales them out, and an
// update's new template is rolled out as the reconciles go, never fewer
// than desired serving nor more than desired + surge live, the outdated
// replicas canceled through Host.Cancel, and the record written back
// through Host.Put at the revision it was read at.
func TestReconcileThroughHost(t *testing.T) {
	ctx := context.Background()
	h := newFakeHost(t)
	b := New(h, Config{})
	reconcile := func() {
		t.Helper()
		if err := b.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Create(ctx, tenant("copilot"), parseEndpoint(t, chatEndpoint)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, tenant("copilot"), parseEndpoint(t, chatEndpoint)); err == nil ||
		!strings.Contains(err.Error(), `Conflict: name: endpoint "chat" exists`) {
		t.Fatalf("a second chat: %v, want a Conflict", err)
	}
	if _, err := b.Create(ctx, tenant("acme"), parseEndpoint(t, chatEndpoint)); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("acme creating copilot's endpoint: %v", err)
	}
	if live, _ := h.live(); len(live) != 1 || live[0].Spec.Labels[LabelEndpoint] != "chat" || live[0].Spec.Env[EnvEndpointToken] == "" {
		t.Fatalf("after the create: %+v, want one replica of chat with its token", live)
	}

	// 60 req/s need four replicas of 15.
	for range 3 {
		h.start()
		h.now = h.now.Add(2 * time.Second)
		report(t, b, h, 60)
		reconcile()
	}
	h.start()
	st, err := b.Get(ctx, tenant("copilot"), "chat")
	if err != nil {
		t.Fatal(err)
	}
	if live, running := h.live(); st.Desired != 4 || len(live) != 4 || running != 4 || st.Events[len(st.Events)-1].Kind != "ScaleOut" {
		t.Fatalf("under load: desired %d, %d live, %d running, events %+v", st.Desired, len(live), running, st.Events)
	}

	v2 := parseEndpoint(t, strings.Replace(chatEndpoint, "model: llama,", "model: llama, env: {MODEL_REVISION: '2'},", 1))
	if _, err := b.Update(ctx, tenant("copilot"), v2); err != nil {
		t.Fatal(err)
	}
	old := slices.Clone(h.jobs)
	for step := 0; ; step++ {
		h.now = h.now.Add(2 * time.Second)
		h.startBefore(h.now.Add(-2 * time.Second)) // a replica is queued for a reconcile before it runs
		report(t, b, h, 60)
		reconcile()
		live, running := h.live()
		if len(live) > 5 || running < 4 {
			t.Fatalf("step %d: %d live, %d running; want at most 5 and at least 4", step, len(live), running)
		}
		st, err := b.Get(ctx, tenant("copilot"), "chat")
		if err != nil {
			t.Fatal(err)
		}
		if st.RolloutSince.IsZero() {
			if last := st.Events[len(st.Events)-1]; last.Kind != EventRolledOut || len(live) != 4 {
				t.Fatalf("rolled out: %d live, last event %+v", len(live), last)
			}
			break
		}
		if step == 20 {
			t.Fatalf("no end of the rollout after %d steps: %+v", step, st.Replicas)
		}
	}
	for _, j := range old {
		if j.Status.State != model.StateCanceled {
			t.Errorf("replica %s of the first template is %s, want Canceled", j.ID, j.Status.State)
		}
	}
	if want := []string{"copilot endpoint.create endpoint/chat of copilot", "copilot endpoint.update endpoint/chat of copilot"}; !slices.Equal(h.audits, want) {
		t.Errorf("audited %q, want %q", h.audits, want)
	}
}

// A replica's env tells it where to report and the certificates to check
// the server by; a CA in the endpoint's own env never reaches it.
func TestReplicaEnv(t *testing.T) {
	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	b := New(newFakeHost(t), Config{URL: "https://allot.example:8443", CA: ca})
	env := b.replicaSpec(&Endpoint{Spec: parseEndpoint(t, chatEndpoint), token: "tok"}).Env
	if env[EnvEndpointCA] != ca || env[EnvEndpointMetricsURL] != "https://allot.example:8443/v1/endpoints/chat/metrics" ||
		env[EnvEndpoint] != "chat" || env[EnvEndpointToken] != "tok" {
		t.Fatalf("replica env %v, want the server's CA, metrics URL, the endpoint's name and token", env)
	}
	b = New(newFakeHost(t), Config{URL: "http://allot.example:8080"})
	sp := b.replicaSpec(&Endpoint{Spec: model.EndpointSpec{Name: "x", Env: map[string]string{EnvEndpointCA: "forged"}}})
	if v, ok := sp.Env[EnvEndpointCA]; ok {
		t.Fatalf("replica env keeps %s=%q from the spec", EnvEndpointCA, v)
	}
}
