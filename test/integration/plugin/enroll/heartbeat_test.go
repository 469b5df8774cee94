package enroll

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeKubeletHeartbeat renews the node Leases of the sandbox's kwok nodes every 5 s, as
// each node's kubelet would (a fake for the kubelets that cannot run here). kwok renews
// node status only every ~10 minutes with the stock stages, so without this the node
// lifecycle controller (grace period 40 s in the sandbox) marks the nodes NotReady and their
// pods unready, and no rollout could complete.
func fakeKubeletHeartbeat(ctx context.Context, c client.Client, nodes []string) {
	renew := func() {
		for _, n := range nodes {
			l := &coordinationv1.Lease{}
			now := metav1.NewMicroTime(time.Now())
			err := c.Get(ctx, client.ObjectKey{Namespace: "kube-node-lease", Name: n}, l)
			switch {
			case apierrors.IsNotFound(err):
				l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: n},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now}}
				_ = c.Create(ctx, l)
			case err == nil:
				l.Spec.RenewTime = &now
				_ = c.Update(ctx, l)
			}
		}
	}
	renew()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			renew()
		}
	}
}
