package reconciler

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// LogConstructor returns a builder.WithLogConstructor function over base for controller
// name reconciling kind: each request's logger names the controller and the object.
func LogConstructor(base logr.Logger, name, kind string) func(*reconcile.Request) logr.Logger {
	return func(req *reconcile.Request) logr.Logger {
		l := base.WithValues("controller", name)
		if req != nil {
			l = l.WithValues(kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
		}
		return l
	}
}
