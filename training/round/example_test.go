package round_test

import (
	"fmt"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// A node with the one-step delay: round 0 closes after round 1's local work is done.
func Example() {
	theta := []training.Tensor{{Name: "w", Shape: []int{8, 8}, Data: make([]float64, 64)}}
	m, _ := round.New(round.Config{
		Self: "node-a", Weight: 1, Delay: 1, OuterLR: 0.7, Momentum: 0.9,
		Compress:  compress.Config{RankMax: 2, MinLowRank: 16, MaxShardBytes: compress.MinShardBytes},
		Aggregate: aggregate.Config{Method: aggregate.Mean},
	}, round.State{Params: theta})
	start, _ := m.Start()
	for r := uint64(0); r < 3; r++ {
		local := training.Tensor{Name: "w", Shape: []int{8, 8}, Data: make([]float64, 64)}
		for i := range local.Data { // stand-in for H inner steps from start.Params
			local.Data[i] = start.Params[0].Data[i] - 0.01*float64(i%8+1)
		}
		rd, _ := m.LocalDone(start.Round, []training.Tensor{local})
		fmt.Printf("round %d: send %d shard(s)\n", rd.Send.Round, len(rd.Send.Shards))
		for rd.Start == nil { // the previous round must close first
			next, _ := m.Closable()
			rd, _ = m.Close(next)
			fmt.Printf("closed round %d with %v\n", rd.Closed.Round, rd.Closed.Included)
		}
		start = *rd.Start
		fmt.Printf("local work for round %d\n", start.Round)
	}
	// Output:
	// round 0: send 1 shard(s)
	// local work for round 1
	// round 1: send 1 shard(s)
	// closed round 0 with [node-a]
	// local work for round 2
	// round 2: send 1 shard(s)
	// closed round 1 with [node-a]
	// local work for round 3
}
