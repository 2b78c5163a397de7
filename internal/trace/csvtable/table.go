package csvtable

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Table is a CSV file being read row by row, with its columns by name.
type Table struct {
	file   string
	format error // wrapped by every error about the content
	r      *csv.Reader
	col    map[string]int
	row    []string
}

// Open reads the header of r, which must name every required column once.
// Errors about the content wrap format (a reader's own sentinel).
func Open(r io.Reader, file string, required []string, format error) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	t := &Table{file: file, format: format, r: cr, col: map[string]int{}}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1:1: %w: missing header", file, format)
	}
	if err != nil {
		return nil, t.parseErr(err)
	}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			_, c := cr.FieldPos(i)
			return nil, fmt.Errorf("%s:1:%d: %w: column %q appears twice", file, c, format, h)
		}
		t.col[h] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			return nil, fmt.Errorf("%s:1:1: %w: missing column %q", file, format, c)
		}
	}
	return t, nil
}

func (t *Table) parseErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w: %v", t.file, pe.Line, pe.Column, t.format, pe.Err)
	}
	return fmt.Errorf("%s: %w", t.file, err)
}

// Has reports whether the header names the column.
func (t *Table) Has(name string) bool {
	_, ok := t.col[name]
	return ok
}

// Next reads the next row that is not blank; it returns false at the end.
func (t *Table) Next() (bool, error) {
	for {
		row, err := t.r.Read()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, t.parseErr(err)
		}
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		t.row = row
		return true, nil
	}
}

// Line is the current row's line.
func (t *Table) Line() int {
	l, _ := t.r.FieldPos(0)
	return l
}

// Field returns the named column of the current row, trimmed, or an error
// when the row is too short to have it.
func (t *Table) Field(name string) (string, error) {
	i, ok := t.col[name]
	if !ok {
		return "", nil
	}
	if i >= len(t.row) {
		l, c := t.r.FieldPos(len(t.row) - 1)
		return "", fmt.Errorf("%s:%d:%d: column %s: %w: row has %d fields, want at least %d",
			t.file, l, c+len(t.row[len(t.row)-1]), name, t.format, len(t.row), i+1)
	}
	return strings.TrimSpace(t.row[i]), nil
}

// Str returns an optional column: "" when the file lacks it or the row is
// too short.
func (t *Table) Str(name string) string {
	s, _ := t.Field(name)
	return s
}

// Need returns a column that must be present and not empty.
func (t *Table) Need(name string) (string, error) {
	s, err := t.Field(name)
	if err == nil && s == "" {
		err = t.Errorf(name, "empty")
	}
	return s, err
}

// Int reads a non-negative integer column, at most max when max > 0;
// optional columns read 0 when absent or empty, required ones fail.
func (t *Table) Int(name string, required bool, max int64) (int64, error) {
	s := t.Str(name)
	if required {
		var err error
		if s, err = t.Need(name); err != nil {
			return 0, err
		}
	} else if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, t.Errorf(name, "%q is not an integer", s)
	case v < 0:
		return 0, t.Errorf(name, "%d is negative", v)
	case max > 0 && v > max:
		return 0, t.Errorf(name, "%d is above %d", v, max)
	}
	return v, nil
}

// Errorf reports a bad value in the named column of the current row.
func (t *Table) Errorf(name, format string, args ...any) error {
	l, c := t.r.FieldPos(min(t.col[name], len(t.row)-1))
	return fmt.Errorf("%s:%d:%d: column %s: %w: %s", t.file, l, c, name, t.format, fmt.Sprintf(format, args...))
}

// ReadFile opens path and hands it to read.
func ReadFile[T any](path string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(f, path)
}
