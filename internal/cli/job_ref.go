package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/allot-dev/allot/internal/client"
)

// byJobRef calls get with the job ref names: its ID, else, when no job has
// that ID, the ID of the only job whose name is ref, as a person types it
// after 'allot job run --name train'. Several jobs of that name are
// refused with their IDs, newest first, so that the person picks one; no
// job of that name leaves the server's NotFound for the ID. A call with an
// ID makes one request.
func byJobRef[T any](ctx context.Context, cl *client.Client, ref string, get func(id string) (T, error)) (T, error) {
	v, err := get(ref)
	var e *client.APIError
	if err == nil || !errors.As(err, &e) || e.Status != 404 || e.Field != "" {
		return v, err
	}
	jobs, lerr := cl.ListJobs(ctx, client.JobFilter{Name: ref})
	if lerr != nil {
		return v, err
	}
	var named []client.Job
	for _, j := range jobs {
		if j.Name == ref {
			named = append(named, j)
		}
	}
	switch len(named) {
	case 0:
		return v, err
	case 1:
		return get(named[0].ID)
	}
	const shown = 5
	var ids []string
	for _, j := range named[:min(len(named), shown)] {
		ids = append(ids, fmt.Sprintf("%s (%s)", j.ID, j.State))
	}
	more := ""
	if len(named) > shown {
		more = fmt.Sprintf(" and %d more", len(named)-shown)
	}
	var zero T
	return zero, Usage(fmt.Errorf("no job has the ID %q, and %d jobs are named so: %s%s; give the ID of one (allot job list --name %s)",
		ref, len(named), strings.Join(ids, ", "), more, ref))
}

// jobByRef returns the job ref names (byJobRef).
func jobByRef(ctx context.Context, cl *client.Client, ref string) (client.Job, error) {
	return byJobRef(ctx, cl, ref, func(id string) (client.Job, error) { return cl.GetJob(ctx, id) })
}
