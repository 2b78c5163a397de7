package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// whyView is what 'job why' prints for a person: the job's fields, then,
// for a job allowed in several regions, the table of its regions.
type whyView struct {
	fields  fields
	regions table
}

func (v whyView) print(w io.Writer) error {
	if err := v.fields.print(w); err != nil {
		return err
	}
	if len(v.regions.rows) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "\nRegions (score = wait in hours + weighted price and distance; lower is better):"); err != nil {
		return err
	}
	return v.regions.print(w)
}

func whyPrinter(w client.Why, now time.Time) printer {
	var v whyView
	fs := &v.fields
	fs.add("Job", w.ID)
	fs.add("State", w.State)
	fs.add("Reason", orDash(w.Reason))
	fs.add("Detail", orDash(w.Detail))
	for _, p := range w.Policies {
		fs.add("Policy", p)
	}
	if w.Region != "" {
		fs.add("Region", w.Region)
	}
	if len(w.AvoidNodes) > 0 {
		fs.add("Avoids", strings.Join(w.AvoidNodes, ", ")+" (attempts failed there: used only when no other node fits)")
	}
	var drains []string
	for _, d := range w.Drains {
		drains = append(drains, fmt.Sprintf("%s: %s (%s, %s)", d.Node, d.Reason, d.By, timestamp(d.At)))
	}
	fs.addLines("Drained", drains)
	if w.State == "Queued" {
		// A job that runs or has ended has no start to estimate.
		fs.add("Estimated start", startText(w.EstimatedStart, w.EstimateNone, now))
	}
	if w.State == "Blocked" {
		// Not before the jobs it waits for are expected to end.
		fs.add("Estimated start", startText(w.EstimatedStart, w.EstimateNone, now))
	}
	if w.EstimateHow != "" {
		fs.add("Estimated by", w.EstimateHow)
	}
	if w.Checkpoint != "" {
		fs.add("Resumes from", w.Checkpoint)
	}
	if len(w.RunningOn) > 0 {
		fs.add("Runs on", strings.Join(w.RunningOn, ", "))
	}
	if w.Placement != "" {
		fs.add("Placement", w.Placement)
	}
	if w.Elastic != "" {
		fs.add("Size", w.Elastic)
	}
	if !w.RunningSince.IsZero() {
		fs.add("Since", fmt.Sprintf("%s (%s ago)", timestamp(w.RunningSince), span(now.Sub(w.RunningSince.Time))))
	}
	if !w.ProtectedUntil.IsZero() {
		fs.add("Protected until", timestamp(w.ProtectedUntil)+" (no preemption before then)")
	}
	fs.addLines("Preemptible by", w.PreemptibleBy)
	if w.ExpectedRunSeconds > 0 {
		fs.add("Expected run", fmt.Sprintf("%s (%s)", span(time.Duration(w.ExpectedRunSeconds*float64(time.Second))), w.ExpectedRunBasis))
	}
	v.regions.header = []string{"REGION", "ESTIMATED START", "PRICE/GPU-H", "DISTANCE", "SCORE", "CHOSEN"}
	for _, r := range w.Regions {
		chosen := ""
		if r.Chosen {
			chosen = "*"
		}
		start := "unknown"
		if !r.EstimatedStart.IsZero() {
			start = timestamp(r.EstimatedStart)
		}
		v.regions.add(r.Region, start, fmt.Sprintf("$%.2f", r.PricePerGPUHour), strconv.Itoa(r.Distance),
			strconv.FormatFloat(r.Score, 'f', 2, 64), chosen)
	}
	return v
}

// startText writes an estimated start with how far off it is, or
// "unknown" with the reason.
func startText(t client.Time, none string, now time.Time) string {
	if t.IsZero() {
		if none != "" {
			return "unknown: " + none
		}
		return "unknown"
	}
	s := timestamp(t)
	if d := t.Sub(now); d > 0 {
		s += " (in " + span(d) + ")"
	}
	return s
}
