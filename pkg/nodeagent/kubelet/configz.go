package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// CgroupConfig is the part of the kubelet's running configuration that says where its pod
// cgroups are: CgroupRoot ("/" by default; the kubelet's --cgroup-root) and CgroupDriver
// (systemd or cgroupfs).
type CgroupConfig struct {
	CgroupRoot   string
	CgroupDriver string
}

// ErrNoCgroupConfig is wrapped when a /configz answer holds no kubeletconfig object.
var ErrNoCgroupConfig = errors.New("kubelet /configz answer has no kubeletconfig")

// ParseConfigz reads the cgroup settings from the body of the kubelet's GET /configz
// ({"kubeletconfig": {..., "cgroupRoot": "/x", "cgroupDriver": "systemd", ...}}). Unknown
// fields are ignored; a missing cgroupRoot is the kubelet's default, "/"; a body that is not
// such an object is an error.
func ParseConfigz(b []byte) (CgroupConfig, error) {
	var doc struct {
		KubeletConfig *struct {
			CgroupRoot   *string `json:"cgroupRoot"`
			CgroupDriver string  `json:"cgroupDriver"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return CgroupConfig{}, fmt.Errorf("decoding kubelet /configz: %w", err)
	}
	if doc.KubeletConfig == nil {
		return CgroupConfig{}, ErrNoCgroupConfig
	}
	cc := CgroupConfig{CgroupRoot: "/", CgroupDriver: doc.KubeletConfig.CgroupDriver}
	if r := doc.KubeletConfig.CgroupRoot; r != nil && *r != "" {
		cc.CgroupRoot = *r
	}
	return cc, nil
}

// CgroupConfig reads the kubelet's cgroupRoot and cgroupDriver from GET /configz. The kubelet
// authorizes the request as get on nodes/configz (nodes/proxy on kubelets without
// fine-grained authorization); errors carry their kind like Fetch's.
func (c *Client) CgroupConfig(ctx context.Context) (CgroupConfig, error) {
	body, err := c.get(ctx, c.base+"/configz")
	if err != nil {
		return CgroupConfig{}, err
	}
	return ParseConfigz(body)
}
