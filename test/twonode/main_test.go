package twonode

import (
	"testing"

	"github.com/ballastk8s/ballast/test/node"
)

var n *node.Node

func TestMain(m *testing.M) { node.MainWith(m, &n, node.Options{Nodes: 2}) }
