package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// A reservation is a commitment: its owner pays the reserved rate for
// every GPU-hour of its window, used or idle (ReservationCosts). So
//
//   - a tenant's may start at most Config.MaxReservationLead ahead (--max-
//     reservation-lead, DefaultMaxReservationLead), and it keeps nodes
//     from other work only within the core's EarmarkLead before its start
//     (--reservation-earmark, DefaultEarmarkLead): one made for the year
//     2999 holds nothing today for free;
//   - a tenant whose budget has a hard stop and is spent may not make one
//     (budgetStops): it would run inside it past the stop;
//   - a tenant that deletes its reservation inside the window still owes
//     the whole window: the reservation is kept as released (its nodes
//     free for others at once) and billed to its end. A delete before the
//     start owes nothing, and an administrator's delete (a refund) ends
//     the bill.
const (
	// DefaultMaxReservationLead is Config.MaxReservationLead when unset:
	// about a quarter, as far ahead as capacity is usually planned.
	DefaultMaxReservationLead = 90 * 24 * time.Hour
	// DefaultEarmarkLead is what --reservation-earmark defaults to: a
	// week, longer than most training runs between checkpoints.
	DefaultEarmarkLead = 7 * 24 * time.Hour
)

// prefixReleased holds the reservations their owners deleted inside their
// windows, one record per delete, billed to their ends.
const prefixReleased = "/released-reservations/"

// releasedRecord is a reservation deleted inside its window.
type releasedRecord struct {
	reservationRecord
	ReleasedAt time.Time `json:"released_at"`
	By         string    `json:"by"`
}

// checkLead refuses a tenant's reservation that starts more than the server's
// MaxReservationLead after now.
func (s *Server) checkLead(r model.Reservation, now time.Time) error {
	if lead := s.cfg.MaxReservationLead; r.Start.Sub(now) > lead {
		return refuse(CodeInvalidSpec, "start", "%s is more than %s ahead (--max-reservation-lead): a reservation may start at most that far from now",
			r.Start.UTC().Format(time.RFC3339), lead)
	}
	return nil
}

// releaseOp is the store write that keeps r, deleted by p at now, as
// released, or false when nothing is owed: r had not started, or has no
// end, or an administrator deleted it.
func releaseOp(r model.Reservation, p Principal, now time.Time) (key string, value []byte, owed bool) {
	if p.Admin || r.Start.IsZero() || r.End.IsZero() || !r.ActiveAt(now) {
		return "", nil, false
	}
	rec := releasedRecord{reservationRecord: reservationRecord{Name: r.Name, Owner: r.Owner, SKU: r.SKU, Region: r.Region,
		Count: r.Count, Start: r.Start, End: r.End}, ReleasedAt: now.UTC(), By: p.Name()}
	b, _ := json.Marshal(rec)
	return prefixReleased + r.Name + "@" + strconv.FormatInt(now.UnixNano(), 10), b, true
}

// released returns the reservations deleted inside their windows whose
// owners p sees.
func (s *Server) released(ctx context.Context, p Principal) ([]model.Reservation, error) {
	kvs, _, err := s.st.List(ctx, prefixReleased)
	if err != nil {
		return nil, fmt.Errorf("list released reservations: %w", err)
	}
	var out []model.Reservation
	for _, kv := range kvs {
		var rec releasedRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("read %s: %w", kv.Key, err)
		}
		if p.Sees(rec.Owner) {
			out = append(out, model.Reservation{Name: rec.Name, Owner: rec.Owner, SKU: rec.SKU, Region: rec.Region,
				Count: rec.Count, Start: rec.Start, End: rec.End})
		}
	}
	return out, nil
}
