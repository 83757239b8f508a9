package compress_test

import (
	"fmt"
	"math"

	"github.com/lowband/lowband/training/compress"
)

// A worker encodes its pseudo-gradient and cuts it into shards; a receiver checks each shard
// on its own, joins them and decodes.
func Example() {
	enc, err := compress.NewEncoder(compress.Config{RankMin: 4, RankMax: 4, MinLowRank: 64, MaxShardBytes: compress.MinShardBytes})
	if err != nil {
		panic(err)
	}
	w := compress.Tensor{Name: "w", Shape: []int{300, 200}, Data: make([]float64, 300*200)}
	b := compress.Tensor{Name: "b", Shape: []int{5000}, Data: make([]float64, 5000)}
	for i := range w.Data {
		w.Data[i] = math.Sin(float64(i % 200)) // rank 1
	}
	for i := range b.Data {
		b.Data[i] = 0.01
	}
	msg, err := enc.Encode([]compress.Tensor{w, b})
	if err != nil {
		panic(err)
	}
	shards, err := msg.Shards()
	if err != nil {
		panic(err)
	}
	shapes := map[string][]int{"w": w.Shape, "b": b.Shape}
	var parts []*compress.Message
	for _, s := range shards {
		if err := compress.CheckShard(s.Data, shapes, 1e6, compress.DefaultLimits); err != nil {
			panic(err)
		}
		p, err := compress.DecodeShard(s.Data, compress.DefaultLimits)
		if err != nil {
			panic(err)
		}
		parts = append(parts, p)
	}
	joined, err := compress.Join(parts)
	if err != nil {
		panic(err)
	}
	out, err := joined.Decode()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(shards), "shards;", out[0].Name, out[0].Shape, out[1].Name, out[1].Shape)
	var diff, total float64
	for i, v := range w.Data {
		diff += (out[0].Data[i] - v) * (out[0].Data[i] - v)
		total += v * v
	}
	fmt.Printf("w: relative error %.2f; b[0] = %.4f\n", math.Sqrt(diff/total), out[1].Data[0])
	// Output:
	// 3 shards; w [300 200] b [5000]
	// w: relative error 0.06; b[0] = 0.0100
}
