package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/client"
)

// DefaultServer is the server a client command talks to when neither a
// flag, the environment nor the config file names one.
const DefaultServer = "http://127.0.0.1:8080"

// connection is where a client command sends requests and how it prints
// the answers. Each command group (job, sku, …) registers these as
// persistent flags, so every command under it has them.
type connection struct {
	server, token string // from --server, --token; empty when not given
	ca            string // --ca-file; empty when not given
	output        string // -o
	// stderr is where the server's warnings are printed: the running
	// command's standard error (clientGroup sets it), else os.Stderr.
	stderr io.Writer
}

// configFile is the layout of $ALLOT_CONFIG or ~/.config/allot/config.yaml.
type configFile struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
	CA     string `yaml:"ca"` // file of the authority an https server's certificate is checked against
}

const connectionHelp = `
Every client command finds its server and token in this order: the flags
--server and --token, the environment variables ALLOT_SERVER and ALLOT_TOKEN,
then the config file ($ALLOT_CONFIG, else ~/.config/allot/config.yaml):

  server: http://127.0.0.1:8080
  token: <token>
  ca: /etc/allot/ca.pem       # only for an https server signed by a private CA

The server defaults to ` + DefaultServer + `. Several servers that share an
etcd store may be given comma-separated: a request that cannot connect to
one goes to the next. An https server's certificate is
checked against the system's authorities, or against the PEM file that
--ca-file, $ALLOT_CA or the config file's ca: names. Output is a table (-o
wide adds columns where a list has more to say, e.g. job list's nodes), or
the API's objects with -o json or -o yaml.`

// clientGroup returns a parent command whose subcommands are clients of the
// API, with the connection flags on it.
func clientGroup(use, short, long string, conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + "\n" + connectionHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return Usage(fmt.Errorf("%s: want a subcommand (%s); see 'allot %s --help'", use, strings.Join(names, ", "), use))
		},
		PersistentPreRun: func(cmd *cobra.Command, _ []string) { conn.stderr = cmd.ErrOrStderr() },
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&conn.server, "server", "", "API server URL, or several comma-separated (servers sharing an etcd store: tried in turn) (default $ALLOT_SERVER, the config file's server:, else "+DefaultServer+")")
	fl.StringVar(&conn.token, "token", "", "API token (default $ALLOT_TOKEN, else the config file's token:)")
	fl.StringVar(&conn.ca, "ca-file", "", "PEM file of the authority an https server's certificate must chain to (default $ALLOT_CA, else the config file's ca:, else the system's)")
	fl.StringVarP(&conn.output, "output", "o", "table", "output format: table, wide (more columns, e.g. job list's nodes), json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// resolve returns the server and token in force: flag, else environment,
// else config file, else the default server and no token.
func (c *connection) resolve(getenv func(string) string) (server, token string, err error) {
	server, token = c.server, c.token
	if server == "" {
		server = getenv("ALLOT_SERVER")
	}
	if token == "" {
		token = getenv("ALLOT_TOKEN")
	}
	if server == "" || token == "" {
		f, err := readConfig(getenv)
		if err != nil {
			return "", "", Usage(err)
		}
		if server == "" {
			server = f.Server
		}
		if token == "" {
			token = f.Token
		}
	}
	if server == "" {
		server = DefaultServer
	}
	return server, token, nil
}

// readConfig reads $ALLOT_CONFIG, which must exist when set, or else
// ~/.config/allot/config.yaml, which may be absent.
func readConfig(getenv func(string) string) (configFile, error) {
	path, explicit := getenv("ALLOT_CONFIG"), true
	if path == "" {
		home := getenv("HOME")
		if home == "" {
			return configFile{}, nil
		}
		path, explicit = filepath.Join(home, ".config", "allot", "config.yaml"), false
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return configFile{}, nil
	}
	if err != nil {
		return configFile{}, fmt.Errorf("read config: %w", err)
	}
	var f configFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return configFile{}, fmt.Errorf("config %s: %w (want server: URL and token: TOKEN)", path, err)
	}
	return f, nil
}

// client returns a client of the server in force, checking -o first so a
// bad format fails before any request.
func (c *connection) client() (*client.Client, format, error) {
	f, err := parseFormat(c.output)
	if err != nil {
		return nil, "", err
	}
	server, token, err := c.resolve(os.Getenv)
	if err != nil {
		return nil, "", err
	}
	cl, err := c.newClient(server, token, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	stderr := c.stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	cl.OnWarning = func(text string) { fmt.Fprintln(stderr, "Warning:", text) }
	return cl, f, nil
}

// newClient returns a client of server with token that checks an https
// server against the authority in force: --ca-file, else $ALLOT_CA, else
// the config file's ca:, else the system's.
func (c *connection) newClient(server, token string, getenv func(string) string) (*client.Client, error) {
	cl, err := client.New(server, token)
	if err != nil {
		return nil, Usage(err)
	}
	ca, flag := c.ca, "--ca-file"
	if ca == "" {
		ca, flag = getenv("ALLOT_CA"), "$ALLOT_CA"
	}
	if ca == "" {
		f, err := readConfig(getenv)
		if err != nil {
			return nil, Usage(err)
		}
		ca, flag = f.CA, "the config file's ca:"
	}
	if ca == "" {
		return cl, nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, Usage(fmt.Errorf("%s: %w", flag, err))
	}
	if err := cl.TrustPEM(pem); err != nil {
		return nil, Usage(fmt.Errorf("%s %s: %w", flag, ca, err))
	}
	return cl, nil
}

// fromAPI returns err so that Run exits with ExitUsage when the server
// rejected what the user gave (a bad spec, an unknown ID, a name taken, a
// body too large, any 4xx that names a field) and with ExitFailure
// otherwise (auth, rate limit, server or network trouble).
func fromAPI(err error) error {
	var e *client.APIError
	if errors.As(err, &e) {
		switch {
		case e.Status == 401:
			return fmt.Errorf("%w (the token comes from --token, else $ALLOT_TOKEN, else the config file; "+
				"allot up and allot server write the admin token to DATA/admin-token)", err)
		case e.Status == 400, e.Status == 404, e.Status == 409, e.Status == 413, e.Status == 422:
			return Usage(err)
		case e.Status/100 == 4 && e.Field != "": // e.g. 403 for a job of another tenant
			return Usage(err)
		}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w (is the server running? set --server or ALLOT_SERVER)", err)
	}
	return err
}

// completeWith returns a completion function that lists what list returns
// from the server, as "value\tdescription" lines, for the first argument.
func completeWith(conn *connection, list func(context.Context, *client.Client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cl, _, err := conn.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		out, err := list(ctx, cl)
		if err != nil {
			cobra.CompErrorln(err.Error()) // on stderr, which shells hide
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
