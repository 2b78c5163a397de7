package cli

import (
	"fmt"

	"github.com/allot-dev/allot/internal/client"

	"github.com/spf13/cobra"
)

func newTokenCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("token", "Create, list and revoke API tokens (admin)",
		`token creates API tokens. The server bootstraps one admin token (printed by
'allot server' or 'allot up' and written to DATA/admin-token); with it, an
operator creates a token per tenant. The server stores only a token's hash,
so a token is shown once; 'token list' shows what is known of each token
(never the token) and 'token revoke' ends one.`, conn)
	cmd.AddCommand(newTokenCreateCmd(conn), newTokenListCmd(conn), newTokenRevokeCmd(conn))
	return cmd
}

func newTokenCreateCmd(conn *connection) *cobra.Command {
	var tenant, node, name, ttl string
	var metrics, gw bool
	cmd := &cobra.Command{
		Use:   "create --tenant T | --node N | --metrics | --gateway [--name NAME] [--ttl 720h]",
		Short: "Create a token for a tenant, a node's agent, Prometheus or a gateway and print it",
		Long: `create asks the server for a new token of a tenant, and prints the token
alone on standard output, so a script can capture it. It needs an admin
token. A tenant token sees and changes only its tenant's jobs, reservations
and usage. A node token (--node) is for that node's 'allot agent': it may
register, heartbeat and poll that node, and report events, logs and
checkpoints of the jobs running there, nothing else. A metrics-reader token
(--metrics) is for Prometheus: it reads every series of /metrics, every
tenant's included, and nothing else (without a token /metrics serves only
the series of no tenant in particular; with a tenant's token, that tenant's
too); deploy/prometheus/prometheus.yml reads it from a file. A gateway token
(--gateway) is for 'allot gateway': it reads the routes of every tenant's
endpoints (their replicas' addresses and the hashes of the tokens that may
call them) and reports what the gateway measured, nothing else. --ttl makes the
token expire (a request with it is then refused: 401, "token expired"); --name
labels it in 'allot token list'.`,
		Example: `  allot token create --tenant acme --token "$(cat data/admin-token)"
  export ALLOT_TOKEN=$(allot token create --tenant acme --token "$ADMIN")
  allot token create --node eastus-h100-01 --token "$ADMIN"
  allot token create --metrics --name prometheus > /etc/prometheus/allot-token
  allot token create --gateway --name gw-1 > /etc/allot/gateway-token
  allot token create --tenant acme --name ci --ttl 720h`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n := btoi(tenant != "") + btoi(node != "") + btoi(metrics) + btoi(gw); n != 1 {
				return Usage(fmt.Errorf("give --tenant, --node, --metrics or --gateway (one of them)"))
			}
			scope := ""
			switch {
			case metrics:
				scope = "metrics"
			case gw:
				scope = "gateway"
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			tok, err := cl.CreateTokenWith(cmd.Context(), client.TokenRequest{Tenant: tenant, Node: node, Scope: scope, Name: name, TTL: ttl})
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, tok, func() printer {
				who := "tenant " + tok.Tenant
				switch {
				case tok.Node != "":
					who = "node " + tok.Node
				case metrics:
					who = "reading /metrics"
				case gw:
					who = "a gateway"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "token for %s; it is shown once, keep it secret\n", who)
				return table{rows: [][]string{{tok.Token}}}
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant the token acts for")
	cmd.Flags().StringVar(&node, "node", "", "the fleet node whose agent the token is for")
	cmd.Flags().BoolVar(&metrics, "metrics", false, "a metrics-reader token, for Prometheus: it reads every series of /metrics and nothing else")
	cmd.Flags().BoolVar(&gw, "gateway", false, "a gateway token, for 'allot gateway': it reads every endpoint's routes and reports measurements, nothing else")
	cmd.Flags().StringVar(&name, "name", "", "a name for the token, shown by 'token list' (letters, digits, - _ .)")
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the token is valid, e.g. 720h or 30d (default: until revoked)")
	return cmd
}

// btoi is 1 for true, 0 for false: to count the flags given.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
