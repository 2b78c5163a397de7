package agent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/allot-dev/allot/internal/agent/launch"
	"github.com/allot-dev/allot/internal/client"
)

// This file is the one place where an instance's isolation is built: the
// user it runs as, its directories and its cgroup. The environment is
// launch.Environ's.

// UIDRange is the dynamic uids jobs run as, First to Last inclusive.
type UIDRange struct{ First, Last uint32 }

// DefaultUIDRange lies between systemd's container ranges (524288 to
// 1879048191) and its foreign range (from 2147352576), below 2^31 (tools
// that read uids as signed ints), far from nobody (65534) and (uid_t)-1,
// and above the ranges /etc/subuid hands out by default (100000 on, in
// blocks of 65536).
var DefaultUIDRange = UIDRange{First: 0x70000000, Last: 0x77ffffff} // 1879048192-2013265919

// ParseUIDRange parses "START-END".
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return UIDRange{}, fmt.Errorf("uid range %q: want START-END, two uids", s)
	}
	r := UIDRange{First: uint32(first), Last: uint32(last)}
	switch {
	case r.First > r.Last:
		return UIDRange{}, fmt.Errorf("uid range %q: START is after END", s)
	case r.First < 65536:
		return UIDRange{}, fmt.Errorf("uid range %q: starts among the system's and people's uids (below 65536)", s)
	case r.Last == ^uint32(0):
		return UIDRange{}, fmt.Errorf("uid range %q: (uid_t)-1 is not a uid", s)
	}
	return r, nil
}

// dynamicUIDs is which job holds which dynamic uid in this process: the
// agents of one process (allot up runs one per node) share it, so two jobs
// never share a uid and one job has the same uid on all of them.
var dynamicUIDs = struct {
	mu    sync.Mutex // guards byJob and byUID
	byJob map[string]*uidHold
	byUID map[uint32]string
}{byJob: map[string]*uidHold{}, byUID: map[uint32]string{}}

type uidHold struct {
	uid uint32
	n   int // live instances
}

// acquireUID returns job's uid: base + hash(job) in r, probing upwards past
// the uids other jobs hold.
func acquireUID(r UIDRange, job string) uint32 {
	dynamicUIDs.mu.Lock()
	defer dynamicUIDs.mu.Unlock()
	if h, ok := dynamicUIDs.byJob[job]; ok {
		h.n++
		return h.uid
	}
	size := uint64(r.Last) - uint64(r.First) + 1
	f := fnv.New64a()
	f.Write([]byte(job))
	off := f.Sum64() % size
	uid := r.First + uint32(off)
	for i := uint64(0); i < size; i++ {
		uid = r.First + uint32((off+i)%size)
		if _, taken := dynamicUIDs.byUID[uid]; !taken {
			break
		}
	}
	dynamicUIDs.byJob[job] = &uidHold{uid: uid, n: 1}
	dynamicUIDs.byUID[uid] = job
	return uid
}

// holdUID takes a hold on uid for job, for an instance a previous run of
// the agent started under it, as acquireUID would have; false when another
// job holds uid here, or job holds another.
func holdUID(job string, uid uint32) bool {
	dynamicUIDs.mu.Lock()
	defer dynamicUIDs.mu.Unlock()
	if h, ok := dynamicUIDs.byJob[job]; ok {
		if h.uid != uid {
			return false
		}
		h.n++
		return true
	}
	if _, taken := dynamicUIDs.byUID[uid]; taken {
		return false
	}
	dynamicUIDs.byJob[job] = &uidHold{uid: uid, n: 1}
	dynamicUIDs.byUID[uid] = job
	return true
}

// releaseUID drops one instance's hold on job's uid and reports whether it
// was the last.
func releaseUID(job string) (uid uint32, last bool) {
	dynamicUIDs.mu.Lock()
	defer dynamicUIDs.mu.Unlock()
	h, ok := dynamicUIDs.byJob[job]
	if !ok {
		return 0, false
	}
	if h.n--; h.n > 0 {
		return h.uid, false
	}
	delete(dynamicUIDs.byJob, job)
	delete(dynamicUIDs.byUID, h.uid)
	return h.uid, true
}

// uidHolder is the job holding dynamic uid, if any.
func uidHolder(uid uint32) string {
	dynamicUIDs.mu.Lock()
	defer dynamicUIDs.mu.Unlock()
	return dynamicUIDs.byUID[uid]
}

// identity says as whom an agent runs its jobs.
type identity int

const (
	asSelf    identity = iota // the agent is not root: jobs run as its user
	asDynamic                 // one dynamic uid per job
	asRunAs                   // every job as Config.RunAs
)

// sandbox is an instance's isolation.
type sandbox struct {
	job      string
	uid, gid uint32
	dynamic  bool
	cred     *syscall.Credential // nil: the agent's user
	jobDir   string
	// jobCkpt is the job's checkpoint directory; ckptDir the instance's,
	// ALLOT_CHECKPOINT_DIR: jobCkpt itself for a job of one instance,
	// jobCkpt/rank-R for rank R of a gang, so that each rank saves its own
	// part under a marker of its own.
	jobCkpt   string
	ckptDir   string
	dir       string // the attempt's working directory
	cgroup    string // "" without cgroups
	logPath   string
	recordKey string
}

// validName reports whether a server-given name is safe as one path
// element.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 200 && !strings.ContainsAny(s, "/\x00")
}

// cgroupName is s with what is not [A-Za-z0-9._-] replaced by '_'.
func cgroupName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// opaqueName is a fresh random name, 16 hex digits, for what every user of
// the host can list: an instance's cgroup (under /sys/fs/cgroup, and in
// /proc/PID/cgroup of each of its processes) names neither its job nor
// its tenant. The state record keeps the path.
func opaqueName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// instanceName is "attempt-N", or "attempt-N.rank-R" in a gang.
func instanceName(k key, worldSize int) string {
	if worldSize > 1 {
		return fmt.Sprintf("attempt-%d.rank-%d", k.attempt, k.rank)
	}
	return fmt.Sprintf("attempt-%d", k.attempt)
}

// agentCgroup is the cgroup of node's instances under mount: allot/NODE-H
// where H names the agent's data directory, so two agents of one node name
// on a host (tests, two allot up) never fence each other's.
func agentCgroup(mount, node, data string) string {
	abs, err := filepath.Abs(data)
	if err != nil {
		abs = data
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(mount, "allot", cgroupName(node)+"-"+hex.EncodeToString(h[:4]))
}

// DefaultWork is where the jobs of the agent keeping its state in data
// work when no --work is given: a directory of the system's temporary
// directory named after data, outside it (data is the agent's alone).
func DefaultWork(data string) string {
	abs, err := filepath.Abs(data)
	if err != nil {
		abs = data
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "allot-work-"+hex.EncodeToString(h[:6]))
}

// prepareDirs makes the agent's directories: Data (0700, the agent's
// alone: state records and logs) and Work/jobs (0711, the agent's:
// traversable, not listable).
func (a *Agent) prepareDirs() error {
	for _, d := range []string{a.cfg.Data, filepath.Join(a.cfg.Data, "state"), filepath.Join(a.cfg.Data, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	for _, d := range []string{a.cfg.Work, filepath.Join(a.cfg.Work, "jobs")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	if err := a.checkCheckpointRoot(); err != nil {
		return err
	}
	if a.ident == asSelf {
		return nil
	}
	// Jobs run as other users: they must be able to walk down to Work and
	// to the checkpoint root.
	for _, top := range []string{a.cfg.Work, a.cfg.CheckpointRoot} {
		if err := enterable(top); err != nil {
			return err
		}
	}
	return nil
}

// enterable checks that users other than the agent's can walk down to
// dir ("" passes): every directory on its path is o+x.
func enterable(dir string) error {
	for d := dir; d != ""; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s: jobs run as other users and cannot enter %s (mode %v); make it o+x or pick another directory",
				dir, d, st.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
	return nil
}

// checkCheckpointRoot makes Config.CheckpointRoot absolute and checks that
// it is a directory of the agent's user that no one else may write in: a
// job that could create CheckpointRoot/OTHER would plant what another job
// resumes from. The agent does not create it: it is a shared mount.
func (a *Agent) checkCheckpointRoot() error {
	if a.cfg.CheckpointRoot == "" {
		return nil
	}
	root, err := filepath.Abs(a.cfg.CheckpointRoot)
	if err != nil {
		return err
	}
	a.cfg.CheckpointRoot = root
	st, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("checkpoint root: %w (create it on the shared file system, owned by the agent's user, mode 0711)", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("checkpoint root %s is not a directory", root)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("checkpoint root %s is writable by others (mode %v): jobs could plant each other's checkpoints; chmod 0711 it", root, st.Mode().Perm())
	case ok && sys.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("checkpoint root %s belongs to uid %d, not the agent's (%d): chown it to the agent's user (with NFS, export it no_root_squash for an agent run as root)",
			root, sys.Uid, os.Geteuid())
	case within(root, a.cfg.Data) || root == a.cfg.Data || within(a.cfg.Data, root):
		return fmt.Errorf("checkpoint root %s and the data directory %s overlap: jobs may not reach the agent's state", root, a.cfg.Data)
	case within(root, a.cfg.Work) || root == a.cfg.Work || within(a.cfg.Work, root):
		return fmt.Errorf("checkpoint root %s and the work directory %s overlap: give the shared root a directory of its own", root, a.cfg.Work)
	}
	return nil
}

// jobDirName names job's directories, which other users of the host come
// to see in paths (WORK/jobs/NAME, CHECKPOINT_ROOT/NAME; a job that passes
// its $ALLOT_CHECKPOINT_DIR on a command line shows it to every user in
// /proc/PID/cmdline): "j" and 16 hex digits of the SHA-256 of the job's ID,
// the same on every host and for every run of the agent, and naming
// neither the job nor its tenant.
func jobDirName(job string) string {
	h := sha256.Sum256([]byte(job))
	return "j" + hex.EncodeToString(h[:8])
}

// rankDirName names rank's own checkpoint directory in its gang's.
func rankDirName(rank int) string { return "rank-" + strconv.Itoa(rank) }

// jobDir is WORK/jobs/NAME of job.
func (a *Agent) jobDir(job string) string { return filepath.Join(a.cfg.Work, "jobs", jobDirName(job)) }

// sharedCheckpoints is job's checkpoint directory in the shared
// checkpoint root.
func (a *Agent) sharedCheckpoints(job string) string {
	return filepath.Join(a.cfg.CheckpointRoot, jobDirName(job))
}

// legacyDir is a directory of a job named by its ID, as agents before
// jobDirName made them, and where it goes now.
type legacyDir struct{ old, now string }

func (a *Agent) legacyDirs(job string) []legacyDir {
	ds := []legacyDir{{filepath.Join(a.cfg.Work, "jobs", job), a.jobDir(job)}}
	if a.cfg.CheckpointRoot != "" {
		ds = append(ds, legacyDir{filepath.Join(a.cfg.CheckpointRoot, job), a.sharedCheckpoints(job)})
	}
	return ds
}

// moveLegacy renames a job's directory named by its ID to its opaque name,
// so that the job keeps its files and checkpoints across the agent's
// upgrade; nothing happens when there is none, or the new one exists.
func (a *Agent) moveLegacy(d legacyDir) {
	st, err := os.Lstat(d.old)
	if err != nil || !st.IsDir() {
		return
	}
	if _, err := os.Lstat(d.now); err == nil {
		return
	}
	if err := os.Rename(d.old, d.now); err != nil {
		a.log.Warn("job directory named by its ID not renamed", "dir", d.old, "err", err)
	}
}

// sandbox builds instance k's isolation: its uid, WORK/jobs/JOB (0700, the
// job's) with checkpoints/ and a fresh attempt directory, and the path of
// its cgroup. Undo with release.
func (a *Agent) sandbox(k key, x client.Assignment) (sandbox, error) {
	if !validName(k.job) {
		return sandbox{}, fmt.Errorf("job ID %q is not a file name", k.job)
	}
	name := instanceName(k, x.WorldSize)
	sb := sandbox{
		job: k.job, uid: uint32(os.Getuid()), gid: uint32(os.Getgid()),
		jobDir:    a.jobDir(k.job),
		logPath:   filepath.Join(a.cfg.Data, "logs", k.job, name+".log"),
		recordKey: fmt.Sprintf("%s.%d.%d", k.job, k.attempt, k.rank),
	}
	sb.jobCkpt, sb.dir = filepath.Join(sb.jobDir, "checkpoints"), filepath.Join(sb.jobDir, name)
	if a.cfg.CheckpointRoot != "" {
		sb.jobCkpt = a.sharedCheckpoints(k.job)
	}
	sb.ckptDir = sb.jobCkpt
	if x.WorldSize > 1 {
		sb.ckptDir = filepath.Join(sb.jobCkpt, rankDirName(k.rank))
	}
	for _, m := range a.legacyDirs(k.job) {
		a.moveLegacy(m)
	}
	switch a.ident {
	case asDynamic:
		sb.uid = acquireUID(a.cfg.UIDs, k.job)
		sb.gid, sb.dynamic = sb.uid, true
		sb.cred = &syscall.Credential{Uid: sb.uid, Gid: sb.gid, Groups: []uint32{}}
	case asRunAs:
		c := *a.cfg.RunAs
		sb.uid, sb.gid, sb.cred = c.Uid, c.Gid, &c
	}
	if a.cgroup != "" {
		sb.cgroup = filepath.Join(a.cgroup, opaqueName())
	}
	if err := a.makeJobDirs(sb); err != nil {
		a.release(sb)
		return sandbox{}, err
	}
	return sb, nil
}

// release drops what sandbox took: the instance's hold on a dynamic uid.
// The last instance of a job on an agent without cgroups also kills every
// process left under the uid, which catches what escaped the process group.
func (a *Agent) release(sb sandbox) {
	if !sb.dynamic {
		return
	}
	uid, last := releaseUID(sb.job)
	if last && a.cgroup == "" {
		if n, err := launch.KillUID(uid); n > 0 || err != nil {
			a.log.Warn("killed processes left under the job's uid", "uid", uid, "killed", n, "err", err)
		}
	}
}

// makeJobDirs creates the job's directory, its checkpoints and a fresh
// attempt directory, all the job's user's and 0700. It never follows a
// link the job may have put in its own directory.
func (a *Agent) makeJobDirs(sb sandbox) error {
	for _, dir := range []string{sb.jobDir, sb.jobCkpt} {
		if err := a.reown(dir, sb); err != nil {
			return err
		}
	}
	for _, dir := range slices.Compact([]string{sb.jobDir, sb.jobCkpt, sb.ckptDir}) {
		if err := ownedDir(dir, sb.uid, sb.gid); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(sb.dir); err != nil {
		return err
	}
	return ownedDir(sb.dir, sb.uid, sb.gid)
}

// reown hands the job's directory dir to the uid the job has now when it
// ran under another before (the probe moved it, or another host's agent
// gave it another uid in a shared checkpoint root), unless another live
// job holds the old one (its processes could swap links in while the tree
// is walked).
func (a *Agent) reown(dir string, sb sandbox) error {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return nil // made (or a planted link removed) by ownedDir
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok || (s.Uid == sb.uid && s.Gid == sb.gid) {
		return nil
	}
	if holder := uidHolder(s.Uid); holder != "" {
		return fmt.Errorf("job directory %s belongs to uid %d, which job %s holds now", dir, s.Uid, holder)
	}
	a.log.Info("job directory changes owner", "dir", dir, "from", s.Uid, "to", sb.uid)
	return lchownTree(dir, sb.uid, sb.gid)
}

// ownedDir makes path a directory of uid:gid with mode 0700; what is there
// and is not a directory (a link the job planted) is removed first. It
// changes the directory through a descriptor opened without following
// links, so a job cannot swap in a link to have the agent chown elsewhere.
func ownedDir(path string, uid, gid uint32) error {
	for try := 0; ; try++ {
		if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if (errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR)) && try < 3 {
			if err := os.Remove(path); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer syscall.Close(fd)
		if os.Geteuid() == 0 {
			if err := syscall.Fchown(fd, int(uid), int(gid)); err != nil {
				return fmt.Errorf("chown %s: %w", path, err)
			}
		}
		if err := syscall.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("chmod %s: %w", path, err)
		}
		return nil
	}
}

func lchownTree(root string, uid, gid uint32) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(gid))
	})
}

// isolate decides as whom jobs run and how their processes are tracked,
// and makes the agent's directories.
func (a *Agent) isolate() error {
	var err error
	if a.cfg.Data, err = filepath.Abs(a.cfg.Data); err != nil {
		return err
	}
	if a.cfg.Work, err = filepath.Abs(a.cfg.Work); err != nil {
		return err
	}
	if a.cfg.Work == a.cfg.Data || within(a.cfg.Data, a.cfg.Work) {
		return fmt.Errorf("work directory %s is inside the data directory %s: jobs may not reach the agent's state", a.cfg.Work, a.cfg.Data)
	}
	switch {
	case os.Geteuid() != 0:
		if a.cfg.RunAs != nil {
			return errors.New("running jobs as another user needs root")
		}
		a.ident = asSelf
		a.log.Warn("the agent is not root: jobs run as its own user, so they can read its files and signal it; run it as root for each job to run under a uid of its own")
	case a.cfg.RunAs != nil:
		a.ident = asRunAs
		a.log.Info("jobs run as one user: they can reach each other's files and processes", "uid", a.cfg.RunAs.Uid)
	default:
		a.ident = asDynamic
	}
	if err := a.prepareDirs(); err != nil {
		return err
	}
	if a.allot, err = installSelf(a.cfg.Work); err != nil {
		a.log.Warn("jobs that run allot (allot demo …) use the agent's own executable, which their users may not reach", "err", err)
	}
	mount := a.cfg.Cgroups
	if mount == "" {
		mount = launch.CgroupMount()
	}
	if mount != "" && mount != "none" {
		dir := agentCgroup(mount, a.cfg.Node, a.cfg.Data)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			a.log.Warn("cgroup v2 not writable: tracking jobs by process group", "cgroup", dir, "err", err)
		} else {
			a.cgroup = dir
		}
	}
	if a.cgroup != "" {
		// The shims live beside the instances, out of the agent's own
		// cgroup, which a service manager may kill whole (package shim).
		shims := filepath.Join(a.cgroup, "shims")
		if err := os.Mkdir(shims, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			a.log.Warn("shims stay in the agent's cgroup: stop the agent alone (KillMode=process) for its jobs to outlive it", "cgroup", shims, "err", err)
		} else {
			a.shims = shims
		}
	}
	a.pids = a.limitPids()
	a.log.Debug("isolation", "work", a.cfg.Work, "users", []string{"agent's own", "dynamic", "run-as"}[a.ident],
		"cgroup", a.cgroup, "pids_limit", a.pidsLimit(), "pids_bound_by", a.pids)
	return nil
}

// installSelf makes the agent's executable reachable by jobs as
// WORK/bin/allot: a job's user may not be able to enter the directory the
// agent runs from ('go run' builds into a 0700 directory). It links the
// executable there (no copy on one file system), or copies it, and
// returns the path; an existing link to the same file is kept.
func installSelf(work string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", err
	}
	bin := filepath.Join(work, "bin")
	if err := os.MkdirAll(bin, 0o711); err != nil {
		return "", err
	}
	if err := os.Chmod(bin, 0o711); err != nil {
		return "", err
	}
	dst := filepath.Join(bin, "allot")
	a, err := os.Stat(self)
	if err != nil {
		return "", err
	}
	runnable := a.Mode().Perm()&0o005 == 0o005 // by any user
	if b, err := os.Lstat(dst); err == nil && os.SameFile(a, b) && runnable {
		return dst, nil
	}
	tmp := fmt.Sprintf("%s.%d", dst, os.Getpid())
	_ = os.Remove(tmp)
	if !runnable || os.Link(self, tmp) != nil {
		if err := copyExecutable(self, tmp); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return dst, nil
}

// copyExecutable copies the file src to dst, mode 0755.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
