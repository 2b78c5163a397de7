package openb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrFormat is wrapped by every error about the content of a trace file.
var ErrFormat = errors.New("openb: bad trace file")

// table is a CSV file being read row by row, with its columns by name.
type table struct {
	file string
	r    *csv.Reader
	col  map[string]int
	line int
	row  []string
}

func openTable(r io.Reader, file string, required []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	t := &table{file: file, r: cr, col: map[string]int{}}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: %w: missing header", file, ErrFormat)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", file, ErrFormat, err)
	}
	t.line = 1
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			return nil, fmt.Errorf("%s:1: %w: column %q appears twice", file, ErrFormat, h)
		}
		t.col[h] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			return nil, fmt.Errorf("%s:1: %w: missing column %q", file, ErrFormat, c)
		}
	}
	return t, nil
}

// next reads the next non-blank row; it returns false at the end of input.
func (t *table) next() (bool, error) {
	for {
		row, err := t.r.Read()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return false, fmt.Errorf("%s:%d: %w: %v", t.file, pe.Line, ErrFormat, pe.Err)
			}
			return false, fmt.Errorf("%s: %w", t.file, err)
		}
		t.line, _ = t.r.FieldPos(0)
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		t.row = row
		return true, nil
	}
}

// str returns the named column of the current row, "" when the column is
// absent from the file or the row is short.
func (t *table) str(name string) string {
	i, ok := t.col[name]
	if !ok || i >= len(t.row) {
		return ""
	}
	return strings.TrimSpace(t.row[i])
}

func (t *table) errorf(name, format string, args ...any) error {
	return fmt.Errorf("%s:%d: column %s: %w: %s", t.file, t.line, name, ErrFormat, fmt.Sprintf(format, args...))
}

// need returns a required non-empty column.
func (t *table) need(name string) (string, error) {
	if i := t.col[name]; i >= len(t.row) {
		return "", t.errorf(name, "row has %d fields", len(t.row))
	}
	s := t.str(name)
	if s == "" {
		return "", t.errorf(name, "empty")
	}
	return s, nil
}

// int reads a non-negative integer column; optional columns read 0 when
// absent or empty, required ones fail.
func (t *table) int(name string, required bool, max int64) (int64, error) {
	s := t.str(name)
	if required {
		var err error
		if s, err = t.need(name); err != nil {
			return 0, err
		}
	} else if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, t.errorf(name, "%q is not an integer", s)
	}
	if v < 0 {
		return 0, t.errorf(name, "%d is negative", v)
	}
	if max > 0 && v > max {
		return 0, t.errorf(name, "%d is above %d", v, max)
	}
	return v, nil
}

func readFile[T any](path string, read func(io.Reader, string) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path)
}
