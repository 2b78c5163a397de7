package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newReservationCmd() *cobra.Command {
	conn := &connection{}
	cmd := clientGroup("reservation", "Hold nodes of a SKU for a tenant over a time window",
		`reservation manages capacity reservations: Count nodes of one SKU in one
region, held for their owner between start and end. Jobs run inside one
with placement.reservation: NAME; before its start they wait
(ReservationNotActive). Before the start the nodes it will take are kept:
they take only the owner's work, spot work, and work whose retry.timeout
ends it by the start. In the window, nodes the owner leaves idle are lent
to spot work and taken back when the owner's work needs them. 'show' tells
what was bought against what was used. A tenant token creates reservations
it owns; an admin token must name the owner.`, conn)
	cmd.Aliases = []string{"reservations", "rsv"}
	cmd.AddCommand(newReservationCreateCmd(conn), newReservationListCmd(conn), newReservationShowCmd(conn), newReservationDeleteCmd(conn))
	return cmd
}

func newReservationCreateCmd(conn *connection) *cobra.Command {
	var r client.Reservation
	var start, end string
	cmd := &cobra.Command{
		Use:   "create --sku S --region R --count N [--start T --end T] [--name N] [--owner T]",
		Short: "Reserve nodes of a SKU in a region",
		Long: `create reserves --count nodes of SKU --sku in --region. --start and --end
take RFC 3339 times (2027-03-01T00:00:00Z), dates (2027-03-01, midnight UTC),
"now", or an offset from now (+24h). A start left out, or in the past, is
now: a reservation holds nodes from when it is made. An end left out never
ends (administrators only: a tenant's reservation lasts at most its
reservation.max_duration). --name names the reservation (jobs refer to it
by name; default SKU-REGION-XXXXXX, printed); --owner is the tenant it is
held for, required with an admin token. A name already taken is a Conflict
(exit status 2). The nodes are taken from one cluster when one of the SKU
in the region holds --count; when none does, create warns: a gang runs
within one cluster, so it fits the reservation only up to the largest
cluster's share.`,
		Example: `  allot reservation create --sku ND96-H100x8-IB --region eastus --count 2 \
      --start now --end +720h --name acme-h100
  allot reservation create --sku ND96-A100x8-IB --region westus --count 2 \
      --start 2027-03-01 --end 2027-09-01 --owner acme --token "$ADMIN"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, f, err := conn.client()
			if err != nil {
				return err
			}
			now := time.Now().UTC().Truncate(time.Second)
			if r.Start, err = parseWhen("--start", start, now); err != nil {
				return err
			}
			if r.End, err = parseWhen("--end", end, now); err != nil {
				return err
			}
			if r.Count < 1 {
				return Usage(fmt.Errorf("--count %d: want at least 1 node", r.Count))
			}
			if !r.Start.IsZero() && !r.End.IsZero() && !r.End.After(r.Start.Time) {
				return Usage(fmt.Errorf("--end %s is not after --start %s", timestamp(r.End), timestamp(r.Start)))
			}
			if r.Name == "" {
				r.Name = reservationName(r.SKU, r.Region)
			}
			out, err := cl.CreateReservation(cmd.Context(), r)
			if err != nil {
				return fromAPI(err)
			}
			return show(cmd.OutOrStdout(), f, out, func() printer { return reservationTable([]client.Reservation{out}) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&r.SKU, "sku", "", "SKU of the nodes, e.g. ND96-H100x8-IB (required; see 'allot sku list')")
	fl.StringVar(&r.Region, "region", "", "region of the nodes, e.g. eastus (required)")
	fl.IntVar(&r.Count, "count", 0, "number of nodes (required)")
	fl.StringVar(&start, "start", "", "start: RFC 3339, a date, now, or +DURATION")
	fl.StringVar(&end, "end", "", "end: RFC 3339, a date, now, or +DURATION")
	fl.StringVar(&r.Name, "name", "", "name of the reservation (default SKU-REGION-XXXXXX)")
	fl.StringVar(&r.Owner, "owner", "", "tenant the nodes are held for (required with an admin token)")
	for _, name := range []string{"sku", "region", "count"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// parseWhen reads a time flag: RFC 3339, a date, "now", or a duration
// from now ("+24h", or "24h" as sbatch --begin reads it). Empty is the
// zero Time.
func parseWhen(flag, s string, now time.Time) (client.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return client.Time{}, nil
	case s == "now":
		return client.Time{Time: now}, nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err == nil && d >= 0 {
			return client.Time{Time: now.Add(d)}, nil
		}
	default:
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return client.Time{Time: t}, nil
		}
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return client.Time{Time: t}, nil
		}
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			return client.Time{Time: now.Add(d)}, nil
		}
	}
	return client.Time{}, Usage(fmt.Errorf("%s %q: want an RFC 3339 time (2027-03-01T00:00:00Z), a date (2027-03-01), now, or a duration from now (+24h)", flag, s))
}

// reservationName makes a name for a reservation created without one:
// SKU-REGION- and six random hex digits, within the 63 letters, digits, '.',
// '_' and '-' that names may have.
func reservationName(sku, region string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	suffix := "-" + hex.EncodeToString(b[:])
	name := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, strings.ToLower(sku+"-"+region))
	name = strings.TrimLeft(name, ".-_")
	if len(name) > 63-len(suffix) {
		name = name[:63-len(suffix)]
	}
	if name == "" {
		name = "rsv"
	}
	return name + suffix
}

func reservationTable(rs []client.Reservation) table {
	t := table{header: []string{"NAME", "OWNER", "SKU", "REGION", "COUNT", "START", "END"}}
	for _, r := range rs {
		t.add(r.Name, r.Owner, r.SKU, r.Region, strconv.Itoa(r.Count), timestamp(r.Start), timestamp(r.End))
	}
	return t
}

func newReservationListCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List reservations",
		Long: `list shows the reservations the token may see: a tenant's own, or all of
them for an admin, with their SKU, region, node count and time window.`,
		Example: `  allot reservation list
  allot reservation list -o yaml`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fetchAndList(cmd, conn, "reservations", (*client.Client).ListReservations,
				func(rs []client.Reservation) printer { return reservationTable(rs) })
		},
	}
}

func newReservationDeleteCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a reservation",
		Long: `delete removes a reservation and releases its nodes. Jobs placed in it
keep running; queued jobs that name it wait until it exists again. Only its
owner or an admin may delete it.`,
		Example: `  allot reservation delete acme-h100`,
		Aliases: []string{"rm"},
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: completeWith(conn, func(ctx context.Context, cl *client.Client) ([]string, error) {
			rs, err := cl.ListReservations(ctx)
			out := make([]string, 0, len(rs))
			for _, r := range rs {
				out = append(out, r.Name+"\t"+r.Owner+" "+r.SKU+" x"+strconv.Itoa(r.Count))
			}
			return out, err
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			return deleteAndShow(cmd, conn, "reservation", args[0], (*client.Client).DeleteReservation)
		},
	}
}
