// Package logctx builds the per-reconcile loggers of controllers whose component has a log
// level of its own (SPEC §11.4), in the shape controller-runtime gives its default loggers.
package logctx

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Constructor returns a builder.WithLogConstructor function over base for controller name
// reconciling kind.
func Constructor(base logr.Logger, name, kind string) func(*reconcile.Request) logr.Logger {
	return func(req *reconcile.Request) logr.Logger {
		l := base.WithValues("controller", name)
		if req != nil {
			l = l.WithValues(kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
		}
		return l
	}
}
