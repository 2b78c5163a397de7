package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/spec"
)

func newEndpointCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("endpoint", "Run inference endpoints that scale with their load",
		`endpoint manages inference endpoints: replicas of one serving program, each
one instance of a GPU or a fraction of one, that allot keeps between
min_replicas and max_replicas so that the p95 latency stays within the SLO.

The replicas are ordinary jobs named ENDPOINT-replica (labels endpoint: NAME,
workload: inference). Each reports its load to the server with the
endpoint's own token ($ALLOT_ENDPOINT_TOKEN, to
$ALLOT_ENDPOINT_METRICS_URL; 'allot demo serve' does); every few seconds
the autoscaler turns the reports into a desired count: more replicas at once
when the forecast load needs them, fewer only after the load has stayed low
for autoscale.scale_in_after, one step per autoscale.scale_in_interval.
Replicas that end are replaced. 'allot endpoint show NAME' lists each
decision with its reason.

An endpoint file (YAML or JSON):

  name: chat
  tenant: copilot
  model: llama-3-8b
  command: [allot, demo, serve, --service-time, 20ms]   # the default: allot demo serve
  resources: {gpu_milli: 250, gpu_models: [T4]}          # one replica
  min_replicas: 1
  max_replicas: 8
  slo: {p95_ms: 150}
  throughput: {T4: 120}          # requests/s one replica sustains at the SLO
  autoscale: {scale_in_after: 10m, scale_in_interval: 1m, lead_time: 3m, peak_window: 2m}
  rollout: {max_surge: 1, max_unavailable: 0}   # how 'update' replaces replicas

A tenant token manages its own endpoints; an admin token all of them.`, conn)
	cmd.Aliases = []string{"endpoints", "ep"}
	cmd.AddCommand(newEndpointCreateCmd(conn), newEndpointListCmd(conn), newEndpointShowCmd(conn),
		newEndpointScaleCmd(conn), newEndpointUpdateCmd(conn), newEndpointRestartCmd(conn), newEndpointUndoCmd(conn),
		newEndpointDeleteCmd(conn))
	return cmd
}

func newEndpointCreateCmd(conn *connection) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "create [-f] FILE...",
		Short: "Create the endpoints in a file and start their first replicas",
		Long: `create reads the endpoints in each FILE (one or more YAML documents separated by
"---", a list, JSON, or a directory of such files), checks them locally, and
creates each: the server stores it and submits its min_replicas replicas.
Fields left out take defaults: gpus_per_instance 1, min_replicas 1,
max_replicas min_replicas (a fixed size), priority standard, gpu_models the
models of the throughput profile, command allot demo serve, and the
autoscaler's own timings.

A problem in the file is reported with its file, line and field before
anything is sent, and create exits with status 2; so does an endpoint the
server refuses (InvalidSpec, SkuNotAvailable, QuotaExceeded, a name taken:
Conflict).`,
		Example: `  allot endpoint create -f chat.yaml
  allot endpoint create -f endpoints/ -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sendEndpoints(cmd, conn, files, "created", 0, func(cl *client.Client, _ string, doc []byte) (client.Endpoint, error) {
				return cl.CreateEndpoint(cmd.Context(), doc, "application/json")
			})
		},
	}
	filesFlag(cmd, &files, "endpoint file, or a directory of *.yaml, *.yml and *.json files (repeatable; or give them as arguments)")
	return cmd
}

func newEndpointUpdateCmd(conn *connection) *cobra.Command {
	var files []string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "update [-f] FILE...",
		Short: "Change an endpoint in place: SLO, bounds, autoscaler, or a rolling update of its replicas",
		Long: `update gives each endpoint of FILE (read as create reads it) the spec there.

What the autoscaler reads (model, min_replicas, max_replicas, slo, throughput,
autoscale, rollout) changes at once: the next reconcile decides with it, and
the desired count moves into the new bounds.

What shapes a replica (command, env, resources, priority, placement; the
endpoint's template) is rolled out, by default as a Kubernetes Deployment
rolls out a new pod template with maxUnavailable 0 and maxSurge 25 %: new
replicas start, at most a quarter of the desired count (at least one) beyond
it, and each replaces a replica of the earlier template once it serves (it
has reported its load, or has run for the endpoint's lead time); fewer than
the desired count never serve. A new replica that cannot start (no room, a
command that fails) leaves the old ones serving; 'update' back to the
earlier file makes them current again. Where no replica beyond the desired
count can start (the tenant's quota or the fleet is full), give the endpoint
rollout: {max_surge: 0, max_unavailable: 1}: replicas are then replaced in
place, one at a time. 'allot endpoint show' shows each replica's template and
the rollout's progress; a RolledOut event marks its end. With --wait D,
update follows the rollout for up to D as kubectl rollout status does,
printing its progress, and exits 1 if it has not ended by then, naming what
the new replicas wait for.

A template whose replica could never start (a GPU model no SKU has, a
reservation the tenant does not own) is refused as a submit would be, and the
tenant cannot change (exit status 2).`,
		Example: `  allot endpoint update -f chat.yaml        # after editing slo.p95_ms or throughput
  allot endpoint update chat.yaml           # after editing command or env: a rolling update
  allot endpoint show chat                  # the rollout's progress
  allot endpoint update chat.yaml --wait 10m   # until the rollout ends (exit 1 if not by then)
  allot endpoint update endpoints/`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sendEndpoints(cmd, conn, files, "updated", wait, func(cl *client.Client, name string, doc []byte) (client.Endpoint, error) {
				return cl.UpdateEndpoint(cmd.Context(), name, doc, "application/json")
			})
		},
	}
	waitFlag(cmd, &wait)
	filesFlag(cmd, &files, "endpoint file, or a directory of *.yaml, *.yml and *.json files (repeatable; or give them as arguments)")
	return cmd
}

// sendEndpoints reads the endpoints of file, checks them locally, and
// sends each in turn (create or update), stopping at the first refusal
// with a word of what was done before it; it prints the endpoints as the
// server answered them.
func sendEndpoints(cmd *cobra.Command, conn *connection, files []string, done string, wait time.Duration,
	send func(cl *client.Client, name string, doc []byte) (client.Endpoint, error)) error {
	cl, f, err := conn.client()
	if err != nil {
		return err
	}
	specs, err := spec.ReadEndpointFiles(files)
	if err != nil {
		return Usage(err)
	}
	var out []client.Endpoint
	for _, s := range specs {
		doc, err := json.Marshal(spec.EndpointDocumentOf(s))
		if err != nil {
			return err
		}
		e, err := send(cl, s.Name, doc)
		if err != nil {
			if len(out) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "allot: %s %d of %d endpoints before %s\n", done, len(out), len(specs), s.Name)
			}
			return fromAPI(err)
		}
		out = append(out, e)
	}
	var waitErr error
	if wait > 0 {
		out, waitErr = waitRollouts(cmd, cl, out, wait, cmd.ErrOrStderr())
	}
	v := struct {
		Endpoints []client.Endpoint `json:"endpoints"`
	}{out}
	if err := show(cmd.OutOrStdout(), f, v, func() printer { return endpointTable(out, time.Now()) }); err != nil {
		return err
	}
	return waitErr
}

// replicaCounts writes live/desired replicas.
func replicaCounts(e client.Endpoint) string {
	return fmt.Sprintf("%d/%d", len(e.Replicas), e.Desired)
}

func endpointTable(eps []client.Endpoint, now time.Time) table {
	t := table{header: []string{"NAME", "TENANT", "MODEL", "REPLICAS", "MIN-MAX", "REQ/S", "P95", "SLO", "ROLLOUT", "AGE", "URL"}}
	for _, e := range eps {
		s := e.Summary()
		rps, p95 := "-", "-"
		switch g, m := e.Gateway, e.Metrics; {
		case g != nil: // what callers saw, over the last minute
			rps, p95 = strconv.FormatFloat(g.RequestsPerSec, 'f', 1, 64), millis(g.Latency.P95Ms)
		case m != nil:
			rps, p95 = strconv.FormatFloat(m.RequestsPerSec, 'f', 1, 64), millis(m.P95Ms)
		}
		t.add(e.Name, e.Tenant, e.Model, replicaCounts(e), fmt.Sprintf("%d-%d", s.MinReplicas, s.MaxReplicas),
			rps, p95, millis(s.SLO.P95Ms), rolloutCell(e), age(e.CreatedAt, now), orDash(e.URL))
	}
	return t
}

// millis writes a latency in milliseconds.
// millis writes a latency in ms with at most one decimal: "150 ms",
// "21.4 ms".
func millis(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " ms"
}

func newEndpointListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List endpoints with their replicas and load",
		Long: `list shows the endpoints the token may see: a tenant's own, or all of them
for an admin, with their replicas (running or starting / desired), bounds,
the load and p95 latency their replicas last reported, the SLO, and during a
rolling update how many of the desired replicas run the new template.`,
		Example: `  allot endpoint list
  allot endpoint list -o json | jq '.endpoints[] | {name, desired}'`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fetchAndList(cmd, conn, "endpoints", (*client.Client).ListEndpoints,
				func(eps []client.Endpoint) printer { return endpointTable(eps, time.Now()) })
		},
	}
}

// completeEndpoints completes endpoint names.
func completeEndpoints(conn *connection) cobra.CompletionFunc {
	return completeWith(conn, func(ctx context.Context, cl *client.Client) ([]string, error) {
		eps, err := cl.ListEndpoints(ctx)
		out := make([]string, 0, len(eps))
		for _, e := range eps {
			out = append(out, e.Name+"\t"+e.Tenant+" "+e.Model+" "+replicaCounts(e))
		}
		return out, err
	})
}

func newEndpointShowCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show an endpoint: its spec, replicas, last metrics and scaling events",
		Long: `show prints an endpoint: a summary of its spec (replica shape, bounds, SLO,
throughput profile, autoscaler timings), the autoscaler's latest decision,
the load its replicas last reported, each replica with its state, node and
GPU model and template, and the events (creation, scale-outs, scale-ins,
replaced replicas, changed bounds, updates and finished rollouts), each with
the reason the autoscaler or the server gave. With -o json or -o yaml it
prints the API's Endpoint object.`,
		Example: `  allot endpoint show chat
  allot endpoint show chat -o json | jq -r '.events[] | .kind + ": " + .reason'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeEndpoints(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.Endpoint, error) {
				return cl.GetEndpoint(ctx, args[0])
			}
			return fetchAndShow(cmd, conn, get, func(e client.Endpoint) printer { return endpointSections(e) })
		},
	}
}

// sections prints printers one after the other, a blank line between.
type sections []printer

func (s sections) print(w io.Writer) error {
	for i, p := range s {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := p.print(w); err != nil {
			return err
		}
	}
	return nil
}

func endpointSections(e client.Endpoint) sections {
	s := e.Summary()
	var f fields
	f.add("Name", e.Name)
	f.add("Tenant", e.Tenant)
	f.add("Model", e.Model)
	f.add("Command", strings.Join(s.Command, " "))
	shape := fmt.Sprintf("%d GPU", s.Resources.GPUsPerInstance)
	if s.Resources.GPUMilli > 0 && s.Resources.GPUMilli < 1000 {
		shape = fmt.Sprintf("%d/1000 of a GPU", s.Resources.GPUMilli)
	}
	f.add("Replica", shape+" of "+strings.Join(s.Resources.GPUModels, ", ")+", priority "+s.Priority)
	f.add("Replicas", fmt.Sprintf("%d running or starting, %d desired (min %d, max %d)", len(e.Replicas), e.Desired,
		s.MinReplicas, s.MaxReplicas))
	f.add("Template", templateLine(e))
	if e.PreviousTemplate != "" {
		f.add("Previous", e.PreviousTemplate+" ('allot endpoint undo "+e.Name+"' rolls back to it)")
	}
	rollout := "default: at most a quarter of the desired count (at least 1) beyond it, none fewer serving"
	if r := s.Rollout; r != nil {
		rollout = fmt.Sprintf("at most %d beyond the desired count, %d fewer serving", r.MaxSurge, r.MaxUnavailable)
	}
	f.add("Rollout", rollout)
	f.add("SLO", "p95 ≤ "+millis(s.SLO.P95Ms))
	models := make([]string, 0, len(s.Throughput))
	for m := range s.Throughput {
		models = append(models, m)
	}
	slices.Sort(models)
	var tp []string
	for _, m := range models {
		tp = append(tp, fmt.Sprintf("%s %g req/s", m, s.Throughput[m]))
	}
	f.add("Throughput", strings.Join(tp, ", "))
	f.add("Autoscale", fmt.Sprintf("scale in after %s, then at most every %s; lead time %s; peak window %s",
		orDash(s.Autoscale["scale_in_after"]), orDash(s.Autoscale["scale_in_interval"]), orDash(s.Autoscale["lead_time"]),
		orDash(s.Autoscale["peak_window"])))
	f.add("URL", orDash(e.URL))
	if g := e.Gateway; g != nil {
		f.add("Gateway", fmt.Sprintf("last minute: %.1f req/s, %d errors, %d in flight; latency p50 %s p95 %s p99 %s; first byte p50 %s p95 %s p99 %s",
			g.RequestsPerSec, g.Errors, g.InFlight, millis(g.Latency.P50Ms), millis(g.Latency.P95Ms), millis(g.Latency.P99Ms),
			millis(g.FirstByte.P50Ms), millis(g.FirstByte.P95Ms), millis(g.FirstByte.P99Ms)))
	} else {
		f.add("Gateway", "- (no gateway has reported in the last minute)")
	}
	if m := e.Metrics; m != nil {
		f.add("Metrics", fmt.Sprintf("%.1f req/s, p95 %s, utilisation %.2f, from %d replicas at %s", m.RequestsPerSec,
			millis(m.P95Ms), m.Utilisation, m.Replicas, timestamp(m.At)))
	} else {
		f.add("Metrics", "- (no replica has reported in the last minute)")
	}
	f.add("Decision", orDash(e.Reason))
	if b := e.BackOff; b != nil {
		f.add("Back-off", backOffLine(*b))
	}
	f.add("Created", timestamp(e.CreatedAt))

	reps := table{header: []string{"REPLICA", "STATE", "REASON", "NODE", "GPU", "TEMPLATE", "ROUTED", "REQ/S", "IN-FLIGHT", "P95"}}
	measured := map[string]client.EndpointGatewayReplica{}
	if g := e.Gateway; g != nil {
		for _, r := range g.Replicas {
			measured[r.Job] = r
		}
	}
	for _, r := range e.Replicas {
		t := orDash(r.Template)
		if r.Outdated {
			t += " (outdated)"
		}
		routed, rps, inFlight, p95 := "-", "-", "-", "-"
		if m, ok := measured[r.Job]; ok {
			routed = map[bool]string{true: "ready", false: "no"}[m.Routed && m.Ready]
			if m.Routed && !m.Ready {
				routed = "not ready"
			}
			rps, inFlight, p95 = strconv.FormatFloat(m.RequestsPerSec, 'f', 1, 64), strconv.Itoa(m.InFlight), millis(m.Latency.P95Ms)
		}
		reps.add(r.Job, r.State, orDash(r.Reason), orDash(r.Node), orDash(r.GPUModel), t, routed, rps, inFlight, p95)
	}
	evs := table{header: []string{"AT", "EVENT", "DESIRED", "REASON"}}
	for _, ev := range e.Events {
		evs.add(timestamp(ev.At), ev.Kind, fmt.Sprintf("%d→%d", ev.From, ev.To), ev.Reason)
	}
	return sections{f, reps, evs}
}

// backOffLine says how far an endpoint backs off from failing replicas:
// "3 failed in a row (latest at …): no replica is submitted before …".
func backOffLine(b client.EndpointBackOff) string {
	line := fmt.Sprintf("%d failed in a row (latest at %s): ", b.Failures, timestamp(b.LastFailure))
	if time.Now().Before(b.Until.Time) {
		return line + "no replica is submitted before " + timestamp(b.Until)
	}
	return line + "replicas are submitted again since " + timestamp(b.Until) + "; the count resets once one runs 10m"
}

// rolloutCell is "-", or during a rollout how many of the desired
// replicas run the new template: "1/3 new".
func rolloutCell(e client.Endpoint) string {
	if e.RolloutSince.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%d/%d new", runningCurrent(e), e.Desired)
}

// runningCurrent counts the replicas of e that run its template.
func runningCurrent(e client.Endpoint) int {
	n := 0
	for _, r := range e.Replicas {
		if !r.Outdated && r.State == "Running" {
			n++
		}
	}
	return n
}

// templateLine says which template the endpoint's replicas should run and
// how far its rollout is.
func templateLine(e client.Endpoint) string {
	if e.RolloutSince.IsZero() {
		return orDash(e.Template)
	}
	return fmt.Sprintf("%s, rolling out since %s: %d of %d desired replicas run it", e.Template, timestamp(e.RolloutSince),
		runningCurrent(e), e.Desired)
}

func newEndpointScaleCmd(conn *connection) *cobra.Command {
	var minReplicas, maxReplicas int
	cmd := &cobra.Command{
		Use:   "scale NAME --min N --max M",
		Short: "Change an endpoint's replica bounds",
		Long: `scale sets an endpoint's min_replicas and max_replicas. The desired count
moves into the new bounds at once (an event says so) and the server starts
or stops replicas within seconds; between the bounds, the autoscaler goes
on deciding. --min must be at least 1 and --max at least --min. --min and
--max equal pin the endpoint at that size.`,
		Example: `  allot endpoint scale chat --min 2 --max 16
  allot endpoint scale chat --min 4 --max 4     # a fixed size`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeEndpoints(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			if minReplicas < 1 || maxReplicas < minReplicas {
				return Usage(errors.New("want --min at least 1 and --max at least --min"))
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			e, err := cl.ScaleEndpoint(cmd.Context(), args[0], minReplicas, maxReplicas)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, e, func() printer { return endpointTable([]client.Endpoint{e}, time.Now()) })
		},
	}
	cmd.Flags().IntVar(&minReplicas, "min", 0, "min_replicas (required)")
	cmd.Flags().IntVar(&maxReplicas, "max", 0, "max_replicas (required)")
	_ = cmd.MarkFlagRequired("min")
	_ = cmd.MarkFlagRequired("max")
	return cmd
}

func newEndpointRestartCmd(conn *connection) *cobra.Command {
	return rolloutCmd(conn, "restart", "Restarting",
		"Replace every replica of an endpoint with a new one, by a rolling update",
		`restart rolls every replica of the endpoint over to a new one, as kubectl
rollout restart does, with the same spec: a replica that reads its model or
configuration when it starts picks up the new one. It is a rolling update
within the endpoint's rollout bounds ('allot endpoint update --help'): by
default new replicas start, at most a quarter of the desired count (at least
one) beyond it, and each replaces an old one once it serves. 'allot endpoint show NAME' shows the progress; a RolledOut event marks
the end; --wait D follows it for up to D, as for update.`,
		`  allot endpoint restart chat
  allot endpoint restart chat --wait 10m   # until every replica is new, as kubectl rollout status`,
		func(ctx context.Context, cl *client.Client, name string) (client.Endpoint, error) {
			return cl.RestartEndpoint(ctx, name)
		})
}

func newEndpointUndoCmd(conn *connection) *cobra.Command {
	return rolloutCmd(conn, "undo", "Rolling back",
		"Roll an endpoint back to its template before the last update or restart",
		`undo rolls the endpoint back to the template it had before its last
template change (an update of command, env, resources, priority or
placement, a restart, or an undo), as kubectl rollout undo does; the replica
bounds, SLO, throughput and autoscaler stay as they are. 'allot endpoint show
NAME' names that template on its Previous line. In the middle of a rollout,
the replicas of the earlier template that still run serve on and the new ones
go; otherwise it is a rolling update within the endpoint's rollout bounds. A
second undo rolls forward again. An endpoint whose template never changed is
refused (Conflict), and so is one whose earlier template could not start any
more (a reservation gone). --wait D follows the rollout for up to D, as for
update.`,
		`  allot endpoint undo chat
  allot endpoint undo chat --wait 10m`,
		func(ctx context.Context, cl *client.Client, name string) (client.Endpoint, error) {
			return cl.UndoEndpoint(ctx, name)
		})
}

// rolloutCmd is a command that starts a rollout of endpoint NAME by send
// (restart, undo), follows it with --wait, and prints what rolls out.
func rolloutCmd(conn *connection, use, doing, short, long, example string,
	send func(ctx context.Context, cl *client.Client, name string) (client.Endpoint, error)) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:               use + " NAME",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeEndpoints(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			e, err := send(cmd.Context(), cl, args[0])
			if err != nil {
				return fromAPI(err)
			}
			var waitErr error
			if wait > 0 {
				var eps []client.Endpoint
				eps, waitErr = waitRollouts(cmd, cl, []client.Endpoint{e}, wait, cmd.ErrOrStderr())
				e = eps[0]
			}
			if err := show(cmd.OutOrStdout(), f, e, func() printer {
				var out fields
				out.add(doing, e.Name)
				out.add("Template", templateLine(e))
				out.add("Progress", "allot endpoint show "+e.Name)
				return out
			}); err != nil {
				return err
			}
			return waitErr
		},
	}
	waitFlag(cmd, &wait)
	return cmd
}

func newEndpointDeleteCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Stop an endpoint's replicas and delete it",
		Long: `delete cancels every replica of the endpoint (their processes get SIGTERM,
then SIGKILL after the grace), then deletes the endpoint and its metrics
token. Only its tenant or an admin may delete it.`,
		Example:           `  allot endpoint delete chat`,
		Aliases:           []string{"rm"},
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeEndpoints(conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			return deleteAndShow(cmd, conn, "endpoint", args[0], (*client.Client).DeleteEndpoint)
		},
	}
}
