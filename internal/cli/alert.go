package cli

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newAlertCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("alert", "See the server's built-in alerts (admin)",
		`alert shows the alerts allot evaluates itself, for an install with no
Prometheus: the rules of deploy/prometheus/rules.yaml (GPU allocation over
80 %, a partition below its guarantee with work queued, an endpoint over its
SLO, a node NotReady, slow or panicked scheduling cycles), evaluated by the
server every 15 s over the values /metrics exposes. An alert is pending
while its condition holds for less than the rule's 'for', then firing; it
is resolved once the condition stops holding. The server logs each firing
and resolved alert and POSTs it to --alert-webhook when set (docs/alerts.md).
Alerts are admin-only: a tenant token gets Forbidden.`, conn)
	cmd.AddCommand(newAlertListCmd(conn))
	return cmd
}

func newAlertListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List firing, pending and recently resolved alerts",
		Long: `list shows the firing alerts, then the pending ones, then those resolved in
the last hour (newest first; the server keeps them in memory, so a restart
forgets them). Each row has the rule, its severity, its state, the labels
that say which node, partition, region or endpoint it is about, the value
of the rule's expression, how long ago the condition started to hold (for a
resolved alert: how long ago it resolved), and a sentence for a person.`,
		Example: `  allot alert list
  allot alert list -o json | jq '.alerts[] | select(.state == "firing") | .summary'
  allot alert list -o yaml`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			return fetchAndList(cmd, conn, "alerts", (*client.Client).Alerts, func(alerts []client.Alert) printer {
				t := table{header: []string{"ALERT", "SEVERITY", "STATE", "LABELS", "VALUE", "SINCE", "SUMMARY"}}
				for _, a := range alerts {
					since := a.Since
					if a.ResolvedAt != nil {
						since = *a.ResolvedAt
					}
					t.add(a.Name, a.Severity, a.State, orDash(alertLabels(a.Labels)),
						strconv.FormatFloat(a.Value, 'g', 4, 64), span(now.Sub(since)), a.Summary)
				}
				return t
			})
		},
	}
}

// alertLabels writes labels as name=value pairs sorted by name.
func alertLabels(l map[string]string) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + l[n]
	}
	return strings.Join(parts, ",")
}

// parseWebhookURL checks --alert-webhook: an absolute http or https URL
// with a host; "" means no webhook.
func parseWebhookURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--alert-webhook %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("--alert-webhook %q: want an http:// or https:// URL", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("--alert-webhook %q: no host", s)
	}
	if u.User != nil {
		return "", fmt.Errorf("--alert-webhook %q: credentials in the URL are not accepted; put a secret in its path or query (the server logs only scheme, host and path)", s)
	}
	return u.String(), nil
}
