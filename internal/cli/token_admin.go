package cli

import (
	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newTokenListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tokens the server knows, never the tokens themselves (admin)",
		Long: `list shows every stored token: its ID (the first digits of its hash, which
'token revoke' takes), name, kind (admin, tenant, node, endpoint), whom it
acts for, when it was created, when it expires, and when a request last
carried it (since the server started). The server keeps only hashes: no
token can be shown again.`,
		Example: `  allot token list
  allot token list -o json | jq -r '.tokens[] | select(.expired) | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			toks, err := cl.Tokens(cmd.Context())
			if err != nil {
				return fromAPI(err)
			}
			if toks == nil {
				toks = []client.TokenInfo{}
			}
			v := struct {
				Tokens []client.TokenInfo `json:"tokens"`
			}{toks}
			return show(cmd.OutOrStdout(), f, v, func() printer {
				t := table{header: []string{"ID", "NAME", "KIND", "FOR", "CREATED", "EXPIRES", "LAST USED"}}
				for _, k := range toks {
					expires := "never"
					if !k.ExpiresAt.IsZero() {
						expires = timestamp(k.ExpiresAt)
						if k.Expired {
							expires += " (expired)"
						}
					}
					t.add(k.ID, orDash(k.Name), k.Kind, orDash(tokenFor(k)), timestamp(k.CreatedAt), expires, timestamp(k.LastUsed))
				}
				return t
			})
		},
	}
}

// tokenFor says whom a token acts for.
func tokenFor(k client.TokenInfo) string {
	switch {
	case k.Tenant != "":
		return "tenant " + k.Tenant
	case k.Node != "":
		return "node " + k.Node
	case k.Endpoint != "":
		return "endpoint " + k.Endpoint
	}
	return ""
}

func newTokenRevokeCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID|NAME...",
		Short: "Revoke tenant or node tokens (admin)",
		Long: `revoke deletes tokens by the ID 'token list' shows (or by a name that only
one token has): every later request with them is refused (401). The admin
token is not revoked here (delete DATA/admin-token and restart), nor an
endpoint's (it goes with the endpoint). It prints each token's outcome and
exits with status 1 if any failed (status 2 for one the server refused).`,
		Example: `  allot token revoke 3f2a9c0d1b7e
  allot token revoke ci-acme`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				k, err := cl.RevokeToken(cmd.Context(), args[0])
				if err != nil {
					return fromAPI(err)
				}
				return show(cmd.OutOrStdout(), f, k, func() printer {
					t := table{header: []string{"ID", "NAME", "KIND", "FOR", "REVOKED"}}
					t.add(k.ID, orDash(k.Name), k.Kind, orDash(tokenFor(k)), "yes")
					return t
				})
			}
			var outs []outcome
			failed := 0
			for _, a := range args {
				k, err := cl.RevokeToken(cmd.Context(), a)
				if err != nil {
					failed++
					outs = append(outs, outcome{ID: a, Error: err.Error()})
					continue
				}
				outs = append(outs, outcome{ID: k.ID, Name: k.Name, State: "Revoked"})
			}
			return printOutcomes(cmd, f, outs, failed, "tokens")
		},
	}
}
