package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/model"
)

// maxMarker bounds what the agent reads of a CHECKPOINT marker.
const maxMarker = 4 << 10

// errOutside says a checkpoint path does not resolve inside the job's
// checkpoint directory.
var errOutside = errors.New("agent: checkpoint path is outside the job's checkpoint directory")

// marker is what a CHECKPOINT marker held when read: its trimmed content
// and when it was last written. A job that saves under one name each time
// rewrites the same content; its time tells the saves apart.
type marker struct {
	path string
	mod  time.Time
}

// same reports whether m and o are one save of the marker.
func (m marker) same(o marker) bool { return m.path == o.path && m.mod.Equal(o.mod) }

// readMarker reads dir/CHECKPOINT, following no link: neither the marker
// nor dir may be one (the job owns both and could point them anywhere the
// agent may read). It returns a zero marker when there is none.
func readMarker(dir string) (marker, error) {
	dfd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return marker{}, fmt.Errorf("checkpoint dir: %w", err)
	}
	defer syscall.Close(dfd)
	fd, err := syscall.Openat(dfd, "CHECKPOINT", syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return marker{}, nil
	}
	if err != nil {
		return marker{}, fmt.Errorf("checkpoint marker: %w", err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, "CHECKPOINT"))
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return marker{}, fmt.Errorf("checkpoint marker: not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMarker+1))
	if err != nil {
		return marker{}, err
	}
	if len(b) > maxMarker {
		return marker{}, fmt.Errorf("checkpoint marker: longer than %d bytes", maxMarker)
	}
	return marker{path: strings.TrimSpace(string(b)), mod: st.ModTime()}, nil
}

// confine returns path as an absolute, clean path when it lies inside dir
// (a relative path is relative to dir), following the links of the part
// that exists: "..", an absolute path elsewhere and a link out of dir are
// refused with errOutside. dir itself is not a checkpoint.
func confine(dir, path string) (string, error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return "", errOutside
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	path = filepath.Clean(path)
	if !within(dir, path) {
		return "", errOutside
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	// Resolve the longest part of path that exists; the rest has no links
	// yet.
	head, tail := path, ""
	for {
		real, err := filepath.EvalSymlinks(head)
		if err == nil {
			if !within(realDir, filepath.Join(real, tail)) {
				return "", errOutside
			}
			return path, nil
		}
		if head == dir {
			return "", err
		}
		if _, lerr := os.Lstat(head); lerr == nil {
			return "", errOutside // there, but it does not resolve: a dangling link
		}
		head, tail = filepath.Dir(head), filepath.Join(filepath.Base(head), tail)
	}
}

// within reports whether path is strictly inside dir; both are clean.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// resumeFrom is what an instance of assignment x gets as ALLOT_RESUME_FROM,
// with dir the job's checkpoint directory here (that holds every rank's
// own), and why it gets nothing when the job has a checkpoint ("" otherwise).
// The server gives a gang's ranks each their part of one save, or none of
// them (x.NoResume says why). A URL passes as it is: the job reads it with
// its own credentials. A path must lie inside dir and exist on this host; a
// checkpoint saved on another node's disk is not here (x.ResumeNode names
// that node when the server knows it), unless this node saved one of the
// same name.
func (a *Agent) resumeFrom(x client.Assignment, dir string) (string, string) {
	if x.ResumeFrom == "" {
		if x.NoResume != "" {
			return "", "starting without ALLOT_RESUME_FROM: " + x.NoResume
		}
		return "", ""
	}
	if model.IsCheckpointURL(x.ResumeFrom) {
		return x.ResumeFrom, ""
	}
	why := func(here string) string {
		if x.ResumeNode != "" && x.ResumeNode != a.cfg.Node {
			here = "was saved on node " + x.ResumeNode + ", not here"
		}
		return "starting without ALLOT_RESUME_FROM: the checkpoint " + x.ResumeFrom + " " + here
	}
	path, err := confine(dir, x.ResumeFrom)
	if err != nil {
		return "", why("is not in the job's checkpoint directory here")
	}
	if _, err := os.Lstat(path); err != nil { // a link inside dir counts; it is never followed here
		return "", why("is not on this node's disk")
	}
	return path, ""
}

// unlegacy is path, a checkpoint reported by an agent that named job's
// directories by its ID, in the directory moveLegacy renamed them to; any
// other path is returned as it is.
func (a *Agent) unlegacy(job, path string) string {
	if path == "" || model.IsCheckpointURL(path) {
		return path
	}
	path = filepath.Clean(path)
	for _, d := range a.legacyDirs(job) {
		if within(d.old, path) {
			rel, err := filepath.Rel(d.old, path)
			if err == nil {
				return filepath.Join(d.now, rel)
			}
		}
	}
	return path
}

// reportCheckpoint tells the server that an instance of job saved a
// checkpoint at path on this node, or with no node when path lies in the
// shared checkpoint root. rank, when set, makes it that rank's part of the
// save step. A server older than this agent does not know the fields node,
// shared, rank and step and refuses them (400, unknown field): it is told the path
// alone, as before, so that agents may be upgraded before the servers.
func (a *Agent) reportCheckpoint(ctx context.Context, job, path string, rank *int, step string) error {
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	ck := client.CheckpointRequest{Path: path, Node: a.cfg.Node, Rank: rank, Step: step}
	if a.cfg.CheckpointRoot != "" && within(a.cfg.CheckpointRoot, path) {
		ck.Node, ck.Shared = "", true // every host reaches it
	}
	_, err := a.cfg.Client.Checkpoint(ctx, job, ck)
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && slices.Contains([]string{"node", "shared", "rank", "step"}, ae.Field) &&
		strings.Contains(ae.Message, "unknown field") {
		_, err = a.cfg.Client.Checkpoint(ctx, job, client.CheckpointRequest{Path: path})
	}
	return err
}

// markers follows the CHECKPOINT markers an instance may write: its own
// in ALLOT_CHECKPOINT_DIR (in a gang, a part of a save each rank makes),
// and for rank 0 of a gang on a shared checkpoint root, the job's in
// ALLOT_JOB_CHECKPOINT_DIR (one save for every rank, as DeepSpeed and
// torch.distributed.checkpoint write to shared storage).
type markers struct {
	own, job *markerWatch // job is nil but for rank 0 of a gang on a shared root
}

// markerWatch is one marker being followed.
type markerWatch struct {
	dir  string
	rank *int // the rank whose part it names; nil for every rank
	// reported is the save last reported; at the start, the marker as the
	// instance found it (an earlier attempt's, not this one's to report).
	reported marker
	bad      string // the last path refused, logged once
	// mapped, for an instance in a container, is the job's checkpoint
	// directory on the host, which the container sees at
	// model.ContainerCheckpointDir; "" on the host.
	mapped string
}

// markersOf follows the markers of rank of a job of world instances: its
// own in dir, and the job's in jobDir when jobDir is set, each from the
// marker last seen there.
func markersOf(dir, jobDir string, rank, world int, seen, jobSeen marker) *markers {
	m := &markers{own: &markerWatch{dir: dir, reported: seen}}
	if world > 1 {
		m.own.rank = &rank
	}
	if jobDir != "" {
		m.job = &markerWatch{dir: jobDir, reported: jobSeen}
	}
	return m
}

// jobMarkerDir is the job's checkpoint directory when instance k of x
// reports a marker there for every rank (rank 0 of a gang, on a shared
// checkpoint root), else "".
func (a *Agent) jobMarkerDir(k key, x client.Assignment, sb sandbox) string {
	if x.WorldSize > 1 && k.rank == 0 && a.cfg.CheckpointRoot != "" {
		return sb.jobCkpt
	}
	return ""
}

// checkMarkers reports each save a marker names that it has not reported
// yet, and says whether it reported any.
func (a *Agent) checkMarkers(ctx context.Context, k key, m *markers) bool {
	reported := false
	for _, w := range []*markerWatch{m.own, m.job} {
		if w != nil && a.checkMarker(ctx, k, w) {
			reported = true
		}
	}
	return reported
}

func (a *Agent) checkMarker(ctx context.Context, k key, w *markerWatch) bool {
	cur, err := readMarker(w.dir)
	if err != nil || cur.path == "" || cur.same(w.reported) {
		return false
	}
	raw := cur.path
	if w.mapped != "" {
		raw = onHost(w.mapped, raw)
	}
	path, err := confine(w.dir, raw)
	if err != nil {
		if cur.path != w.bad {
			w.bad = cur.path
			a.log.Warn("checkpoint marker ignored: its path is not in the job's checkpoint directory", "job", k.job,
				"path", truncate(cur.path, 200), "dir", w.dir, "err", err)
		}
		return false
	}
	step := ""
	if w.rank != nil {
		step, _ = filepath.Rel(w.dir, path)
	}
	if err := a.reportCheckpoint(ctx, k.job, path, w.rank, step); err != nil {
		a.log.Warn("report checkpoint failed", "job", k.job, "rank", k.rank, "err", err)
		return false
	}
	w.reported = cur
	a.log.Info("checkpoint reported", "job", k.job, "rank", k.rank, "path", path, "part", w.rank != nil)
	return true
}
