package node

import (
	"testing"
)

var n *Node

func TestMain(m *testing.M) { Main(m, &n) }
