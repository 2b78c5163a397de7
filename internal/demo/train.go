package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// ErrStopped is returned by Train when its context ended before the last
// step; a last checkpoint has been written when there is a checkpoint
// directory.
var ErrStopped = errors.New("demo: training stopped before its last step")

// TrainConfig is a stand-in training run.
type TrainConfig struct {
	Steps           int           // steps in all, counting those of earlier attempts
	StepTime        time.Duration // one step
	CheckpointEvery int           // steps between checkpoints; 0 means none but the last
	// CheckpointDir is $ALLOT_CHECKPOINT_DIR: checkpoints go there, and the
	// name of the newest into its file CHECKPOINT, which the agent reports
	// (internal/agent/doc.go). Empty means no checkpoints.
	CheckpointDir string
	// ResumeFrom is $ALLOT_RESUME_FROM: the checkpoint to start from.
	ResumeFrom string
	JobID      string // recorded in checkpoints
	Attempt    string
	// Rank and WorldSize ($ALLOT_RANK, $ALLOT_WORLD_SIZE) make the run one
	// rank of a gang of WorldSize > 1, whose rank 0 listens on Master
	// ($ALLOT_MASTER_ADDR:$ALLOT_MASTER_PORT): the ranks take their steps in
	// lockstep and stop and checkpoint at the same step (gang.go). Each
	// rank saves its own part into its own CheckpointDir.
	Rank, WorldSize int
	Master          string
	// Elastic makes the run one attempt of an elastic job (model.Elastic),
	// which a resize restarts with another world size: rank 0 alone saves
	// the whole job's checkpoint into JobCheckpointDir
	// ($ALLOT_JOB_CHECKPOINT_DIR, a shared checkpoint root), which an
	// attempt of any world size resumes from, and a step, a fixed amount
	// of work, takes StepTime divided by the world's speed-up
	// (Throughput): more instances, more steps per second. Every step's
	// line says the world size.
	Elastic          bool
	JobCheckpointDir string
}

// ScalingLoss is the efficiency an elastic run loses per instance beyond
// the first (communication): W instances are W / (1 + ScalingLoss×(W-1))
// times as fast as one.
const ScalingLoss = 0.05

// Throughput is the steps per second of an elastic run of world
// instances whose one instance takes stepTime per step.
func Throughput(world int, stepTime time.Duration) float64 {
	if stepTime <= 0 {
		return math.Inf(1)
	}
	w := float64(max(world, 1))
	return w / (1 + ScalingLoss*(w-1)) / stepTime.Seconds()
}

// checkpoint is the content of a checkpoint file.
type checkpoint struct {
	Step    int     `json:"step"`
	Loss    float64 `json:"loss"`
	JobID   string  `json:"job_id,omitempty"`
	Attempt string  `json:"attempt,omitempty"`
}

// ReadCheckpoint returns the step a checkpoint file holds.
func ReadCheckpoint(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read checkpoint: %w", err)
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	if c.Step < 0 {
		return 0, fmt.Errorf("read checkpoint %s: negative step %d", path, c.Step)
	}
	return c.Step, nil
}

// Train runs steps from the checkpoint cfg.ResumeFrom names (or from 0)
// to cfg.Steps, printing progress to out and checkpointing every
// cfg.CheckpointEvery steps. When ctx ends first it writes a checkpoint of
// the last finished step and returns ErrStopped. It returns the steps
// finished.
func Train(ctx context.Context, cfg TrainConfig, out io.Writer) (int, error) {
	if cfg.Steps < 0 || cfg.CheckpointEvery < 0 || cfg.StepTime < 0 {
		return 0, errors.New("steps, step time and checkpoint interval must not be negative")
	}
	step := 0
	if cfg.ResumeFrom != "" {
		s, err := ReadCheckpoint(cfg.ResumeFrom)
		if err != nil {
			return 0, err
		}
		step = s
		fmt.Fprintf(out, "resuming from step %d (%s)\n", step, cfg.ResumeFrom)
	}
	if cfg.Elastic {
		// Rank 0 saves the job's checkpoint for every world size; the
		// other ranks save nothing.
		cfg.CheckpointDir = ""
		if cfg.Rank == 0 {
			cfg.CheckpointDir = cfg.JobCheckpointDir
		}
		world := max(cfg.WorldSize, 1)
		fmt.Fprintf(out, "elastic: world size %d, %.2f steps/s (%d× one instance's %.2f at %.0f%% efficiency)\n", world,
			Throughput(world, cfg.StepTime), world, Throughput(1, cfg.StepTime), 100/(1+ScalingLoss*float64(world-1)))
		if cfg.StepTime > 0 {
			cfg.StepTime = time.Duration(float64(time.Second) / Throughput(world, cfg.StepTime))
		}
		if cfg.Rank == 0 && cfg.CheckpointDir == "" {
			fmt.Fprintln(out, "no job checkpoint directory ($ALLOT_JOB_CHECKPOINT_DIR): a resized or stopped run starts over")
		}
	} else if cfg.CheckpointDir == "" {
		fmt.Fprintln(out, "no checkpoint directory ($ALLOT_CHECKPOINT_DIR): a stopped run starts over")
	}
	var g *gang
	if cfg.WorldSize > 1 {
		var err error
		if g, err = joinGang(ctx, cfg.Rank, cfg.WorldSize, cfg.Master, step); err != nil {
			if ctx.Err() != nil {
				return step, ErrStopped // nothing done, nothing to save
			}
			return step, fmt.Errorf("rank %d of %d: %w", cfg.Rank, cfg.WorldSize, err)
		}
		defer g.close()
		fmt.Fprintf(out, "rank %d of %d: the gang is complete, every rank starts from step %d\n", cfg.Rank, cfg.WorldSize, step)
	}
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for step < cfg.Steps {
		timer.Reset(cfg.StepTime)
		done := true
		select {
		case <-ctx.Done():
			done = false
		case <-timer.C:
		}
		if g != nil {
			commit, err := g.agree(done, 10*cfg.StepTime+30*time.Second)
			if err != nil {
				fmt.Fprintf(out, "the gang broke at step %d: %v\n", step, err)
				if serr := saveCheckpoint(cfg, step, out); serr != nil {
					return step, serr
				}
				return step, fmt.Errorf("rank %d of %d: %w", cfg.Rank, cfg.WorldSize, err)
			}
			done = commit
		}
		if !done {
			fmt.Fprintf(out, "stopping at step %d of %d\n", step, cfg.Steps)
			if err := saveCheckpoint(cfg, step, out); err != nil {
				return step, err
			}
			return step, ErrStopped
		}
		step++
		if cfg.Elastic {
			fmt.Fprintf(out, "step %d/%d loss %.4f world %d\n", step, cfg.Steps, loss(step, cfg.Steps), max(cfg.WorldSize, 1))
		} else {
			fmt.Fprintf(out, "step %d/%d loss %.4f\n", step, cfg.Steps, loss(step, cfg.Steps))
		}
		if cfg.CheckpointEvery > 0 && step%cfg.CheckpointEvery == 0 && step < cfg.Steps {
			if err := saveCheckpoint(cfg, step, out); err != nil {
				return step, err
			}
		}
	}
	fmt.Fprintf(out, "done: %d steps\n", step)
	return step, nil
}

// loss is a made-up curve that falls as training goes on.
func loss(step, steps int) float64 {
	return 0.1 + 2*math.Exp(-4*float64(step)/float64(max(steps, 1)))
}

// saveCheckpoint writes the checkpoint of step into the checkpoint
// directory and its name into the CHECKPOINT marker there, each by a
// rename, so that neither is ever seen half written; it keeps the previous
// checkpoint and removes older ones.
func saveCheckpoint(cfg TrainConfig, step int, out io.Writer) error {
	if cfg.CheckpointDir == "" {
		return nil
	}
	name := fmt.Sprintf("step-%08d.json", step)
	data, err := json.Marshal(checkpoint{Step: step, Loss: loss(step, cfg.Steps), JobID: cfg.JobID, Attempt: cfg.Attempt})
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(cfg.CheckpointDir, name), append(data, '\n')); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := writeFile(filepath.Join(cfg.CheckpointDir, "CHECKPOINT"), []byte(name+"\n")); err != nil {
		return fmt.Errorf("checkpoint marker: %w", err)
	}
	all, _ := filepath.Glob(filepath.Join(cfg.CheckpointDir, "step-*.json"))
	for i := 0; i < len(all)-2; i++ { // sorted, and the zero-padded step sorts them by step
		_ = os.Remove(all[i])
	}
	fmt.Fprintf(out, "checkpoint %s\n", filepath.Join(cfg.CheckpointDir, name))
	return nil
}

// writeFile writes data to a temporary file next to path and renames it
// over path.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
