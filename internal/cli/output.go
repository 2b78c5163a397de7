package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/allot-dev/allot/internal/client"
)

// format is how a client command prints what the API answered.
type format string

const (
	formatTable format = "table" // for people: a table or a list of fields
	formatWide  format = "wide"  // the table with more columns where a command has them (job list: nodes, GPUs)
	formatJSON  format = "json"  // the API's objects, indented
	formatYAML  format = "yaml"  // the same objects, as YAML
)

func parseFormat(s string) (format, error) {
	switch f := format(s); f {
	case formatTable, formatWide, formatJSON, formatYAML:
		return f, nil
	}
	return "", Usage(fmt.Errorf("--output %q: want table, wide, json or yaml", s))
}

// human reports whether f prints for people (a table, or a wide one).
func (f format) human() bool { return f == formatTable || f == formatWide }

// table is rows of cells under a header, printed in aligned columns.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// fields is a list of "Name: value" lines, for one object.
type fields [][2]string

func (f *fields) add(name, value string) { *f = append(*f, [2]string{name, value}) }

// addLines adds one field of several lines: name before the first, the
// rest under it; none for no lines.
func (f *fields) addLines(name string, lines []string) {
	for i, l := range lines {
		if i > 0 {
			name = ""
		}
		f.add(name, l)
	}
}

// printer is what a command prints in table format: a table or fields.
type printer interface{ print(w io.Writer) error }

func (t table) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(t.header) > 0 {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	}
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = escape(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func (f fields) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, kv := range f {
		if kv[0] == "" { // a further line of the field above
			fmt.Fprintf(tw, "\t%s\n", escape(kv[1]))
			continue
		}
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], escape(kv[1]))
	}
	return tw.Flush()
}

// show writes v in format f: as JSON or YAML of v itself, or as the table
// or fields that human returns.
func show(w io.Writer, f format, v any, human func() printer) error {
	switch f {
	case formatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case formatYAML:
		return writeYAML(w, v)
	}
	return human().print(w)
}

// writeYAML writes v as YAML with the same names and field order as its
// JSON: it goes through JSON, which YAML reads as flow style, and prints
// the result in block style.
func writeYAML(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	blockStyle(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// blockStyle clears the flow and quoting styles that parsing JSON left,
// except on empty collections, which block style cannot write.
func blockStyle(n *yaml.Node) {
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0 {
		return
	}
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// Cell formats for tables.

// escape writes what a server sent for a terminal: control characters
// (tabs and newlines too, which would break the table), other runes a
// terminal does not print as themselves and invalid UTF-8 are written as Go
// escapes (\x1b, \u202e), so that no value can move the cursor, recolour
// the screen or hide text.
func escape(s string) string {
	clean := true
	for _, r := range s {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timestamp writes t in RFC 3339, UTC, or "-" when not set.
func timestamp(t client.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// age writes how long ago t was, in the largest whole unit ("5m", "3h",
// "2d"), or "-" when not set.
func age(t client.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return span(now.Sub(t.Time))
}

func span(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// gpus writes a GPU amount: whole numbers without a point, fractions with
// up to three decimals.
func gpus(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// fetchAndShow calls get with the command's client and shows what it
// returns: as JSON or YAML, or for a person through human. An API error
// becomes the CLI's (fromAPI). get has the shape of a method expression
// such as (*client.Client).Policies.
func fetchAndShow[T any](cmd *cobra.Command, conn *connection, get func(*client.Client, context.Context) (T, error),
	human func(T) printer) error {
	cl, f, err := conn.client()
	if err != nil {
		return err
	}
	v, err := get(cl, cmd.Context())
	if err != nil {
		return fromAPI(err)
	}
	return show(cmd.OutOrStdout(), f, v, func() printer { return human(v) })
}

// fetchAndList is fetchAndShow for a list, which JSON and YAML show as
// {key: [items]}, an empty list rather than null.
func fetchAndList[T any](cmd *cobra.Command, conn *connection, key string,
	list func(*client.Client, context.Context) ([]T, error), human func([]T) printer) error {
	get := func(cl *client.Client, ctx context.Context) (map[string][]T, error) {
		items, err := list(cl, ctx)
		if items == nil {
			items = []T{}
		}
		return map[string][]T{key: items}, err
	}
	return fetchAndShow(cmd, conn, get, func(v map[string][]T) printer { return human(v[key]) })
}

// deleteAndShow deletes the named object with del and says so: as
// {"name", "deleted": true} in JSON or YAML, or "deleted KIND NAME".
func deleteAndShow(cmd *cobra.Command, conn *connection, kind, name string,
	del func(*client.Client, context.Context, string) error) error {
	cl, f, err := conn.client()
	if err != nil {
		return err
	}
	if err := del(cl, cmd.Context(), name); err != nil {
		return fromAPI(err)
	}
	v := struct {
		Name    string `json:"name"`
		Deleted bool   `json:"deleted"`
	}{name, true}
	return show(cmd.OutOrStdout(), f, v, func() printer { return table{rows: [][]string{{"deleted " + kind + " " + name}}} })
}
