// Package azurellm reads the Azure LLM inference trace 2023 (the trace of the
// Splitwise paper, ISCA 2024) as shipped in data/traces/azure-llm: one file
// per service (code completion, conversation), one request a row, with the
// columns
//
//   - TIMESTAMP: arrival time, UTC, "2006-01-02 15:04:05" followed by a
//     fraction of a second of 1 to 9 digits (the files carry 7);
//   - ContextTokens: prompt tokens, an integer of at least 1;
//   - GeneratedTokens: output tokens, an integer of at least 0.
//
// Readers locate columns by header name (other columns are ignored), skip
// blank lines and require rows in non-decreasing time order. A file without
// a request is an error. Every error about the content wraps ErrFormat and
// names the file, the line and the column as file:line:column (1-based; the
// header is line 1).
//
// The trace gives arrivals and token counts only, not how long a request
// ran. A Pattern keeps the shape of the arrivals (gaps relative to their
// mean) and the token counts, so a caller can replay the trace at a rate of
// its own choosing; the package itself does no I/O beyond reading the file
// it is given, and models no service time.
package azurellm
