package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// submitted is what submit prints of a new job.
type submitted struct {
	ID string `json:"id"`
}

// submitJobs sends the specs and prints the new IDs, one per line (-o
// json: {"id"} for one job, a list for several). One job goes to POST
// /v1/jobs; several go to POST /v1/jobs/batch in one request, which
// submits all or none: when the server refuses any, every refusal is
// printed to stderr and nothing is submitted. key is the submit's
// idempotency key; "" makes a new one, so that the client's own retries
// (after a lost answer) never submit twice.
// tryJobs asks the server what would become of the jobs if they were
// submitted now (dry_run), storing nothing, and prints the answers as job
// why does. Several jobs are asked about together (POST /v1/jobs/batch?
// dry_run=true): they see each other, as they would once submitted
// together. A batch the server would refuse is reported as a refused
// submit is (every problem on stderr, exit status 2).
func tryJobs(cmd *cobra.Command, cl *client.Client, f format, specs []model.JobSpec) error {
	var whys []client.Why
	if len(specs) == 1 {
		doc, err := client.JobDocument(specs[0])
		if err != nil {
			return err
		}
		w, err := cl.TrySubmit(cmd.Context(), doc, "application/json")
		if err != nil {
			return fromAPI(err)
		}
		whys = []client.Why{w}
	} else {
		body, err := batchBody(specs)
		if err != nil {
			return err
		}
		if whys, err = cl.TrySubmitBatch(cmd.Context(), body, "application/json"); err != nil {
			return batchErr(cmd, err, specs, "would be")
		}
	}
	var v any = map[string][]client.Why{"jobs": whys}
	if len(specs) == 1 {
		v = whys[0]
	}
	return show(cmd.OutOrStdout(), f, v, func() printer {
		var out sections
		now := time.Now()
		for _, w := range whys {
			w.ID += " (dry run: not submitted)"
			out = append(out, whyPrinter(w, now))
		}
		return out
	})
}

// batchBody is the body of POST /v1/jobs/batch for specs: a JSON list of
// their documents.
func batchBody(specs []model.JobSpec) ([]byte, error) {
	docs := make([]spec.Document, len(specs))
	for i, s := range specs {
		docs[i] = spec.DocumentOf(s)
	}
	return json.Marshal(docs)
}

func submitJobs(cmd *cobra.Command, cl *client.Client, f format, specs []model.JobSpec, key string, wait waitOption) error {
	if wait.dryRun {
		return tryJobs(cmd, cl, f, specs)
	}
	if wait.timeout < 0 {
		return Usage(fmt.Errorf("--wait-timeout %s: want 0 (no limit) or more", wait.timeout))
	}
	if wait.raw && !wait.attach {
		return Usage(errors.New("--raw: only with --attach, which prints the job's log"))
	}
	if wait.attach && len(specs) != 1 {
		return Usage(fmt.Errorf("--attach follows one job, and these are %d; use --wait, then 'allot job logs ID'", len(specs)))
	}
	if key == "" {
		key = client.NewIdempotencyKey()
	}
	var ids []submitted
	if len(specs) == 1 {
		doc, err := client.JobDocument(specs[0])
		if err != nil {
			return err
		}
		j, err := cl.SubmitKeyed(cmd.Context(), key, doc, "application/json")
		if err != nil {
			return fromAPI(err)
		}
		ids = []submitted{{j.ID}}
	} else {
		body, err := batchBody(specs)
		if err != nil {
			return err
		}
		b, err := cl.SubmitBatchKeyed(cmd.Context(), key, body, "application/json")
		if err != nil {
			return batchErr(cmd, err, specs, "was")
		}
		for _, j := range b.Jobs {
			ids = append(ids, submitted{j.ID})
		}
	}
	if wait.attach { // stdout is the job's: its ID goes to stderr
		fmt.Fprintf(cmd.ErrOrStderr(), "allot: job %s submitted; its log follows (Ctrl-C stops following, not the job)\n", ids[0].ID)
		out, flush := logOutput(cmd.OutOrStdout(), wait.raw)
		defer flush()
		return attachJob(cmd.Context(), cl, ids[0].ID, out, cmd.ErrOrStderr())
	}
	if err := showIDs(cmd, f, ids, len(specs) == 1); err != nil || !wait.on {
		return err
	}
	jobs := make([]client.Job, len(ids))
	for i, id := range ids {
		jobs[i].ID = id.ID
	}
	_, err := waitJobs(cmd.Context(), cl, jobs, wait.timeout, cmd.ErrOrStderr())
	return err
}

func showIDs(cmd *cobra.Command, f format, ids []submitted, one bool) error {
	var v any = ids
	if one {
		v = ids[0]
	}
	return show(cmd.OutOrStdout(), f, v, func() printer {
		t := table{}
		for _, id := range ids {
			t.add(id.ID)
		}
		return t
	})
}

// batchErr reports a refused batch: each refusal on its own line of
// stderr, and a summary as the error, saying none of it was (or, for a
// dry run, would be) submitted.
func batchErr(cmd *cobra.Command, err error, specs []model.JobSpec, was string) error {
	var e *client.APIError
	if !errors.As(err, &e) || len(e.Errors) == 0 {
		return fromAPI(err)
	}
	w := cmd.ErrOrStderr()
	for _, je := range e.Errors {
		field := ""
		if je.Field != "" {
			field = " (field " + je.Field + ")"
		}
		if je.Index != nil {
			fmt.Fprintf(w, "allot: job %d %s: %s: %s%s\n", *je.Index, je.Name, je.Code, je.Message, field)
		} else {
			fmt.Fprintf(w, "allot: %s: %s\n", je.Code, je.Message)
		}
	}
	refused := len(e.Errors)
	return fromAPI(&client.APIError{Status: e.Status, Code: e.Code,
		Message: fmt.Sprintf("%d problems in %d jobs; none %s submitted", refused, len(specs), was)})
}

// idempotencyHelp is the help of --idempotency-key, for submit and run.
const idempotencyHelp = "a key of your own (printable ASCII, at most 255): sending the same jobs with it again within 24 h prints the jobs the first send made instead of submitting twice"
