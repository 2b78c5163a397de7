package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

// secret keeps a tenant's registry credentials (server/registry_auth.go).

func newSecretCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("secret", "Keep a tenant's registry credentials, which its jobs' images are pulled with",
		`secret keeps the credentials a tenant's jobs pull their images with, one per
registry. The server hands a credential only to the agent of a node that
runs an instance of the tenant whose image lies in that registry, for the
pull alone; no command shows it again, and nothing logs it. Setting and
deleting are recorded in the audit log.`, conn)
	cmd.AddCommand(newSecretSetCmd(conn), newSecretListCmd(conn), newSecretDeleteCmd(conn))
	return cmd
}

func credentialTable(cs []client.RegistryCredential) table {
	t := table{header: []string{"TENANT", "REGISTRY", "SET", "BY"}}
	for _, c := range cs {
		t.add(c.Tenant, c.Registry, c.SetAt, c.SetBy)
	}
	return t
}

func newSecretSetCmd(conn *connection) *cobra.Command {
	var tenant, registry, username string
	cmd := &cobra.Command{
		Use:   "set --registry HOST --username USER [--tenant T] < PASSWORD",
		Short: "Store the credential of a registry; the password (or token) is read from standard input",
		Long: `set stores, for the tenant (the token's; an admin token names --tenant), the
user name and password (or access token) its jobs pull images of --registry
with, replacing one set before. The password is read from standard input
(its first line), never from the command line, which every user of a host
can read.`,
		Example: `  printf '%s\n' "$GHCR_TOKEN" | allot secret set --registry ghcr.io --username team-bot
  allot secret set --registry nvcr.io --username '$oauthtoken' < ngc-key.txt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, err := readSecret(cmd.InOrStdin())
			if err != nil {
				return Usage(err)
			}
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			c, err := cl.SetRegistryCredential(cmd.Context(), tenant, registry, username, password)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, c, func() printer { return credentialTable([]client.RegistryCredential{c}) })
		},
	}
	cmd.Flags().StringVar(&registry, "registry", "", "the registry's host, e.g. ghcr.io or registry.example:5000 (docker.io for images named without one)")
	cmd.Flags().StringVar(&username, "username", "", "the user name")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (default: the token's; an admin token must name it)")
	_ = cmd.MarkFlagRequired("registry")
	_ = cmd.MarkFlagRequired("username")
	return cmd
}

// maxSecret bounds what readSecret reads.
const maxSecret = 8192

// readSecret reads the first line of r, without its line break.
func readSecret(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, maxSecret+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case line == "":
		return "", errors.New("no password on standard input: pipe it in, e.g. printf '%s\\n' \"$TOKEN\" | allot secret set …")
	case len(line) > maxSecret:
		return "", fmt.Errorf("the password is over %d bytes", maxSecret)
	}
	return line, nil
}

func newSecretListCmd(conn *connection) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "list [--tenant T]",
		Short: "List a tenant's registry credentials, without their secrets",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			cs, err := cl.RegistryCredentials(cmd.Context(), tenant)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, map[string][]client.RegistryCredential{"registry_credentials": cs},
				func() printer { return credentialTable(cs) })
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (default: the token's; an admin token must name it)")
	return cmd
}

func newSecretDeleteCmd(conn *connection) *cobra.Command {
	var tenant, registry string
	cmd := &cobra.Command{
		Use:   "delete --registry HOST [--tenant T]",
		Short: "Delete a tenant's credential of a registry",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, _, err := conn.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteRegistryCredential(cmd.Context(), tenant, registry); err != nil {
				return fromAPI(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted the credential of %s\n", registry)
			return nil
		},
	}
	cmd.Flags().StringVar(&registry, "registry", "", "the registry's host")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (default: the token's; an admin token must name it)")
	_ = cmd.MarkFlagRequired("registry")
	return cmd
}
