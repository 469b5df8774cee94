package ballast

import (
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/ballastk8s/ballast/pkg/nodeagent/debug"
)

// WriteNodeReport renders the agent's report fetched from agent with the agent's own text
// renderer (debug.WriteText), naming the agent pod: `kubectl ballast node` and the agent's
// ?format=text show the same view.
func WriteNodeReport(w io.Writer, agent *corev1.Pod, r debug.Report) error {
	return debug.WriteText(w, r, agent.Namespace+"/"+agent.Name)
}
