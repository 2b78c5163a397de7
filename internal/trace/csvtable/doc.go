// Package csvtable reads the CSV files of public traces row by row, with
// columns looked up by name and every error naming file, line, column and
// field. The trace readers (openb, philly) build on it.
package csvtable
