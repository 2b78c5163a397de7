// Command allot decides who gets which GPUs. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/allot-dev/allot/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
