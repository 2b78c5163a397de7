//go:build unix

package api

import "syscall"

// openFileLimit is the process's soft limit on open files, or 0 when it
// cannot be told.
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
