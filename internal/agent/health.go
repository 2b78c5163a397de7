package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Defaults of the health check (Config.HealthCheck).
const (
	DefaultHealthCheckEvery   = 5 * time.Minute
	DefaultHealthCheckTimeout = time.Minute
)

// maxHealthOutput bounds the output of a health check the agent keeps: the
// first bytes, where the tools that matter (dcgmi, nvidia-smi, a script's
// echo) say what is wrong.
const maxHealthOutput = 2048

// healthChecks runs the operator's health check and reads the GPUs'
// health (Config.GPUHealth) at start and then every
// Config.HealthCheckEvery, reporting each result to the server: a failed
// check drains the node (by "health-check"), the next passing one resumes
// it. A report the server does not take is logged; the next run reports
// again.
func (a *Agent) healthChecks(ctx context.Context) {
	if a.cfg.HealthCheck == "" && a.cfg.GPUHealth == nil {
		return
	}
	last := true
	for {
		healthy, detail := a.checkHealth(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case !healthy:
			a.log.Warn("health check failed", "detail", detail)
		case !last:
			a.log.Info("health check passed again")
		}
		last = healthy
		rctx, cancel := a.bounded(ctx)
		changed, err := a.cfg.Client.ReportHealth(rctx, a.cfg.Node, healthy, detail)
		cancel()
		if err != nil {
			a.log.Warn("health report failed", "err", err)
		} else if changed {
			a.log.Info("the server changed the node's drain after the health check", "healthy", healthy)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.HealthCheckEvery):
		}
	}
}

// checkHealth runs one round: the command, if any, then the GPUs' health.
// A GPU health that cannot be read is logged and counts as healthy: the
// agent cannot tell, and draining every node of a fleet whose driver
// misbehaves would stop more work than it saves.
func (a *Agent) checkHealth(ctx context.Context) (healthy bool, detail string) {
	healthy = true
	if a.cfg.HealthCheck != "" {
		healthy, detail = runHealthCheck(ctx, a.cfg.HealthCheck, a.cfg.Node, a.cfg.HealthCheckTimeout)
	}
	if a.cfg.GPUHealth == nil {
		return healthy, detail
	}
	problems, err := a.cfg.GPUHealth.Problems(a.devs)
	if err != nil {
		a.log.Warn("GPU health not read", "err", err)
		return healthy, detail
	}
	if len(problems) == 0 {
		return healthy, detail
	}
	gpus := strings.Join(problems, "; ")
	if detail != "" {
		gpus = detail + "; " + gpus
	}
	if len(gpus) > maxHealthOutput {
		gpus = gpus[:maxHealthOutput]
	}
	return false, gpus
}

// runHealthCheck runs command with sh -c, ALLOT_NODE=node added to the
// agent's environment, in a process group of its own that is killed past
// timeout. It is healthy when the command exits 0; otherwise detail says
// how it ended, with the first of its output on one line.
func runHealthCheck(ctx context.Context, command, node string, timeout time.Duration) (healthy bool, detail string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), "ALLOT_NODE="+node)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out headWriter
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, ""
	case ctx.Err() == context.DeadlineExceeded:
		detail = fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &exit):
		detail = fmt.Sprintf("exit status %d", exit.ExitCode())
	default:
		detail = fmt.Sprintf("could not run: %v", err)
	}
	if text := bytes.TrimSpace(out.Bytes()); len(text) > 0 {
		detail += ": " + string(text)
	}
	return false, detail
}

// headWriter keeps the first maxHealthOutput bytes written to it. (Not an
// embedded bytes.Buffer: io.Copy would call its ReadFrom, past the bound.)
type headWriter struct{ buf bytes.Buffer }

func (w *headWriter) Write(p []byte) (int, error) {
	if room := maxHealthOutput - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *headWriter) Bytes() []byte { return w.buf.Bytes() }
