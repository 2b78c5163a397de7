package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newAuditCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("audit", "Read the append-only audit log (admin)",
		`audit reads the server's audit log: one record per change a person may
later ask "who did that?" of — quota requests made, approved or denied,
quota edits, tokens created or revoked, reservations created or deleted,
policies applied or deleted, and jobs canceled by someone other than their
owner. Each record has the server's time, the actor (a tenant, admin, or
server for what it did at start) with the name of the token used, the
action, the object and a detail. The log is append-only: nothing in the API
rewrites or deletes a record (docs/audit.md). Admin only: a tenant token
gets Forbidden.`, conn)
	cmd.AddCommand(newAuditListCmd(conn))
	return cmd
}

func newAuditListCmd(conn *connection) *cobra.Command {
	var q client.AuditQuery
	cmd := &cobra.Command{
		Use:   "list [--since 24h|RFC3339] [--actor NAME] [--limit N]",
		Short: "List audit records, oldest first",
		Long: `list shows audit records, oldest first. --since keeps those at or after a
time: RFC 3339, a date, or a duration back from now (24h, 7d); default all.
--actor keeps those of one actor: a tenant, admin, server, or the name a
token was given. At most --limit records are shown (default 1000); when
more match, a line on standard error says so: ask again with --since after
the last one shown.`,
		Example: `  allot audit list --since 24h
  allot audit list --actor admin -o json | jq -r '.records[] | select(.action == "quota.approve") | .detail'
  allot audit list --since 2026-12-01T00:00:00Z --actor acme`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			log, err := cl.Audit(cmd.Context(), q)
			if err != nil {
				return fromAPI(err)
			}
			if log.Records == nil {
				log.Records = []client.AuditRecord{}
			}
			if log.More {
				fmt.Fprintf(cmd.ErrOrStderr(), "more records match than the %d shown; ask again with --since after the last one\n",
					len(log.Records))
			}
			return show(cmd.OutOrStdout(), f, log, func() printer {
				t := table{header: []string{"TIME", "ACTOR", "TOKEN", "ACTION", "OBJECT", "DETAIL"}}
				for _, r := range log.Records {
					t.add(r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Actor, orDash(r.Token), r.Action, r.Object, orDash(r.Detail))
				}
				return t
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Since, "since", "", "only records at or after this time: RFC 3339, a date, or a duration back from now (24h, 7d)")
	fl.StringVar(&q.Actor, "actor", "", "only records of this actor or token name")
	fl.IntVar(&q.Limit, "limit", 0, "at most this many records (default 1000, at most 10000)")
	return cmd
}
