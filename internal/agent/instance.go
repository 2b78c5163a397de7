package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/agent/runtime"
	"github.com/allot-dev/allot/internal/agent/shim"
	"github.com/allot-dev/allot/internal/client"
)

// This file is an instance's life in the agent: started under a shim (or
// adopted, adopt.go), watched while it runs (log, checkpoints), and its end
// reported.

// start launches x once the GPUs it needs are no longer held by stopping
// processes. Called with a.mu held.
func (a *Agent) start(ctx context.Context, k key, x client.Assignment) {
	grace, _ := time.ParseDuration(x.Grace)
	sctx, cancel := context.WithCancel(ctx)
	p := &proc{a: x, grace: grace, cancel: cancel, done: make(chan struct{})}
	a.procs[k] = p
	var waitFor []chan struct{}
	for ok, o := range a.procs {
		if ok != k && o.stopping && overlaps(o.a.GPUs, x.GPUs) {
			waitFor = append(waitFor, o.done)
		}
	}
	a.instances.Add(1)
	go func() {
		defer a.instances.Done()
		defer cancel()
		if x.Container != nil {
			// The image is pulled while the GPUs may still be held.
			img, err := a.pull(sctx, k, x)
			if err != nil && sctx.Err() == nil {
				a.pullFailed(k, p, err)
				return
			}
			a.mu.Lock()
			p.image = img
			a.mu.Unlock()
			a.trimImages(sctx, time.Now())
		}
		for _, w := range waitFor {
			select {
			case <-w:
			case <-sctx.Done():
			}
		}
		a.mu.Lock()
		if sctx.Err() != nil || p.stopping {
			delete(a.procs, k)
			close(p.done)
			a.mu.Unlock()
			return
		}
		spec, err := a.launch(k, p)
		if err != nil {
			a.finished[k] = true
			delete(a.procs, k)
			close(p.done)
			a.mu.Unlock()
			a.log.Error("start failed", "job", k.job, "attempt", k.attempt, "rank", k.rank, "err", err)
			msg := eventMessage("could not start: " + err.Error())
			a.tell(a.reports, k, msg)
			a.report(a.reports, k, client.AttemptEvent{Type: "exited", ExitCode: 127, Outcome: "Exited", Message: msg})
			return
		}
		noResume := p.noResume
		a.mu.Unlock()
		if noResume != "" {
			a.tell(a.reports, k, noResume)
		}
		pid, _ := p.h.Job()
		a.log.Info("started instance", "job", k.job, "attempt", k.attempt, "rank", k.rank, "pid", pid, "shim", p.h.Pid(),
			"uid", p.sb.uid, "gpus", spec.GPUs, "resume_from", spec.ResumeFrom)
		a.report(a.reports, k, client.AttemptEvent{Type: "started"})
		a.watch(k, p)
	}()
}

// pullFailed reports an instance whose image could not be pulled: it
// exits with outcome ImagePullFailed and the registry's message, which the
// server keeps as the job's reason and retries after a back-off.
func (a *Agent) pullFailed(k key, p *proc, err error) {
	a.mu.Lock()
	a.finished[k] = true
	delete(a.procs, k)
	close(p.done)
	a.mu.Unlock()
	a.log.Error("image pull failed", "job", k.job, "attempt", k.attempt, "rank", k.rank, "image", p.a.Container.Image, "err", err)
	cause := err.Error()
	var pe *runtime.PullError
	if errors.As(err, &pe) {
		cause = pe.Msg
	}
	msg := eventMessage(fmt.Sprintf("image %s not pulled on %s: %s", p.a.Container.Image, a.cfg.Node, cause))
	a.tell(a.reports, k, msg)
	a.report(a.reports, k, client.AttemptEvent{Type: "exited", ExitCode: 127, Outcome: OutcomeImagePullFailed, Message: msg})
}

// OutcomeImagePullFailed is the outcome of an instance whose image could
// not be pulled (server.OutcomeImagePullFailed).
const OutcomeImagePullFailed = "ImagePullFailed"

// launch builds the instance's sandbox, records it, and starts it under a
// shim. Called with a.mu held.
func (a *Agent) launch(k key, p *proc) (launch.Spec, error) {
	sb, err := a.sandbox(k, p.a)
	if err != nil {
		return launch.Spec{}, err
	}
	spec, why := a.spec(k, p.a, sb)
	p.noResume = why
	var container string
	if p.a.Container != nil {
		if container, err = a.containerize(p.a, p.image, sb, &spec); err != nil {
			a.release(sb)
			return launch.Spec{}, fmt.Errorf("container: %w", err)
		}
	}
	// The markers are an earlier attempt's, if any: not this one's to report.
	rec := record{Job: k.job, Attempt: k.attempt, Rank: k.rank, UID: sb.uid, Dynamic: sb.dynamic, Cgroup: sb.cgroup,
		GPUs: gpuIndices(p.a.GPUs), Log: sb.logPath, Checkpoints: sb.ckptDir, World: p.a.WorldSize, JobCheckpoints: a.jobMarkerDir(k, p.a, sb),
		Container: container}
	if container != "" {
		rec.ContainerCheckpoints = sb.jobCkpt
	}
	seen, _ := readMarker(rec.Checkpoints)
	rec.Marker, rec.MarkerTime = seen.path, seen.mod
	if rec.JobCheckpoints != "" {
		jobSeen, _ := readMarker(rec.JobCheckpoints)
		rec.JobMarker, rec.JobMarkerTime = jobSeen.path, jobSeen.mod
	}
	p.markers = rec.markers()
	if err := a.writeRecord(sb.recordKey, rec); err != nil {
		a.release(sb)
		return launch.Spec{}, fmt.Errorf("state record: %w", err)
	}
	var pidsMax int64
	if a.pids == pidsCgroup {
		pidsMax = a.pidsLimit()
	}
	s := shim.Spec{Launch: spec, Cgroup: sb.cgroup, PidsMax: pidsMax, Exit: a.exitPath(sb.recordKey),
		Order: a.orderPath(sb.recordKey), Lease: a.leasePath(), NodeTimeout: a.cfg.NodeTimeout}
	var h *shim.Handle
	if a.cfg.InProcess {
		// The record names no shim: a later run fences the instance.
		h, err = shim.Supervise(s)
	} else {
		h, err = shim.Start(s, a.shims, func(pid int, start uint64) error {
			rec.Shim, rec.ShimStart = pid, start
			return a.writeRecord(sb.recordKey, rec)
		})
	}
	if err != nil {
		if sb.cgroup != "" {
			a.killCgroup(sb.cgroup) // what a shim that did not answer may have started
		}
		a.forget(sb.recordKey)
		a.release(sb)
		return launch.Spec{}, err
	}
	rec.PID, rec.StartTime = h.Job()
	p.h, p.sb, p.rec = h, sb, rec
	if err := a.writeRecord(sb.recordKey, rec); err != nil {
		a.log.Warn("state record not updated with the process", "job", k.job, "err", err)
	}
	return spec, nil
}

// watch ships the log and checkpoints of a running instance until it
// exits, then reports the exit. The log of an instance a previous run
// started goes on from where the server has it. With OnExitLeave, the
// agent's exit ends the watch and leaves the instance to the next run.
func (a *Agent) watch(k key, p *proc) {
	ctx := a.reports
	t := time.NewTicker(a.cfg.ShipEvery)
	defer t.Stop()
	var off int64
	if p.adopted {
		off = -1 // unknown until the server says
	}
	for running := true; running; {
		select {
		case <-p.h.Done():
			running = false
		case <-t.C:
		case <-a.leaving:
			a.leave(k, p)
			return
		}
		if off < 0 {
			off = a.logOffset(ctx, k, p.sb.logPath)
		}
		if off >= 0 {
			off = a.ship(ctx, k, p.sb.logPath, off, !running)
		}
		// Only what this attempt writes is reported, each save once, a save
		// under the same name included.
		if a.checkMarkers(ctx, k, p.markers) {
			p.rec.seen(p.markers)
			if err := a.writeRecord(p.sb.recordKey, p.rec); err != nil {
				a.log.Warn("state record not updated with the checkpoint", "job", k.job, "err", err)
			}
		}
	}
	ev := a.ended(k, p)
	a.report(ctx, k, ev)
	now := time.Now()
	_ = os.Chtimes(p.sb.logPath, now, now) // when the job last ran here (sweep.go)
	select {
	case <-a.leaving:
		// The reports may have failed for the agent's exit: the next run
		// reports them again from the files.
		a.leave(k, p)
		return
	default:
	}
	if p.rec.Container != "" {
		a.removeContainer(p.rec.Container)
	}
	a.forget(p.sb.recordKey)
	a.release(p.sb)
	a.mu.Lock()
	a.finished[k] = true
	delete(a.procs, k)
	close(p.done)
	a.mu.Unlock()
}

// ended is the exit event of an instance whose shim has ended, from the
// Exit it wrote, with a line in the attempt's log when the job did not
// exit 0 by itself. A shim that wrote none was killed, or the host went
// down under it: the agent kills what the job left (its shim did not) and
// reports the instance lost, as it does when the server says an instance
// runs here that nothing of runs.
func (a *Agent) ended(k key, p *proc) client.AttemptEvent {
	e, err := p.h.Exit()
	log := a.log.With("job", k.job, "attempt", k.attempt, "rank", k.rank)
	lost := func(why string) client.AttemptEvent {
		return client.AttemptEvent{Type: "exited", ExitCode: -1, Outcome: "NodeLost", Message: eventMessage("lost on " + a.cfg.Node + ": " + why)}
	}
	var ev client.AttemptEvent
	switch {
	case err != nil:
		log.Warn("instance's shim ended without saying how the job ended: reporting it lost", "shim", p.h.Pid(), "err", err)
		a.killRecord(p.rec, false)
		ev = lost("its supervisor ended without recording how the job ended")
	case e.StartError != "":
		log.Error("start failed", "err", e.StartError)
		ev = client.AttemptEvent{Type: "exited", ExitCode: 127, Outcome: string(launch.Exited), Message: eventMessage("could not start: " + e.StartError)}
	case e.Fenced:
		log.Warn("instance stopped by its shim without the agent: the agent was gone for longer than the node timeout, or the host shut down",
			"node_timeout", a.cfg.NodeTimeout)
		ev = lost("stopped without its agent (gone for longer than the node timeout, or the host shut down); the job is requeued")
	case e.Outcome == launch.Stopped && p.h.Order().Lost:
		// Stopped, whatever the exit code (a job may exit 0 after its
		// checkpoint): the server requeues a running job whose agent
		// stopped it without counting a retry or a lost attempt, and
		// ignores the news of an attempt it already gave up.
		log.Info("instance stopped with its node", "exit_code", e.ExitCode, "signal", e.Signal, "killed", e.Killed)
		ev = client.AttemptEvent{Type: "exited", ExitCode: e.ExitCode, Outcome: string(launch.Stopped), Killed: e.Killed,
			Message: eventMessage("stopped as its agent went down or lost the server; the job is requeued from its checkpoint")}
	default:
		log.Info("instance exited", "outcome", e.Outcome, "exit_code", e.ExitCode, "signal", e.Signal, "killed", e.Killed)
		ev = client.AttemptEvent{Type: "exited", ExitCode: e.ExitCode, Outcome: string(e.Outcome), Killed: e.Killed, Message: exitMessage(e.Exit)}
	}
	if ev.Message != "" {
		a.tell(a.reports, k, ev.Message)
	}
	return ev
}

// logOffset is where shipping the log of an instance a previous run
// started resumes: how far the server has it (an empty chunk at offset 0
// asks), but no further back than the file's last resendLimit bytes; -1
// when the server could not say.
func (a *Agent) logOffset(ctx context.Context, k key, path string) int64 {
	cctx, cancel := a.bounded(ctx)
	has, err := a.cfg.Client.AppendLogAt(cctx, k.job, k.attempt, k.rank, 0, false, nil)
	cancel()
	if err != nil {
		a.log.Warn("ship log failed: the server did not say how far it has the log", "job", k.job, "attempt", k.attempt,
			"rank", k.rank, "err", err)
		return -1
	}
	if st, err := os.Stat(path); err == nil {
		has = max(has, st.Size()-resendLimit)
	}
	return has
}
