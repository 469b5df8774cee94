package app

import (
	"github.com/ballastk8s/ballast/pkg/control/understudy"
	"github.com/ballastk8s/ballast/pkg/control/understudy/doom"
)

// ComponentUnderstudy is the logger name of the Understudy controller and eviction webhook.
const ComponentUnderstudy = "understudy"

// understudy returns the Understudy settings from the flags.
func (o *Options) understudy() understudy.Options {
	return understudy.Options{OperatorNamespace: o.OperatorNamespace, MaxHold: o.UnderstudyMaxHold,
		Keys: doom.Keys{Voluntary: doom.ParseKeys(o.UnderstudyDoomTaints), Involuntary: doom.ParseKeys(o.UnderstudyInvoluntaryTaints)}}
}
