package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lease is the leader election of several controllers on one cluster: the
// one holding the Lease schedules, the others wait with their informers
// synced, ready to take over.
type Lease struct {
	Namespace, Name string
	// Identity names this controller in the Lease (its holderIdentity).
	Identity string
	// Duration is how long a leader that stopped renewing keeps the
	// Lease; RenewDeadline how long a leader tries to renew before it
	// stops scheduling; RetryPeriod how often candidates try. Zero takes
	// 15s, 10s and 2s.
	Duration, RenewDeadline, RetryPeriod time.Duration
	// OnLead and OnLose, when set, are told when this controller starts
	// and stops leading (tests, logs).
	OnLead, OnLose func()
}

// Run starts the informers, then schedules while this controller holds
// lease (every cycle while it leads, none after), until ctx ends; then it
// gives the Lease up, so that another controller takes over at once.
// Without a lease (nil) it schedules alone.
func (c *Controller) Run(ctx context.Context, lease *Lease) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	if lease == nil {
		c.Schedule(ctx)
		return nil
	}
	if lease.Duration == 0 {
		lease.Duration, lease.RenewDeadline, lease.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: lease.Namespace, Name: lease.Name},
		Client:     c.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: lease.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: lease.Name, ReleaseOnCancel: true,
			LeaseDuration: lease.Duration, RenewDeadline: lease.RenewDeadline, RetryPeriod: lease.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					c.cfg.Log.Info("leading: scheduling", "lease", lease.Namespace+"/"+lease.Name, "identity", lease.Identity)
					if lease.OnLead != nil {
						lease.OnLead()
					}
					c.Schedule(lctx)
				},
				OnStoppedLeading: func() {
					c.cfg.Log.Info("stopped leading", "lease", lease.Namespace+"/"+lease.Name, "identity", lease.Identity)
					if lease.OnLose != nil {
						lease.OnLose()
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("kube: leader election: %w", err)
		}
		// Run returns when ctx ends or the lease is lost; a controller
		// that lost it stands again as a candidate.
		le.Run(ctx)
	}
	return nil
}
