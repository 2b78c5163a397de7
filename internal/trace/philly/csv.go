package philly

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrFormat is wrapped by every error about the content of a trace file.
var ErrFormat = errors.New("philly: bad trace file")

// table is a CSV file being read row by row, with its columns by name.
type table struct {
	file string
	r    *csv.Reader
	col  map[string]int
	row  []string
}

func openTable(r io.Reader, file string, required []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	t := &table{file: file, r: cr, col: map[string]int{}}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1:1: %w: missing header", file, ErrFormat)
	}
	if err != nil {
		return nil, t.parseErr(err)
	}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			_, c := cr.FieldPos(i)
			return nil, fmt.Errorf("%s:1:%d: %w: column %q appears twice", file, c, ErrFormat, h)
		}
		t.col[h] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			return nil, fmt.Errorf("%s:1:1: %w: missing column %q", file, ErrFormat, c)
		}
	}
	return t, nil
}

func (t *table) parseErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w: %v", t.file, pe.Line, pe.Column, ErrFormat, pe.Err)
	}
	return fmt.Errorf("%s: %w", t.file, err)
}

// next reads the next row that is not blank; it returns false at the end.
func (t *table) next() (bool, error) {
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

// line is the current row's line.
func (t *table) line() int {
	l, _ := t.r.FieldPos(0)
	return l
}

// field returns the named column of the current row, trimmed, or an error
// when the row is too short to have it.
func (t *table) field(name string) (string, error) {
	i := t.col[name]
	if i >= len(t.row) {
		l, c := t.r.FieldPos(len(t.row) - 1)
		return "", fmt.Errorf("%s:%d:%d: column %s: %w: row has %d fields, want at least %d",
			t.file, l, c+len(t.row[len(t.row)-1]), name, ErrFormat, len(t.row), i+1)
	}
	return strings.TrimSpace(t.row[i]), nil
}

// errorf reports a bad value in the named column of the current row.
func (t *table) errorf(name, format string, args ...any) error {
	l, c := t.r.FieldPos(t.col[name])
	return fmt.Errorf("%s:%d:%d: column %s: %w: %s", t.file, l, c, name, ErrFormat, fmt.Sprintf(format, args...))
}

func readFile[T any](path string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(f, path)
}
