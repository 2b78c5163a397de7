package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/spec"
)

// Several files, by -f repeated or as arguments, go to the server in one
// batch, in the order given, so that a step of one may wait for a job of
// another; a file named twice, or none, is refused before anything is
// sent. A command that reads one file refuses a second rather than keep
// the last.
func TestSeveralFiles(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	prep := write("prep.yaml", "name: prep\ntenant: acme\nresources: {gpus_per_instance: 0, cpu: 1}\n")
	train := write("train.yaml", "name: train\ntenant: acme\nafter: [prep]\nresources: {gpus_per_instance: 1}\n")
	for _, args := range [][]string{{"-f", prep, "-f", train}, {prep, train}, {"-f", prep, train}} {
		url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs/batch", status: 201,
			body: `{"jobs":[` + queuedJob + `,` + queuedJob + `]}`,
			checkBody: func(t *testing.T, body []byte) {
				var docs []spec.Document
				if err := json.Unmarshal(body, &docs); err != nil || len(docs) != 2 || docs[0].Name != "prep" || docs[1].Name != "train" {
					t.Errorf("batch body %s (%v), want prep then train", body, err)
				}
			}})
		_, errOut, code := runCLI(t, append(append([]string{"job", "submit"}, args...), "--server", url)...)
		if code != 0 || hits.Load() != 1 {
			t.Errorf("submit %v: exit %d, %d requests: %s", args, code, hits.Load(), errOut)
		}
	}
	url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs/batch", status: 201, body: `{"jobs":[]}`})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "submit", "-f", prep, prep}, prep + " is given twice"},
		{[]string{"job", "submit"}, "no file"},
		{[]string{"endpoint", "create", "-f", prep, "-f", prep}, prep + " is given twice"},
		{[]string{"policy", "apply", "-f", prep, "-f", train}, "one file at a time, got 2"},
		{[]string{"policy", "apply", prep, train}, "one file at a time, got 2"},
	} {
		_, errOut, code := runCLI(t, append(tc.args, "--server", url)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests sent for refused commands", hits.Load())
	}
}
