// Package syncbuf is a bytes.Buffer that goroutines may write while a test
// reads it: the log of a server or agent run in a test, a command's output
// read while the command runs. Only tests use it.
package syncbuf
