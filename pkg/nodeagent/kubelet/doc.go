// Package kubelet is ballast-node's Summary API source: a client for the local kubelet's
// GET /stats/summary (HTTPS, service-account bearer token, serving certificate verified
// unless explicitly disabled). Decoding the answer into the readings Ballast records is
// pkg/kubeletstats (pure, shared with the control plane's metrics fallback); this package
// is the transport and turns skipped readings into the source's typed errors. The kubelet
// refreshes these stats every 10–15 s, so polling faster gains nothing.
package kubelet
