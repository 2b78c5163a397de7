package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTokenCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("token", "Create API tokens for tenants (admin)",
		`token creates API tokens. The server bootstraps one admin token (printed by
'allot server' or 'allot up' and written to DATA/admin-token); with it, an
operator creates a token per tenant. The server stores only a token's hash,
so a token is shown once.`, conn)
	cmd.AddCommand(newTokenCreateCmd(conn))
	return cmd
}

func newTokenCreateCmd(conn *connection) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "create --tenant T",
		Short: "Create a token for a tenant and print it",
		Long: `create asks the server for a new token of a tenant, and prints the token
alone on standard output, so a script can capture it. It needs an admin
token. A tenant token sees and changes only its tenant's jobs, reservations
and usage.`,
		Example: `  allot token create --tenant acme --token "$(cat data/admin-token)"
  export ALLOT_TOKEN=$(allot token create --tenant acme --token "$ADMIN")`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			tok, err := cl.CreateToken(cmd.Context(), tenant)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, tok, func() printer {
				fmt.Fprintf(cmd.ErrOrStderr(), "token for tenant %s; it is shown once, keep it secret\n", tok.Tenant)
				return table{rows: [][]string{{tok.Token}}}
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant the token acts for (required)")
	_ = cmd.MarkFlagRequired("tenant")
	return cmd
}
