// Package engine is allot's one discrete-event simulation loop: a virtual
// clock, a queue of events, and the scheduling core run whenever something
// changed. Trace replays and scenario generators are its inputs; they
// submit and stop work and schedule their own events (arrivals, load
// samples, autoscaler ticks) with At.
//
// Contract: the engine is pure. It reads no wall clock (time is Config.Start
// moved forward by events), starts no goroutine and does no I/O; the same
// inputs give the same run. It drives the same core as the server:
//
//  1. advance: the clock moves to the next event; the Recorder is told
//     what held capacity over the interval;
//  2. events of that moment: completions in submit order (a job whose
//     work is done succeeds and frees its capacity), then callbacks in
//     the order they were scheduled (they may Submit, Stop, Kick or
//     SetHealth);
//  3. cycle, when anything changed (at once, or at the next boundary of
//     Config.Period): the Snapshot of the queued and
//     holding jobs (each running job's LastCheckpoint set from its
//     checkpoint interval; or the driver's Config.Select) goes through
//     Config.Input (strategy, operator policies) to the core, and the Plan
//     is committed to the engine's jobs with Plan.Apply. The core plans on
//     a sched.Session kept for the whole run and told only what changed
//     since the last cycle (session.go); its Plans are those of
//     sched.Scheduler.Schedule on the Snapshot, which
//     Config.CheckIncremental checks every cycle. A cycle that preempted
//     is followed at once by another (victims may take what is left), up
//     to Config.Rounds;
//  4. account: a bound job completes after its remaining work at its
//     attempt's speed (Config.Speed, for GPU models of different speeds;
//     or Config.RunFor, for a driver that accounts work itself); a
//     preempted one keeps the work up to its last checkpoint and loses
//     the rest (Preemption.LostGPUSeconds, as the core computed it), and
//     with Config.Checkpoints local keeps it only if its next attempt runs
//     on the node of that checkpoint (RestartRecorder hears of each restart); a
//     resized elastic job (sched.Resize) does both at once: its attempt
//     keeps the work up to its last checkpoint, and the next resumes from
//     it at once at the new size's speed, Config.Speed times Scaling of its
//     instances over its base size (Config.ScalingEfficiency; elastic.go);
//     a job left AwaitingPreemption brings a cycle when the first protection
//     (Config.Core.MinRunTime) of running work ends.
//
// The Recorder hook sees every start, preemption and end and every
// interval of time (a ResizeRecorder every resize too); metrics live
// there, not in the engine.
package engine
