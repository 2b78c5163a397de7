package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The jobs of TestUIDashboard, all on the example fleet: filler and victim
// take both 4-GPU T4 nodes of westus; urgent, standard, then preempts the
// spot victim. big asks for more westus A100s than globex's partition may
// borrow, so it stays pending with a reason.
const (
	uiFiller = `name: ui-filler
tenant: research
command: ["sh", "-c", "sleep 300"]
resources: {gpus_per_instance: 4, gpu_models: [T4]}
placement: {regions: [westus]}
`
	uiVictim = `name: ui-victim
tenant: research
priority: spot
command: ["sh", "-c", "sleep 300"]
resources: {gpus_per_instance: 4, gpu_models: [T4]}
placement: {regions: [westus]}
`
	uiUrgent = `name: ui-urgent
tenant: research
priority: standard
command: ["sh", "-c", "sleep 300"]
resources: {gpus_per_instance: 4, gpu_models: [T4]}
placement: {regions: [westus]}
`
	uiBig = `name: ui-big
tenant: globex
command: ["sh", "-c", "sleep 300"]
resources: {instance_count: 7, gpus_per_instance: 8, gpu_models: [A100]}
placement: {regions: [westus], interconnect: infiniband}
`
)

// TestUIDashboard opens /ui of 'allot up' in headless Chromium and checks
// what an operator and a tenant see: a pending job with its reason, a
// running job on its node in the fleet map, a preemption appearing without
// a reload, and a tenant's token showing none of another tenant's jobs. It
// saves a screenshot of each step under the test's artifact directory
// ($ALLOT_TEST_ARTIFACTS, or go test -artifacts).
func TestUIDashboard(t *testing.T) {
	needServer(t)
	browser := findChromium(t)
	shots := screenshotDir(t)
	url, admin := startUp(t, t.TempDir())
	globex := strings.TrimSpace(allotAtMust(t, url, admin, "token", "create", "--tenant", "globex"))

	submit := func(token, doc string) string {
		t.Helper()
		return strings.TrimSpace(allotAtMust(t, url, token, "job", "submit", "-f", writeFile(t, "job.yaml", doc)))
	}
	show := func(id string) labJob {
		t.Helper()
		var j labJob
		if err := json.Unmarshal([]byte(allotAtMust(t, url, admin, "job", "show", id, "-o", "json")), &j); err != nil {
			t.Fatalf("job show %s: %v", id, err)
		}
		return j
	}
	await := func(id, what string, ok func(labJob) bool) labJob {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			j := show(id)
			if ok(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s never %s: %+v", id, what, j)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	filler := submit(admin, uiFiller)
	victim := submit(admin, uiVictim)
	big := submit(globex, uiBig)
	defer func() {
		for _, id := range []string{filler, victim, big} {
			allotAt(t, url, admin, "job", "cancel", id)
		}
	}()
	f := await(filler, "Running", func(j labJob) bool { return j.State == "Running" && len(j.Allocations) > 0 })
	await(victim, "Running", func(j labJob) bool { return j.State == "Running" })
	b := await(big, "pending with a reason", func(j labJob) bool { return j.State == "Queued" && j.Reason != "" })
	// A pipeline step after the pending job is Blocked: it holds nothing,
	// but the queue must still show it and what it waits for.
	step := submit(globex, "name: ui-step\ntenant: globex\nafter: ["+big+"]\ncommand: [\"true\"]\nresources: {gpus_per_instance: 0, cpu: 1}\n")
	defer allotAt(t, url, admin, "job", "cancel", step)
	blocked := await(step, "Blocked", func(j labJob) bool { return j.State == "Blocked" && j.Reason != "" })

	browserCtx := newTab(t, browser)

	// The operator's tab.
	ops := browserCtx
	openDashboard(t, ops, url, admin)
	waitFor(t, ops, "the pending job's row", fmt.Sprintf(`#queue tr[data-job=%q][data-reason=%q]`, big, b.Reason))
	row := text(t, ops, fmt.Sprintf(`#queue tr[data-job=%q]`, big))
	if !strings.Contains(row, b.Reason) || !strings.Contains(row, b.Detail) {
		t.Errorf("queue row of %s reads %q; want its reason %q and detail %q", big, row, b.Reason, b.Detail)
	}
	waitFor(t, ops, "the blocked pipeline step", fmt.Sprintf(`#queue tr[data-job=%q][data-state="Blocked"][data-reason=%q]`, step, blocked.Reason))
	if row := text(t, ops, fmt.Sprintf(`#queue tr[data-job=%q]`, step)); !strings.Contains(row, big) {
		t.Errorf("queue row of the blocked step %s reads %q; want the job it waits for, %s", step, row, big)
	}
	node := f.Allocations[0].Node
	waitFor(t, ops, "the running job on its node", fmt.Sprintf(`#fleet [data-node=%q] [data-job=%q]`, node, filler))
	waitFor(t, ops, "the running job's row", fmt.Sprintf(`#running tr[data-job=%q][data-node~=%q]`, filler, node))
	if n := count(t, ops, `#fleet .node .gpu.c-standard`); n < 4 {
		t.Errorf("fleet map colours %d GPUs as standard work; want at least the filler's 4", n)
	}
	// Reservations with the nodes each holds now (or keeps for its
	// start), marked in the fleet map too.
	waitFor(t, ops, "a reservation's row", `#reservations tr[data-reservation="globex-h100"]`)
	if row := text(t, ops, `#reservations tr[data-reservation="globex-h100"]`); !strings.Contains(row, "active") ||
		!strings.Contains(row, "westeurope-h100-0") {
		t.Errorf("reservation row of globex-h100 reads %q; want it active with the westeurope nodes it holds", row)
	}
	// acme-a100-2027 starts further ahead than --reservation-earmark (7
	// days): it keeps no nodes yet.
	if row := text(t, ops, `#reservations tr[data-reservation="acme-a100-2027"]`); !strings.Contains(row, "starts in") {
		t.Errorf("reservation row of acme-a100-2027 reads %q; want its start ahead", row)
	}
	if n := count(t, ops, `#fleet .node.reserved[data-reservation="globex-h100"]`); n != 2 {
		t.Errorf("fleet map marks %d nodes held by globex-h100; want its 2", n)
	}
	screenshot(t, ops, shots, "1-admin-before-preemption.png")

	// The preemption must appear in the page already open: a mark left on
	// window survives only if the page is not reloaded.
	if _, err := chromedp.Run(ops, chromedp.Evaluate[string](`window.allotTestMark = "kept"`)); err != nil {
		t.Fatal(err)
	}
	urgent := submit(admin, uiUrgent)
	defer allotAt(t, url, admin, "job", "cancel", urgent)
	await(victim, "preempted", func(j labJob) bool { return j.Preemptions > 0 })
	waitFor(t, ops, "the preemption", fmt.Sprintf(`#preemptions tr[data-job=%q]`, victim))
	mark, err := chromedp.Run(ops, chromedp.Evaluate[string](`window.allotTestMark || ""`))
	if err != nil {
		t.Fatal(err)
	}
	if mark != "kept" {
		t.Errorf("the page was reloaded to show the preemption (mark %q)", mark)
	}
	if row := text(t, ops, fmt.Sprintf(`#preemptions tr[data-job=%q]`, victim)); !strings.Contains(row, urgent) {
		t.Errorf("preemption row %q does not name the preemptor %s", row, urgent)
	}
	screenshot(t, ops, shots, "2-admin-after-preemption.png")

	// A drained node is told apart from a lost one, with its reason.
	allotAtMust(t, url, admin, "node", "drain", "westeurope-t4x1-02", "--reason", "fan swap")
	defer allotAt(t, url, admin, "node", "resume", "westeurope-t4x1-02")
	waitFor(t, ops, "the drained node", `#fleet .node.draining[data-node="westeurope-t4x1-02"][title="drained by admin: fan swap"]`)

	// globex's tab: its own job, nobody else's, and no admin-only sections.
	tenant, cancelTenant := chromedp.NewContext(browserCtx)
	defer cancelTenant()
	openDashboard(t, tenant, url, globex)
	waitFor(t, tenant, "globex's own job", fmt.Sprintf(`#queue tr[data-job=%q]`, big))
	waitFor(t, tenant, "globex's own reservation", `#reservations tr[data-reservation="globex-h100"]`)
	waitPolls(t, tenant, 2)
	body, err := chromedp.Run(tenant, chromedp.Evaluate[string](`document.body.innerText + " " + document.body.innerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{filler, victim, urgent} {
		if strings.Contains(body, id) {
			t.Errorf("globex's dashboard shows research's job %s", id)
		}
	}
	if strings.Contains(body, "acme-a100-2027") {
		t.Error("globex's dashboard shows acme's reservation acme-a100-2027")
	}
	for _, sel := range []string{"#fleet", "#alerts", "#partitions"} {
		hidden, err := chromedp.Run(tenant, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).hidden`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if !hidden {
			t.Errorf("globex's dashboard shows the admin-only section %s", sel)
		}
	}
	screenshot(t, ops, shots, "3-admin-final.png")
	screenshot(t, tenant, shots, "4-tenant-globex.png")
}

// findChromium returns the path of a Chromium to drive, failing the test
// when there is none: CI installs Debian's chromium (.ci/run).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH: the dashboard test needs a headless browser; install Debian's chromium " +
		"(apt-get install -y --no-install-recommends chromium), as .ci/run does")
	return ""
}

// newTab starts the headless Chromium at path and returns its first tab;
// both close when the test ends.
func newTab(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancelTab)
	return tab
}

// screenshotDir is where the test's screenshots go: $ALLOT_TEST_ARTIFACTS/TEST
// when set, else the test's artifact directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := t.ArtifactDir()
	if base := os.Getenv("ALLOT_TEST_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// openDashboard loads /ui in ctx's tab and signs in with token.
func openDashboard(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	// The tab starts (and the browser with the first) on ctx itself: a
	// context with a timeout would close it when cancelled.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx,
		chromedp.Navigate(url+"/ui"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#connect")),
		chromedp.WaitVisible(chromedp.CSS("#board")),
	); err != nil {
		t.Fatalf("open %s/ui: %v", url, err)
	}
}

// waitFor waits up to 15 s for sel to be in the page.
func waitFor(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("dashboard never showed %s (%s): %v\npage:\n%s", what, sel, err, tail(page, 4<<10))
	}
}

// waitPolls waits up to 15 s until the page has drawn the API's answers n
// times.
func waitPolls(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		polls, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.body.dataset.polls || 0)`))
		if err != nil {
			t.Fatal(err)
		}
		if polls >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard polled %d times in 15s; want %d", polls, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}
