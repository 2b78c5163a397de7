package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
)

func newReservationShowCmd(conn *connection) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a reservation: what was bought of it and what its owner used",
		Long: `show prints a reservation with what it bought against what its owner used,
in GPU-hours, up to now:

  bought  count × the SKU's GPUs × the hours of the window passed so far
          (and over the whole window, when it has an end);
  used    the GPU-hours of the owner's jobs that name the reservation
          (placement.reservation: NAME), inside the window;
  used %  used over bought so far.

Before the start nothing is bought yet; the reservation's nodes then take
only the owner's work, spot work and work whose retry.timeout ends it before
the start. In the window, nodes the owner leaves idle are lent to spot work,
evicted when the owner's work needs them. A reservation without a start
(from the tenants file) has nothing to count bought from: those fields are
"-" (null in JSON). Holds (in the window) or Keeps (before the start) names
the nodes the scheduler gives it now: Ready nodes of its SKU and region,
from one cluster when one can give them all, chosen afresh each cycle, so
they may change. With -o json or -o yaml it prints the API's
ReservationReport.`,
		Example: `  allot reservation show acme-h100
  allot reservation show acme-h100 -o json | jq .use.used_percent`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeWith(conn, func(ctx context.Context, cl *client.Client) ([]string, error) {
			rs, err := cl.ListReservations(ctx)
			out := make([]string, 0, len(rs))
			for _, r := range rs {
				out = append(out, r.Name+"\t"+r.Owner+" "+r.SKU+" x"+strconv.Itoa(r.Count))
			}
			return out, err
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := func(cl *client.Client, ctx context.Context) (client.ReservationReport, error) {
				return cl.GetReservation(ctx, args[0])
			}
			return fetchAndShow(cmd, conn, get, func(r client.ReservationReport) printer { return reservationFields(r) })
		},
	}
}

func reservationFields(r client.ReservationReport) fields {
	u := r.Use
	usd := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return "$" + strconv.FormatFloat(*v, 'f', 2, 64)
	}
	num := func(v *float64, unit string) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64) + unit
	}
	var f fields
	f.add("Name", r.Name)
	f.add("Owner", r.Owner)
	f.add("Nodes", fmt.Sprintf("%d × %s in %s (%d GPUs)", r.Count, r.SKU, r.Region, u.GPUs))
	switch {
	case len(u.Nodes) > 0 && u.Active:
		f.add("Holds", strings.Join(u.Nodes, ", "))
	case len(u.Nodes) > 0:
		f.add("Keeps", strings.Join(u.Nodes, ", ")+" (for its start)")
	}
	window := timestamp(r.Start) + " to " + timestamp(r.End)
	if u.WindowHours != nil {
		window += " (" + num(u.WindowHours, " h") + ")"
	}
	f.add("Window", window)
	switch {
	case u.Active:
		f.add("State", "active")
	case u.StartsInHours != nil:
		f.add("State", "starts in "+num(u.StartsInHours, " h")+": its nodes take only the owner's, spot and timeout-bounded work")
	case !r.End.IsZero() && !u.AsOf.Before(r.End.Time):
		f.add("State", "over")
	}
	elapsed := num(u.ElapsedHours, " h")
	if u.WindowHours != nil {
		elapsed += " of " + num(u.WindowHours, " h")
	}
	f.add("Elapsed", elapsed)
	bought := num(u.BoughtGPUHours, " GPU-hours so far")
	if u.BoughtTotalGPUHours != nil {
		bought += ", " + num(u.BoughtTotalGPUHours, " over the window")
	}
	f.add("Bought", bought)
	f.add("Used", fmt.Sprintf("%s GPU-hours (%s) by %d of the owner's jobs naming it",
		strconv.FormatFloat(u.UsedGPUHours, 'f', 2, 64), num(u.UsedPercent, " %"), u.Jobs))
	if u.USDPerGPUHour != nil {
		commit := fmt.Sprintf("%s so far at %s per GPU-hour (%s)", usd(u.CommittedUSD), usd(u.USDPerGPUHour), u.Pricing)
		if u.IdleUSD != nil {
			commit += fmt.Sprintf(": %s used by work naming it, %s idle", usd(u.UsedUSD), usd(u.IdleUSD))
		}
		f.add("Commitment", commit)
	}
	f.add("As of", timestamp(client.Time{Time: u.AsOf}))
	return f
}
