package cli

import (
	"bytes"
	"github.com/spf13/cobra"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

func TestShowFormats(t *testing.T) {
	v := struct {
		Name  string      `json:"name"`
		When  client.Time `json:"when"`
		Never client.Time `json:"never"`
		Text  string      `json:"text"`
		Flag  string      `json:"flag"`
		List  []int       `json:"list"`
		Empty []int       `json:"empty"`
	}{"x", client.Time{Time: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}, client.Time{}, "two\nlines", "true", []int{1, 2}, []int{}}
	tests := []struct {
		f    format
		want string
	}{
		{formatJSON, `{
  "name": "x",
  "when": "2027-01-02T03:04:05Z",
  "never": null,
  "text": "two\nlines",
  "flag": "true",
  "list": [
    1,
    2
  ],
  "empty": []
}
`},
		{formatYAML, `name: x
when: "2027-01-02T03:04:05Z"
never: null
text: |-
  two
  lines
flag: "true"
list:
  - 1
  - 2
empty: []
`},
		{formatTable, "NAME  VALUE\nx     1\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.f), func(t *testing.T) {
			var b bytes.Buffer
			err := show(&b, tt.f, v, func() printer {
				return table{header: []string{"NAME", "VALUE"}, rows: [][]string{{"x", "1"}}}
			})
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// A field of several lines (a gang's allocations, a job's attempts) names
// itself once; its further lines line up under the first value.
func TestFieldsOfSeveralLines(t *testing.T) {
	var f fields
	f.add("State", "Failed")
	f.add("History", "#1 n1 Failed exit 3")
	f.add("", "#2 n1 Failed exit 3")
	var b bytes.Buffer
	if err := f.print(&b); err != nil {
		t.Fatal(err)
	}
	want := "State:    Failed\nHistory:  #1 n1 Failed exit 3\n          #2 n1 Failed exit 3\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestCells(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ got, want string }{
		{gpus(8), "8"}, {gpus(0.25), "0.25"}, {gpus(27.5), "27.5"}, {gpus(0), "0"},
		{age(client.Time{}, now), "-"},
		{age(client.Time{Time: now.Add(-90 * time.Second)}, now), "1m"},
		{age(client.Time{Time: now.Add(-30 * time.Hour)}, now), "30h"},
		{age(client.Time{Time: now.Add(-72 * time.Hour)}, now), "3d"},
		{orDash(""), "-"}, {price(0), "-"}, {price(98.324), "98.32"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestClientCommandsTeach checks that every client command explains itself
// with a long description and examples, and takes -o.
func TestClientCommandsTeach(t *testing.T) {
	for _, group := range []*cobra.Command{newJobCmd(), newSKUCmd(), newQuotaCmd(), newReservationCmd(), newNodeCmd(), newTokenCmd(), newAuditCmd()} {
		for _, c := range group.Commands() {
			if c.Long == "" || c.Example == "" {
				t.Errorf("%s %s: want Long and Example", group.Name(), c.Name())
			}
			if c.InheritedFlags().Lookup("output") == nil && c.Flags().Lookup("output") == nil {
				t.Errorf("%s %s: no -o", group.Name(), c.Name())
			}
			for _, name := range []string{"server", "token"} {
				if group.PersistentFlags().Lookup(name) == nil {
					t.Errorf("%s: no --%s", group.Name(), name)
				}
			}
		}
	}
}
