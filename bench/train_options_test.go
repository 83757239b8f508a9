package bench

import (
	"strings"
	"testing"
)

// Momentum 0 is plain outer SGD, a setting of its own: filling defaults must keep it, in
// the dense and in the compressed modes.
func TestTrainOptionsKeepZeroMomentum(t *testing.T) {
	o := DefaultTrainOptions("fmnist")
	o.Momentum, o.CompressOuterLR, o.CompressMomentum = 0, 1, 0
	o.fill()
	if o.Momentum != 0 || o.CompressMomentum != 0 || o.CompressOuterLR != 1 {
		t.Fatalf("after fill: momentum %v, compressed modes %v / %v; want 0, 1 / 0", o.Momentum, o.CompressOuterLR, o.CompressMomentum)
	}
}

func TestTrainOptionsRefuseBadOuter(t *testing.T) {
	for _, mut := range []func(*TrainOptions){
		func(o *TrainOptions) { o.Momentum = 1 },
		func(o *TrainOptions) { o.CompressMomentum = -0.1 },
		func(o *TrainOptions) { o.OuterLR = -1 },
	} {
		o := DefaultTrainOptions("charlm")
		mut(&o)
		o.fill()
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), "outer") {
			t.Errorf("%+v: got %v", o, err)
		}
	}
}
